// dma_test.cpp - the bulk path's copy engine (nicfw/src/dma.*) in one process:
// the shared-memory allocator, and DmaEngine::move over its three ways of
// reaching the peer's memory (the same process: memcpy; a VipxAllocMem segment:
// mapped once, memcpy; anything else: process_vm_readv/writev), with gather and
// scatter lists whose piece boundaries do not line up, more pieces than one
// cross-memory-attach batch, and the failures a dead or lying peer produces.
#include <gtest/gtest.h>

#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "dma.hpp"

using namespace nicfw;

namespace {

constexpr int kMe = 0, kPeer = 1; // a "peer" rank that is really this process

void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(i * 31 + seed);
}

// The remote side: `n` pieces of uneven lengths covering [base, base+len).
std::vector<BulkSeg> remote_pieces(unsigned char *base, size_t len, size_t n, const ShmRef &shm = {}) {
    std::vector<BulkSeg> v;
    size_t off = 0;
    for (size_t i = 0; i < n; ++i) {
        const size_t part = i + 1 == n ? len - off : len / n + (i % 3) - 1;
        BulkSeg s{reinterpret_cast<uintptr_t>(base + off), 0, uint32_t(part), 0, -1, 0};
        if (shm.id) {
            s.shm_id = shm.id;
            s.shm_fd = shm.fd;
            s.shm_off = reinterpret_cast<uintptr_t>(base + off) - shm.base;
        }
        v.push_back(s);
        off += part;
    }
    return v;
}
std::vector<iovec> local_pieces(unsigned char *base, size_t len, size_t n) {
    std::vector<iovec> v;
    size_t off = 0;
    for (size_t i = 0; i < n; ++i) {
        const size_t part = i + 1 == n ? len - off : len / n + (i % 2);
        v.push_back(iovec{base + off, part});
        off += part;
    }
    return v;
}

struct Way {
    const char *name;
    int peer_rank;
    bool shm;
};
class DmaMove : public ::testing::TestWithParam<Way> {};

TEST_P(DmaMove, PullAndPushWithMisalignedPieces) {
    const Way w = GetParam();
    DmaEngine dma(kMe);
    if (!w.shm && w.peer_rank != kMe && !dma.cma_ok()) GTEST_SKIP() << "cross-memory attach not permitted here";
    const size_t len = 300001;
    void *rp = shared_memory().alloc(len + 64);
    ASSERT_NE(rp, nullptr);
    auto *remote = static_cast<unsigned char *>(rp) + 3; // unaligned
    const ShmRef shm = w.shm ? shared_memory().find(remote, len) : ShmRef{};
    if (w.shm) { ASSERT_NE(shm.id, 0u); }
    std::vector<unsigned char> local(len + 64);
    for (size_t nr : {size_t(1), size_t(7), size_t(200)}) { // 200: more than one CMA batch
        for (size_t nl : {size_t(1), size_t(5), size_t(130)}) {
            SCOPED_TRACE(::testing::Message() << w.name << " remote pieces " << nr << " local pieces " << nl);
            auto rs = remote_pieces(remote, len, nr, shm);
            auto ls = local_pieces(local.data() + 1, len, nl);
            // pull: remote -> local
            fill(remote, len, unsigned(nr + nl));
            std::memset(local.data(), 0xEE, local.size());
            ASSERT_EQ(dma.move(true, w.peer_rank, dma.pid(), rs.data(), uint32_t(rs.size()), ls.data(),
                               uint32_t(ls.size()), len),
                      0);
            ASSERT_EQ(std::memcmp(local.data() + 1, remote, len), 0);
            EXPECT_EQ(local[0], 0xEE);
            EXPECT_EQ(local[len + 1], 0xEE);
            // push: local -> remote
            fill(local.data() + 1, len, unsigned(7 * nr + nl));
            ASSERT_EQ(dma.move(false, w.peer_rank, dma.pid(), rs.data(), uint32_t(rs.size()), ls.data(),
                               uint32_t(ls.size()), len),
                      0);
            ASSERT_EQ(std::memcmp(local.data() + 1, remote, len), 0);
        }
    }
    EXPECT_TRUE(shared_memory().free(rp));
}

INSTANTIATE_TEST_SUITE_P(Ways, DmaMove,
                         ::testing::Values(Way{"same process", kMe, false}, Way{"shared memory", kPeer, true},
                                           Way{"cross-memory attach", kPeer, false}),
                         [](const auto &i) {
                             return std::string(i.param.shm                    ? "SharedMemory"
                                                    : i.param.peer_rank == kMe ? "SameProcess"
                                                                               : "CrossMemoryAttach");
                         });

TEST(Dma, ListsShorterThanAnnouncedAreRefused) {
    DmaEngine dma(kMe);
    unsigned char a[64], b[64];
    BulkSeg r{reinterpret_cast<uintptr_t>(a), 0, 32, 0, -1, 0};
    iovec l{b, 64};
    EXPECT_EQ(dma.move(true, kMe, dma.pid(), &r, 1, &l, 1, 64), EINVAL);
}

TEST(Dma, AGoneOrLyingPeerIsAnErrorNotACrash) {
    DmaEngine dma(kMe);
    if (!dma.cma_ok()) GTEST_SKIP() << "cross-memory attach not permitted here";
    std::vector<unsigned char> buf(8192);
    iovec l{buf.data(), buf.size()};
    // An address that is not mapped in the peer: EFAULT.
    BulkSeg bad{0x10, 0, 8192, 0, -1, 0};
    EXPECT_EQ(dma.move(true, kPeer, dma.pid(), &bad, 1, &l, 1, 8192), EFAULT);
    // A process that exited: ESRCH.
    const pid_t child = fork();
    if (child == 0) _exit(0);
    ASSERT_GT(child, 0);
    waitpid(child, nullptr, 0);
    BulkSeg gone{reinterpret_cast<uintptr_t>(buf.data()), 0, 8192, 0, -1, 0};
    EXPECT_EQ(dma.move(true, kPeer, uint32_t(child), &gone, 1, &l, 1, 8192), ESRCH);
    // A segment id whose fd is not that segment (freed, fd reused): refused.
    void *p = shared_memory().alloc(8192);
    ASSERT_NE(p, nullptr);
    ShmRef s = shared_memory().find(p, 8192);
    BulkSeg lie{reinterpret_cast<uintptr_t>(p), 0, 8192, s.id + 1000, s.fd, 0};
    EXPECT_NE(dma.move(true, kPeer, dma.pid(), &lie, 1, &l, 1, 8192), 0);
    // An offset past the segment's end: refused, nothing read.
    BulkSeg past{reinterpret_cast<uintptr_t>(p), 4096, 8192, s.id, s.fd, 0};
    EXPECT_EQ(dma.move(true, kPeer, dma.pid(), &past, 1, &l, 1, 8192), EFAULT);
    EXPECT_TRUE(shared_memory().free(p));
}

TEST(SharedMemory, AllocFindFree) {
    SharedMemory m;
    void *p = m.alloc(10000);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
    const auto *b = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < 10000; ++i) ASSERT_EQ(b[i], 0);
    const ShmRef r = m.find(static_cast<char *>(p) + 100, 9000);
    EXPECT_NE(r.id, 0u);
    EXPECT_EQ(r.base, reinterpret_cast<uintptr_t>(p));
    EXPECT_EQ(m.find(static_cast<char *>(p) + 100, 20000).id, 0u) << "a range running past the segment";
    void *q = m.alloc(1);
    ASSERT_NE(q, nullptr);
    EXPECT_NE(m.find(q, 1).id, r.id) << "ids are never shared";
    EXPECT_FALSE(m.free(static_cast<char *>(p) + 4096)) << "not the start of a segment";
    EXPECT_TRUE(m.free(p));
    EXPECT_FALSE(m.free(p)) << "freed twice";
    EXPECT_EQ(m.find(p, 1).id, 0u);
    EXPECT_TRUE(m.free(q));
    EXPECT_EQ(m.alloc(0), nullptr);
}

} // namespace
