// test_ops.cpp - every Split-C memory operation at every scalar size, for
// structs, and for bulk sizes up to and past the maximum message size.  Each
// processor works on its right neighbour (MYPROC+1) so that with 2+ processes
// everything crosses the network and with 1 everything is local.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "splitc/splitc.hpp"

using namespace splitc;

namespace {

int right() { return (myproc() + 1) % procs(); }
int left() { return (myproc() + procs() - 1) % procs(); }

// Distinct values per (processor, index) for every tested type.
template <class T>
T make(int proc, int i) {
    return T((proc + 1) * 37 + i * 11 + 1);
}
template <>
float make<float>(int proc, int i) {
    return float(proc) + float(i) * 0.25f + 0.125f;
}
template <>
double make<double>(int proc, int i) {
    return double(proc) * 1e6 + double(i) / 3.0;
}
template <>
global_ptr<int> make<global_ptr<int>>(int proc, int i) {
    return global_ptr<int>(proc, reinterpret_cast<int *>(uintptr_t(0x10000 + 8 * i)));
}

constexpr int kCells = 24;

template <class T>
class ScalarOps : public ::testing::Test {};
using ScalarTypes = ::testing::Types<uint8_t, int8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, long, float,
                                     double, global_ptr<int>>;
TYPED_TEST_SUITE(ScalarOps, ScalarTypes);

TYPED_TEST(ScalarOps, ReadAndWrite) {
    using T = TypeParam;
    spread_ptr<T> cells = all_spread_malloc<T>(size_t(procs()), kCells);
    T *mine = (cells + myproc()).local();
    for (int i = 0; i < kCells; ++i) mine[i] = make<T>(myproc(), i);
    barrier();
    global_ptr<T> r = (cells + right()).to_global();
    for (int i = 0; i < kCells; ++i) EXPECT_TRUE(read(r + i) == make<T>(right(), i)) << "index " << i;
    for (int i = 0; i < kCells; ++i) EXPECT_TRUE(T(r[i]) == make<T>(right(), i)) << "proxy read " << i;
    barrier();
    for (int i = 0; i < kCells; i += 2) write(r + i, make<T>(myproc() + 100, i));
    for (int i = 1; i < kCells; i += 2) r[i] = make<T>(myproc() + 100, i); // proxy write
    barrier();
    for (int i = 0; i < kCells; ++i) EXPECT_TRUE(mine[i] == make<T>(left() + 100, i)) << "index " << i;
    barrier();
    all_spread_free(cells);
}

TYPED_TEST(ScalarOps, GetAndPutCompleteAtSync) {
    using T = TypeParam;
    spread_ptr<T> cells = all_spread_malloc<T>(size_t(procs()), kCells);
    T *mine = (cells + myproc()).local();
    for (int i = 0; i < kCells; ++i) mine[i] = make<T>(myproc(), i);
    barrier();
    global_ptr<T> r = (cells + right()).to_global();
    T got[kCells];
    for (int i = 0; i < kCells; ++i) get(got[i], r + i);
    splitc::sync();
    for (int i = 0; i < kCells; ++i) EXPECT_TRUE(got[i] == make<T>(right(), i)) << "index " << i;
    barrier();
    for (int i = 0; i < kCells; ++i) put(r + i, make<T>(myproc() + 200, i));
    splitc::sync();
    barrier();
    for (int i = 0; i < kCells; ++i) EXPECT_TRUE(mine[i] == make<T>(left() + 200, i)) << "index " << i;
    barrier();
    all_spread_free(cells);
}

TYPED_TEST(ScalarOps, StoreCountedAtTarget) {
    using T = TypeParam;
    spread_ptr<T> cells = all_spread_malloc<T>(size_t(procs()), kCells);
    T *mine = (cells + myproc()).local();
    global_ptr<T> r = (cells + right()).to_global();
    for (int i = 0; i < kCells; ++i) store(r + i, make<T>(myproc() + 300, i));
    // No barrier: the target knows from the byte count alone.
    store_sync(kCells * sizeof(T));
    for (int i = 0; i < kCells; ++i) EXPECT_TRUE(mine[i] == make<T>(left() + 300, i)) << "index " << i;
    barrier();
    all_spread_free(cells);
}

// ---- structs ------------------------------------------------------------------
struct S3 {
    char c[3];
};
struct S12 {
    int32_t a, b, c;
};
struct S24 {
    double x;
    int64_t y;
    char z[8];
};
struct Big {
    uint32_t w[1200];
}; // 4800 bytes: more than one message

template <class T>
T make_struct(int proc, int salt) {
    T v;
    auto *b = reinterpret_cast<unsigned char *>(&v);
    for (size_t i = 0; i < sizeof v; ++i) b[i] = (unsigned char)(proc * 31 + salt * 7 + int(i) * 13 + 1);
    return v;
}
template <class T>
bool same(const T &a, const T &b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

template <class T>
class StructOps : public ::testing::Test {};
using StructTypes = ::testing::Types<S3, S12, S24, Big>;
TYPED_TEST_SUITE(StructOps, StructTypes);

TYPED_TEST(StructOps, AllOperations) {
    using T = TypeParam;
    spread_ptr<T> cells = all_spread_malloc<T>(size_t(procs()), 4);
    T *mine = (cells + myproc()).local();
    mine[0] = make_struct<T>(myproc(), 0);
    barrier();
    global_ptr<T> r = (cells + right()).to_global();
    EXPECT_TRUE(same(read(r), make_struct<T>(right(), 0))) << "read";
    T v = *r; // proxy
    EXPECT_TRUE(same(v, make_struct<T>(right(), 0))) << "proxy read";
    T g;
    get(g, r);
    splitc::sync();
    EXPECT_TRUE(same(g, make_struct<T>(right(), 0))) << "get";
    write(r + 1, make_struct<T>(myproc(), 1));
    put(r + 2, make_struct<T>(myproc(), 2));
    splitc::sync();
    store(r + 3, make_struct<T>(myproc(), 3));
    store_sync(sizeof(T));
    barrier();
    EXPECT_TRUE(same(mine[1], make_struct<T>(left(), 1))) << "write";
    EXPECT_TRUE(same(mine[2], make_struct<T>(left(), 2))) << "put";
    EXPECT_TRUE(same(mine[3], make_struct<T>(left(), 3))) << "store";
    barrier();
    all_spread_free(cells);
}

// ---- bulk ---------------------------------------------------------------------------
class BulkOps : public ::testing::TestWithParam<size_t> {
protected:
    static unsigned char byte(int proc, size_t i, int salt) {
        return (unsigned char)(proc * 29 + salt * 5 + i * 7 + 3);
    }
};

// Areas: [guard 64][data n][guard 64] at an odd offset, so misaligned starts
// and overruns both show.
TEST_P(BulkOps, EveryFormMovesExactlyTheBytes) {
    const size_t n = GetParam();
    const size_t area = n + 256;
    const unsigned char kGuard = 0xA5;
    spread_ptr<unsigned char> mem = all_spread_malloc<unsigned char>(size_t(procs()), 4 * area);
    unsigned char *mine = (mem + myproc()).local();
    global_ptr<unsigned char> r = (mem + right()).to_global();
    // region 0: source for reads/gets; regions 1..3: write/put/store targets
    std::memset(mine, kGuard, 4 * area);
    for (size_t i = 0; i < n; ++i) mine[65 + i] = byte(myproc(), i, 0);
    barrier();

    std::vector<unsigned char> buf(n + 2, kGuard);
    bulk_read(buf.data() + 1, r + 65, n);
    bool ok = buf[0] == kGuard && buf[n + 1] == kGuard;
    for (size_t i = 0; i < n && ok; ++i) ok = buf[i + 1] == byte(right(), i, 0);
    EXPECT_TRUE(ok) << "bulk_read of " << n;

    std::fill(buf.begin(), buf.end(), kGuard);
    bulk_get(buf.data() + 1, r + 65, n);
    splitc::sync();
    ok = buf[0] == kGuard && buf[n + 1] == kGuard;
    for (size_t i = 0; i < n && ok; ++i) ok = buf[i + 1] == byte(right(), i, 0);
    EXPECT_TRUE(ok) << "bulk_get of " << n;

    // write from unregistered memory (copied into messages)
    std::vector<unsigned char> src(n);
    for (size_t i = 0; i < n; ++i) src[i] = byte(myproc(), i, 1);
    bulk_write(r + ptrdiff_t(area + 65), src.data(), n);
    // put and store from registered memory (sent by gather descriptors)
    unsigned char *reg = mine + 65; // region 0 of my own block
    bulk_put(r + ptrdiff_t(2 * area + 65), reg, n);
    splitc::sync();
    bulk_store(r + ptrdiff_t(3 * area + 65), reg, n);
    store_sync(n);
    barrier();
    for (int region = 1; region <= 3; ++region) {
        const unsigned char *d = mine + size_t(region) * area;
        bool good = true;
        for (size_t i = 0; i < 65 && good; ++i) good = d[i] == kGuard;
        for (size_t i = 65 + n; i < area && good; ++i) good = d[i] == kGuard;
        for (size_t i = 0; i < n && good; ++i) good = d[65 + i] == byte(left(), i, region == 1 ? 1 : 0);
        EXPECT_TRUE(good) << "region " << region << " (1 write, 2 put, 3 store) of " << n << " bytes";
    }
    barrier();
    all_spread_free(mem);
}

INSTANTIATE_TEST_SUITE_P(Sizes, BulkOps,
                         ::testing::Values(size_t(1), size_t(7), size_t(8), size_t(100), size_t(127), size_t(128),
                                           size_t(129), size_t(1000), size_t(4079), size_t(4080), size_t(4081),
                                           size_t(12245), size_t(70001)));

// Across the RDMA crossover (splitc_rdma_min(); 1 byte below, at, above) and
// at 1 MiB, every form from and into memory the runtime did not register (the
// registration cache) and into/out of the heap, at odd offsets on both sides,
// with guard bytes around every target.
TEST(BulkOps, RdmaCrossoverMovesExactlyTheBytes) {
    const size_t rm = splitc_rdma_min();
    std::vector<size_t> sizes{size_t(1) << 20, (size_t(1) << 20) + 3};
    if (rm) sizes.insert(sizes.begin(), {rm - 1, rm, rm + 1});
    const unsigned char kGuard = 0x5A;
    auto byte = [](int proc, size_t i, int salt) { return (unsigned char)(proc * 31 + salt * 11 + i * 13 + 1); };
    for (size_t n : sizes) {
        const size_t area = n + 256;
        spread_ptr<unsigned char> mem = all_spread_malloc<unsigned char>(size_t(procs()), 6 * area);
        unsigned char *mine = (mem + myproc()).local();
        global_ptr<unsigned char> r = (mem + right()).to_global();
        std::memset(mine, kGuard, 6 * area);
        for (size_t i = 0; i < n; ++i) mine[67 + i] = byte(myproc(), i, 0); // region 0: read source
        barrier();
        // get/read into unregistered memory, and get into the heap (region 5)
        std::vector<unsigned char> buf(n + 8, kGuard);
        bulk_get(buf.data() + 3, r + 67, n);
        splitc::sync();
        bool ok = buf[2] == kGuard && buf[n + 3] == kGuard;
        for (size_t i = 0; i < n && ok; ++i) ok = buf[i + 3] == byte(right(), i, 0);
        EXPECT_TRUE(ok) << "bulk_get into unregistered memory, " << n << " bytes";
        std::fill(buf.begin(), buf.end(), kGuard);
        bulk_read(buf.data() + 5, r + 67, n);
        ok = buf[4] == kGuard && buf[n + 5] == kGuard;
        for (size_t i = 0; i < n && ok; ++i) ok = buf[i + 5] == byte(right(), i, 0);
        EXPECT_TRUE(ok) << "bulk_read, " << n << " bytes";
        unsigned char *heap_dst = mine + 5 * area + 65;
        bulk_get(heap_dst, r + 67, n);
        splitc::sync();
        ok = heap_dst[-1] == kGuard && heap_dst[n] == kGuard;
        for (size_t i = 0; i < n && ok; ++i) ok = heap_dst[i] == byte(right(), i, 0);
        EXPECT_TRUE(ok) << "bulk_get into the heap, " << n << " bytes";
        // write/put/store from unregistered memory (salts 1..3), put from the heap (salt 0)
        std::vector<unsigned char> src(n + 1);
        for (int region = 1; region <= 4; ++region) {
            for (size_t i = 0; i < n; ++i) src[i + 1] = byte(myproc(), i, region == 4 ? 0 : region);
            global_ptr<unsigned char> d = r + ptrdiff_t(size_t(region) * area + 65);
            if (region == 1) bulk_write(d, src.data() + 1, n);
            if (region == 2) bulk_put(d, src.data() + 1, n);
            if (region == 3) bulk_store(d, src.data() + 1, n);
            if (region == 4) bulk_put(d, mine + 67, n);
            // The source is the caller's again after sync (put) or the call (write, store).
            splitc::sync();
            std::fill(src.begin(), src.end(), 0);
        }
        store_sync(n);
        barrier();
        for (int region = 1; region <= 4; ++region) {
            const unsigned char *d = mine + size_t(region) * area;
            bool good = true;
            for (size_t i = 0; i < 65 && good; ++i) good = d[i] == kGuard;
            for (size_t i = 65 + n; i < area && good; ++i) good = d[i] == kGuard;
            for (size_t i = 0; i < n && good; ++i) good = d[65 + i] == byte(left(), i, region == 4 ? 0 : region);
            EXPECT_TRUE(good) << "region " << region << " (1 write, 2 put, 3 store, 4 put from the heap) of " << n
                              << " bytes, RDMA from " << rm;
        }
        barrier();
        all_spread_free(mem);
    }
}

// Many bulk puts, to every other processor, completed by one sync: the
// RDMA-written ones are confirmed by one acknowledged request per peer behind
// all of them (rt_bulk.cpp, confirm_puts), not one per put.  After that sync
// each source is overwritten at once (a put whose bytes the target had not yet
// taken would deliver the overwrite), and after a barrier every target, and
// a third processor reading through the network, must see exactly the bytes
// put: sizes 1 byte below, at and above splitc_rdma_min() and 3x it, odd
// offsets, from the heap and from unregistered memory, to every peer before
// one sync; once with the targets away from the runtime meanwhile.
TEST(BulkOps, PutStreamsCompleteAtOneSync) {
    const size_t rm = splitc_rdma_min() ? splitc_rdma_min() : 16384;
    const std::vector<size_t> sizes{rm - 1, rm, rm + 1, 3 * rm + 5};
    const int p = procs(), me = myproc();
    auto byte = [](int from, int round, size_t k, size_t i) {
        return (unsigned char)(from * 29 + round * 7 + k * 17 + i * 13 + 5);
    };
    size_t slot = 0; // bytes per (sender, size) slot: the largest size plus guards
    for (size_t n : sizes) slot = std::max(slot, n + 64);
    const size_t block = slot * sizes.size() * size_t(p);
    spread_ptr<unsigned char> mem = all_spread_malloc<unsigned char>(size_t(p), 2 * block);
    unsigned char *mine = (mem + me).local(); // [0, block): received; [block, 2 block): heap sources
    const unsigned char kGuard = 0xA5;
    for (int round = 0; round < 3; ++round) {
        std::memset(mine, kGuard, block);
        std::vector<std::vector<unsigned char>> plain; // unregistered sources, kept until sync
        plain.reserve(sizes.size() * size_t(p));
        barrier();
        // Round 1: odd processors stay out of the runtime for a while first, so
        // (with the firmware inline) their NIC takes nothing meanwhile, and the
        // streams carry RDMA-sized puts only (a message put's acknowledgement
        // would confirm the RDMA writes before it by itself): a sync towards
        // them that returned before they took the bytes would let the
        // overwrite below reach them.
        const bool away = round == 1;
        if (away && me % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        for (int d = 1; d < p; ++d) { // every other processor, nearest first
            const int to = (me + d) % p;
            for (size_t k = away ? 1 : 0; k < sizes.size(); ++k) {
                const size_t n = sizes[k];
                const size_t at = (size_t(me) * sizes.size() + k) * slot + 33; // odd offset at the target
                global_ptr<unsigned char> dst = (mem + to).to_global() + ptrdiff_t(at);
                // Alternately from unregistered memory and from the heap.
                unsigned char *src;
                if ((k + size_t(d)) % 2 == 0) {
                    plain.emplace_back(n + 3);
                    src = plain.back().data() + 3;
                } else {
                    src = mine + block + (size_t(to) * sizes.size() + k) * slot + 1;
                }
                for (size_t i = 0; i < n; ++i) src[i] = byte(me, round, k, i);
                bulk_put(dst, src, n);
            }
        }
        splitc::sync();
        for (auto &b : plain) std::fill(b.begin(), b.end(), 0); // the sources are ours again
        std::memset(mine + block, 0, block);
        barrier();
        for (int from = 0; from < p; ++from) {
            if (from == me) continue;
            for (size_t k = away ? 1 : 0; k < sizes.size(); ++k) {
                const size_t n = sizes[k], at = (size_t(from) * sizes.size() + k) * slot + 33;
                bool ok = mine[at - 1] == kGuard && mine[at + n] == kGuard;
                for (size_t i = 0; i < n && ok; ++i) ok = mine[at + i] == byte(from, round, k, i);
                EXPECT_TRUE(ok) << "round " << round << ": " << n << " bytes put by processor " << from
                                << " (RDMA from " << splitc_rdma_min() << ")";
            }
        }
        // A third processor sees the bytes too: read the right neighbour's
        // copy of what its right neighbour put there.
        if (p >= 3) {
            const int target = right(), from = (target + 1) % p;
            const size_t k = sizes.size() - 1, n = sizes[k], at = (size_t(from) * sizes.size() + k) * slot + 33;
            std::vector<unsigned char> got(n);
            bulk_read(got.data(), (mem + target).to_global() + ptrdiff_t(at), n);
            bool ok = true;
            for (size_t i = 0; i < n && ok; ++i) ok = got[i] == byte(from, round, k, i);
            EXPECT_TRUE(ok) << "round " << round << ": processor " << me << " reading what " << from << " put on "
                            << target;
        }
        barrier();
    }
    all_spread_free(mem);
}

TEST(BulkOps, FragmentBoundariesFollowMaxPayload) {
    const size_t mp = splitc_max_payload();
    EXPECT_GE(mp, size_t(200));
    std::vector<unsigned char> src(3 * mp + 5);
    for (size_t i = 0; i < src.size(); ++i) src[i] = (unsigned char)(i * 3 + myproc());
    spread_ptr<unsigned char> mem = all_spread_malloc<unsigned char>(size_t(procs()), src.size());
    for (size_t n : {mp - 1, mp, mp + 1, 3 * mp + 5}) {
        barrier();
        bulk_store((mem + right()).to_global(), src.data(), n);
        store_sync(n);
        const unsigned char *d = (mem + myproc()).local();
        bool ok = true;
        for (size_t i = 0; i < n && ok; ++i) ok = d[i] == (unsigned char)(i * 3 + left());
        EXPECT_TRUE(ok) << n << " bytes, max payload " << mp;
    }
    barrier();
    all_spread_free(mem);
}

} // namespace
