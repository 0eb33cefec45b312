// test_store_coll.cpp - store counting (store_sync, reset_store_sync,
// all_store_sync) with many concurrent storers, the collectives, and static
// data (registered statics and plain globals of a non-PIE binary).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "splitc/splitc.hpp"

using namespace splitc;

namespace {

int right() { return (myproc() + 1) % procs(); }
int left() { return (myproc() + procs() - 1) % procs(); }

TEST(Store, ManyConcurrentStorersCountedByStoreSync) {
    const int P = procs(), K = 40;
    // inbox block q: slot [sender][k]
    spread_ptr<int> inbox = all_spread_malloc<int>(size_t(P), size_t(P * K));
    for (int k = 0; k < K; ++k)
        for (int d = 0; d < P; ++d) {
            int q = (myproc() + d) % P; // spread the order so targets interleave
            store((inbox + q).to_global() + (myproc() * K + k), myproc() * 100000 + q * 100 + k);
        }
    store_sync(size_t(P) * K * sizeof(int));
    EXPECT_EQ(splitc_store_bytes_arrived(), 0);
    const int *mine = (inbox + myproc()).local();
    for (int s = 0; s < P; ++s)
        for (int k = 0; k < K; ++k) EXPECT_EQ(mine[s * K + k], s * 100000 + myproc() * 100 + k) << "from " << s;
    barrier();
    all_spread_free(inbox);
}

TEST(Store, StoreSyncSubtractsAndResetClears) {
    spread_ptr<long> cell = all_spread_malloc<long>(size_t(procs()), 4);
    global_ptr<long> r = (cell + right()).to_global();
    store(r, 1L);
    store(r + 1, 2L);
    store_sync(8); // at least one of them
    store_sync(8); // and the other
    EXPECT_EQ(splitc_store_bytes_arrived(), 0);
    barrier(); // nobody sends the next store before everyone checked
    store(r + 2, 3L);
    // Wait until it arrived without consuming it, then reset.
    while (splitc_store_bytes_arrived() < 8) poll();
    reset_store_sync();
    EXPECT_EQ(splitc_store_bytes_arrived(), 0);
    const long *mine = (cell + myproc()).local();
    EXPECT_EQ(mine[0], 1);
    EXPECT_EQ(mine[1], 2);
    EXPECT_EQ(mine[2], 3);
    barrier();
    all_spread_free(cell);
}

// Uneven traffic: processor p stores (p + 1) * (t + 3) longs into target t,
// mixing scalar and bulk stores; only all_store_sync tells everyone it is done.
TEST(Store, AllStoreSyncWaitsForEveryStoreInTheMachine) {
    const int P = procs();
    const size_t cap = size_t(P + 1) * size_t(P + 3);
    spread_ptr<long> box = all_spread_malloc<long>(size_t(P), size_t(P) * cap);
    for (int t = 0; t < P; ++t) {
        size_t cnt = size_t(myproc() + 1) * size_t(t + 3);
        global_ptr<long> dst = (box + t).to_global() + ptrdiff_t(size_t(myproc()) * cap);
        std::vector<long> vals(cnt);
        for (size_t i = 0; i < cnt; ++i) vals[i] = long(myproc()) * 1000000 + t * 1000 + long(i);
        size_t half = cnt / 2;
        for (size_t i = 0; i < half; ++i) store(dst + ptrdiff_t(i), vals[i]);
        bulk_store(dst + ptrdiff_t(half), vals.data() + half, cnt - half);
    }
    all_store_sync();
    const long *mine = (box + myproc()).local();
    for (int s = 0; s < P; ++s) {
        size_t cnt = size_t(s + 1) * size_t(myproc() + 3);
        bool ok = true;
        for (size_t i = 0; i < cnt && ok; ++i)
            ok = mine[size_t(s) * cap + i] == long(s) * 1000000 + myproc() * 1000 + long(i);
        EXPECT_TRUE(ok) << "stores from " << s;
    }
    EXPECT_EQ(splitc_store_bytes_arrived(), 0);
    all_store_sync(); // with nothing outstanding it still returns
    barrier();
    all_spread_free(box);
}

// Stores return their credits in batches (one STORE_ACK per
// splitc_store_ack_interval() stores): counts and store_sync must hold when a
// stream ends one store past a batch, one short of it, and exactly on it, and
// the credits of a part-filled batch must come back (the next stream would
// otherwise stall for ever).  Each processor streams to its right neighbour.
TEST(Store, CountsHoldAcrossStoreAckBatchBoundaries) {
    const int every = splitc_store_ack_interval();
    ASSERT_GE(every, 1);
    EXPECT_EQ(every, std::max(1, splitc_credits() / 2));
    const int lens[] = {3 * every + 1, every - 1, every, 2 * splitc_credits() + 1};
    int most = 0;
    for (int n : lens) most = std::max(most, n);
    spread_ptr<long> box = all_spread_malloc<long>(size_t(procs()), size_t(most));
    global_ptr<long> r = (box + right()).to_global();
    const long *mine = (box + myproc()).local();
    long tag = 0;
    for (int n : lens) {
        ++tag;
        for (int i = 0; i < n; ++i) store(r + i, tag << 32 | long(myproc()) << 16 | i);
        // Exactly the left neighbour's n stores: no more, no fewer.
        store_sync(size_t(n) * sizeof(long));
        EXPECT_EQ(splitc_store_bytes_arrived(), 0) << "stream of " << n;
        bool ok = true;
        for (int i = 0; i < n && ok; ++i) ok = mine[i] == (tag << 32 | long(left()) << 16 | i);
        EXPECT_TRUE(ok) << "stream of " << n << " stores (a STORE_ACK every " << every << ")";
        barrier(); // everyone checked before the next stream overwrites
    }
    all_store_sync();
    EXPECT_EQ(splitc_store_bytes_arrived(), 0);
    barrier();
    all_spread_free(box);
}

TEST(Store, ManyToOneFloodWithStoreAcks) {
    const int P = procs(), K = 300;
    spread_ptr<long> box = all_spread_malloc<long>(size_t(P), size_t(P * K));
    global_ptr<long> root = box.to_global();
    for (int k = 0; k < K; ++k) store(root + (myproc() * K + k), long(myproc()) << 32 | k);
    all_store_sync();
    if (on_one()) {
        const long *m = box.local();
        for (int s = 0; s < P; ++s)
            for (int k = 0; k < K; ++k) ASSERT_EQ(m[s * K + k], long(s) << 32 | k) << s << " " << k;
    }
    barrier();
    all_spread_free(box);
}

TEST(Collectives, Reductions) {
    const long P = procs(), me = myproc();
    const long sum = P * (P - 1) / 2;
    EXPECT_EQ(all_reduce_to_all_add(me), sum);
    EXPECT_EQ(all_reduce_to_all_max(me * 3 - 5), (P - 1) * 3 - 5);
    EXPECT_EQ(all_reduce_to_all_min(10 - me), 10 - (P - 1));
    EXPECT_EQ(all_reduce_to_all_add(-1L << 40), -P << 40);
    long one = all_reduce_to_one_add(me + 1);
    if (on_one()) { EXPECT_EQ(one, P * (P + 1) / 2); }
    one = all_reduce_to_one_max(me);
    if (on_one()) { EXPECT_EQ(one, P - 1); }
    one = all_reduce_to_one_min(me + 4);
    if (on_one()) { EXPECT_EQ(one, 4); }
    EXPECT_DOUBLE_EQ(all_reduce_to_all_dadd(0.5 * double(me)), 0.5 * double(sum));
    EXPECT_DOUBLE_EQ(all_reduce_to_all_dmax(-double(me) * 1.5), 0.0);
    EXPECT_DOUBLE_EQ(all_reduce_to_all_dmin(-double(me) * 1.5), -double(P - 1) * 1.5);
    double d1 = all_reduce_to_one_dadd(1.25), d2 = all_reduce_to_one_dmax(double(me)),
           d3 = all_reduce_to_one_dmin(double(me));
    if (on_one()) {
        EXPECT_DOUBLE_EQ(d1, 1.25 * double(P));
        EXPECT_DOUBLE_EQ(d2, double(P - 1));
        EXPECT_DOUBLE_EQ(d3, 0.0);
    }
    // Doubles are summed in processor order: the result is bit-identical everywhere.
    double odd = all_reduce_to_all_dadd(1.0 / double(me + 3));
    EXPECT_EQ(all_reduce_to_all_dmax(odd), odd);
    EXPECT_EQ(all_reduce_to_all_dmin(odd), odd);
    EXPECT_TRUE(std::isinf(all_reduce_to_all_dmax(me == 0 ? INFINITY : 1.0)));
}

TEST(Collectives, Broadcast) {
    EXPECT_EQ(all_bcast(myproc() == 0 ? 4242L : -long(myproc())), 4242L);
    EXPECT_DOUBLE_EQ(all_bcast_d(myproc() == 0 ? 2.5 : 0.0), 2.5);
}

TEST(Collectives, ManyInARowKeepTheirOrder) {
    for (long i = 0; i < 150; ++i) {
        ASSERT_EQ(all_reduce_to_all_add(i + myproc()), i * procs() + long(procs()) * (procs() - 1) / 2) << i;
        if (i % 3 == 0) barrier();
    }
}

TEST(Collectives, BarrierOrdersPutsBeforeIt) {
    spread_ptr<int> flags = all_spread_malloc<int>(size_t(procs()));
    for (int round = 1; round <= 5; ++round) {
        put((flags + right()).to_global(), round * 10 + myproc());
        splitc::sync();
        barrier();
        EXPECT_EQ(*(flags + myproc()).local(), round * 10 + left());
        barrier();
    }
    all_spread_free(flags);
}

TEST(Collectives, GetSecondsAdvances) {
    double a = get_seconds();
    barrier();
    double b = get_seconds();
    EXPECT_GE(b, a);
    EXPECT_GT(a, 0.0);
}

// ---- static data ----------------------------------------------------------------------
void *g_registered_static = nullptr;
__attribute__((constructor)) void register_static_for_test() { splitc_register_static(&g_registered_static, 256, 64); }
long g_plain_global[4];

TEST(StaticData, RegisteredStaticSitsAtOneAddressAndIsRemote) {
    ASSERT_NE(g_registered_static, nullptr);
    long a = long(uintptr_t(g_registered_static));
    EXPECT_EQ(all_reduce_to_all_max(a), a);
    EXPECT_EQ(all_reduce_to_all_min(a), a);
    long *cells = static_cast<long *>(g_registered_static);
    cells[0] = 77 + myproc();
    barrier();
    EXPECT_EQ(read(toglobal(right(), cells)), 77 + right());
    barrier();
}

TEST(StaticData, PlainGlobalsOfANonPieBinaryAreRemote) {
    g_plain_global[1] = 5000 + myproc();
    barrier();
    EXPECT_EQ(read(toglobal(right(), &g_plain_global[1])), 5000 + right());
    write(toglobal(right(), &g_plain_global[2]), long(myproc()));
    barrier();
    EXPECT_EQ(g_plain_global[2], left());
    barrier();
}

} // namespace
