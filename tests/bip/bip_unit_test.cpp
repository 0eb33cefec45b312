// bip_unit_test - BIP in a job of one: every message goes to this rank over
// the self-connection.  The eager/rendezvous switch (1 byte below, at and
// above bip_eager_max), order per tag with small and long messages mixed,
// the one-pending rule, truncation on both sides, a send blocking while the
// receiver's buffers are full and resuming when one is received, each bad
// input's error code, every threshold of the table crossed from and into
// unaligned heap and bip_alloc_mem buffers, and a receive buffer reused.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "bip.h"

namespace {

int g_not_init[5]; // calls made before bip_init (main)

uint8_t pattern(size_t i, unsigned seed) { return uint8_t((i * 131u + seed * 7u) ^ (i >> 8)); }
std::vector<uint8_t> make(size_t n, unsigned seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; i++) v[i] = pattern(i, seed);
    return v;
}

// A message to ourselves: the receive is posted first (a long send waits for it).
void roundtrip(size_t n, int tag, unsigned seed) {
    auto out = make(n, seed);
    std::vector<uint8_t> in(n + 8, 0xee);
    ASSERT_EQ(bip_irecv(tag, in.data(), in.size()), BIP_OK);
    ASSERT_EQ(bip_send(0, tag, out.data(), n), BIP_OK);
    size_t len = 0;
    ASSERT_EQ(bip_rwait(&len), 0);
    ASSERT_EQ(len, n);
    if (n) EXPECT_EQ(std::memcmp(in.data(), out.data(), n), 0); // (memcmp of an empty vector's null data is undefined)
    EXPECT_EQ(in[n], 0xee) << "bytes written past the message";
}

TEST(BipUnit, Job) {
    EXPECT_EQ(bip_mynode(), 0);
    EXPECT_EQ(bip_numnodes(), 1);
    for (int rc : g_not_init) EXPECT_EQ(rc, BIP_ERR_NOT_INIT);
}

TEST(BipUnit, EagerAndRendezvousAcrossTheThreshold) {
    const long e = bip_eager_max(0);
    ASSERT_GT(e, 1);
    const size_t sizes[] = {0, 1, size_t(e) - 1, size_t(e), size_t(e) + 1, 65536 + 3, 300000};
    unsigned seed = 1;
    for (size_t n : sizes) {
        const unsigned long long before = bip_rdma_bytes();
        roundtrip(n, 5, seed++);
        // Up to the threshold the bytes are copied; above it they are
        // RDMA-written into the posted buffer.
        EXPECT_EQ(bip_rdma_bytes() - before, long(n) > e ? n : 0) << n << " bytes";
    }
}

// As roundtrip, from src_off bytes into one buffer into dst_off bytes into
// another, with guard bytes on both sides of the receive; the buffers are
// src_mem / dst_mem when given (bip_alloc_mem memory), else heap vectors.
void roundtrip_at(size_t n, int tag, unsigned seed, size_t src_off, size_t dst_off, uint8_t *src_mem = nullptr,
                  uint8_t *dst_mem = nullptr) {
    std::vector<uint8_t> out_heap(src_mem ? 0 : n + src_off), in_heap(dst_mem ? 0 : n + dst_off + 64);
    uint8_t *out = (src_mem ? src_mem : out_heap.data()) + src_off;
    uint8_t *in = dst_mem ? dst_mem : in_heap.data();
    const size_t in_size = n + dst_off + 64;
    for (size_t i = 0; i < n; i++) out[i] = pattern(i, seed);
    std::memset(in, 0xee, in_size);
    ASSERT_EQ(bip_irecv(tag, in + dst_off, n), BIP_OK);
    ASSERT_EQ(bip_send(0, tag, out, n), BIP_OK);
    size_t len = 0;
    ASSERT_EQ(bip_rwait(&len), 0);
    ASSERT_EQ(len, n);
    for (size_t i = 0; i < dst_off; i++) ASSERT_EQ(in[i], 0xee) << "written before the buffer";
    if (n) EXPECT_EQ(std::memcmp(in + dst_off, out, n), 0) << n << " bytes";
    for (size_t i = dst_off + n; i < in_size; i++) ASSERT_EQ(in[i], 0xee) << "written past the message";
}

TEST(BipUnit, EveryThresholdCrossedUnaligned) {
    // The switch point and the fragment boundaries (bip_internal.hpp's
    // kThresholds): 1 byte below, at and above each, from and into
    // unaligned buffers.
    const size_t e = size_t(bip_eager_max(0));
    const size_t f = bip_fragment_size(4u << 20);
    ASSERT_GE(f, 4096u);
    EXPECT_EQ(bip_fragment_size(f + 1), f) << "one fragment size at every length (the table)";
    const size_t sizes[] = {e - 1, e, e + 1, f - 1, f, f + 1, 2 * f - 1, 2 * f, 2 * f + 1, 3 * f + 7};
    const size_t offs[][2] = {{0, 0}, {1, 3}, {7, 0}, {0, 5}};
    unsigned seed = 40;
    for (size_t n : sizes)
        for (auto &o : offs) {
            const unsigned long long before = bip_rdma_bytes();
            roundtrip_at(n, 6, seed++, o[0], o[1]);
            EXPECT_EQ(bip_rdma_bytes() - before, n > e ? n : 0) << n << " bytes";
        }
}

TEST(BipUnit, BuffersFromBipAllocMem) {
    // NIC memory on both sides (one memcpy per fragment on nicfw), and mixed
    // with heap memory, across the thresholds, unaligned.
    const size_t e = size_t(bip_eager_max(0)), f = bip_fragment_size(4u << 20);
    const size_t bytes = 2 * f + 128;
    auto *src = static_cast<uint8_t *>(bip_alloc_mem(bytes));
    auto *dst = static_cast<uint8_t *>(bip_alloc_mem(bytes));
    ASSERT_NE(src, nullptr);
    ASSERT_NE(dst, nullptr);
    const size_t sizes[] = {e - 1, e, e + 1, f - 1, f, f + 1, 2 * f + 1};
    unsigned seed = 300;
    for (size_t n : sizes) {
        const unsigned long long before = bip_rdma_bytes();
        roundtrip_at(n, 9, seed++, 1, 3, src, dst);
        EXPECT_EQ(bip_rdma_bytes() - before, n > e ? n : 0) << n << " bytes";
        roundtrip_at(n, 9, seed++, 0, 5, nullptr, dst);
        roundtrip_at(n, 9, seed++, 7, 0, src, nullptr);
    }
    EXPECT_EQ(bip_free_mem(src), BIP_OK);
    EXPECT_EQ(bip_free_mem(src), BIP_ERR_NULL_BUF) << "freed twice";
    EXPECT_EQ(bip_free_mem(dst), BIP_OK);
    // A new block, perhaps at the same address: no stale registration is used.
    dst = static_cast<uint8_t *>(bip_alloc_mem(bytes));
    ASSERT_NE(dst, nullptr);
    roundtrip_at(f + 1, 9, seed++, 0, 0, nullptr, dst);
    int x = 0;
    EXPECT_EQ(bip_free_mem(&x), BIP_ERR_NULL_BUF);
    EXPECT_EQ(bip_alloc_mem(0), nullptr);
    // dst is left to bip_finalize.
}

TEST(BipUnit, OneReceiveBufferReusedForManyLongMessages) {
    // Its registration is reused (cached where registering pins nothing):
    // every message still lands intact, shorter ones inside longer ones.
    const size_t e = size_t(bip_eager_max(0));
    std::vector<uint8_t> in(4 * e + 64);
    for (unsigned i = 0; i < 40; i++) {
        const size_t n = e + 1 + (i * 7919u) % (3 * e);
        auto out = make(n, 200 + i);
        std::memset(in.data(), 0xee, in.size());
        ASSERT_EQ(bip_irecv(8, in.data(), n), BIP_OK);
        ASSERT_EQ(bip_send(0, 8, out.data(), n), BIP_OK);
        size_t len = 0;
        ASSERT_EQ(bip_rwait(&len), 0);
        ASSERT_EQ(len, n);
        ASSERT_EQ(std::memcmp(in.data(), out.data(), n), 0) << "message " << i;
        ASSERT_EQ(in[n], 0xee) << "written past the message";
    }
}

TEST(BipUnit, NonBlockingTestReportsProgress) {
    const size_t n = size_t(bip_eager_max(0)) * 4 + 17; // long
    auto out = make(n, 9);
    std::vector<uint8_t> in(n);
    ASSERT_EQ(bip_isend(0, 7, out.data(), n), BIP_OK);
    // No receive posted: a long send cannot complete.
    for (int i = 0; i < 1000; i++) ASSERT_EQ(bip_stest(), 0);
    ASSERT_EQ(bip_irecv(7, in.data(), n), BIP_OK);
    int src = -1, done = 0;
    size_t len = 0;
    for (long i = 0; i < 10000000 && !done; i++) {
        done = bip_rtest(&src, &len);
        ASSERT_GE(done, 0);
    }
    ASSERT_EQ(done, 1);
    EXPECT_EQ(src, 0);
    EXPECT_EQ(len, n);
    EXPECT_EQ(bip_swait(), BIP_OK);
    EXPECT_EQ(in, out);
}

TEST(BipUnit, OrderPerTagWithSmallAndLongMixed) {
    const size_t e = size_t(bip_eager_max(0));
    // Tag 1: small, small; tag 2: small; tag 1: long (stays pending until received).
    auto a = make(10, 1), b = make(e, 2), c = make(3, 3), d = make(e + 100, 4);
    ASSERT_EQ(bip_send(0, 1, a.data(), a.size()), BIP_OK);
    ASSERT_EQ(bip_send(0, 2, c.data(), c.size()), BIP_OK);
    ASSERT_EQ(bip_send(0, 1, b.data(), b.size()), BIP_OK);
    ASSERT_EQ(bip_isend(0, 1, d.data(), d.size()), BIP_OK);
    std::vector<uint8_t> in(e + 200);
    size_t len;
    // Tag 2 first: messages of other tags do not stand in its way.
    ASSERT_EQ(bip_recv(2, in.data(), in.size(), &len), 0);
    EXPECT_EQ(len, c.size());
    EXPECT_EQ(0, std::memcmp(in.data(), c.data(), len));
    const std::vector<uint8_t> *want[] = {&a, &b, &d};
    for (auto *w : want) {
        ASSERT_EQ(bip_recv(1, in.data(), in.size(), &len), 0);
        ASSERT_EQ(len, w->size());
        EXPECT_EQ(0, std::memcmp(in.data(), w->data(), len));
    }
    EXPECT_EQ(bip_swait(), BIP_OK);
}

TEST(BipUnit, OnePendingSendAndOnePendingReceive) {
    const size_t n = size_t(bip_eager_max(0)) + 1; // long: pending until received
    auto out = make(n, 5);
    std::vector<uint8_t> in(n);
    ASSERT_EQ(bip_isend(0, 3, out.data(), n), BIP_OK);
    EXPECT_EQ(bip_isend(0, 4, out.data(), 1), BIP_ERR_PENDING);
    EXPECT_EQ(bip_send(0, 4, out.data(), 1), BIP_ERR_PENDING);
    EXPECT_EQ(bip_stest(), 0);
    EXPECT_EQ(bip_finalize(), BIP_ERR_STATE) << "finalize with a send pending";
    ASSERT_EQ(bip_irecv(3, in.data(), n), BIP_OK);
    EXPECT_EQ(bip_irecv(3, in.data(), n), BIP_ERR_PENDING);
    size_t len = 0;
    EXPECT_EQ(bip_recv(3, in.data(), n, &len), BIP_ERR_PENDING);
    EXPECT_EQ(bip_rwait(&len), 0);
    EXPECT_EQ(len, n);
    EXPECT_EQ(bip_swait(), BIP_OK);
    EXPECT_EQ(in, out);
    // Nothing pending any more.
    EXPECT_EQ(bip_stest(), BIP_ERR_NO_PENDING);
    EXPECT_EQ(bip_swait(), BIP_ERR_NO_PENDING);
    EXPECT_EQ(bip_rtest(nullptr, nullptr), BIP_ERR_NO_PENDING);
    EXPECT_EQ(bip_rwait(nullptr), BIP_ERR_NO_PENDING);
    // A small send completes at once but stays pending until tested.
    ASSERT_EQ(bip_isend(0, 3, out.data(), 8), BIP_OK);
    EXPECT_EQ(bip_isend(0, 3, out.data(), 8), BIP_ERR_PENDING);
    EXPECT_EQ(bip_stest(), 1);
    EXPECT_EQ(bip_recv(3, in.data(), n, &len), 0);
    EXPECT_EQ(len, 8u);
}

TEST(BipUnit, TruncationIsReportedOnBothSides) {
    const size_t e = size_t(bip_eager_max(0));
    auto small = make(e, 6), big = make(e + 50, 7);
    std::vector<uint8_t> in(e);
    size_t len = 0;
    // Small: the first maxlen bytes arrive, the receive says how long it was.
    ASSERT_EQ(bip_send(0, 11, small.data(), e), BIP_OK);
    EXPECT_EQ(bip_recv(11, in.data(), 16, &len), BIP_ERR_TRUNCATED);
    EXPECT_EQ(len, e);
    EXPECT_EQ(0, std::memcmp(in.data(), small.data(), 16));
    // Long: refused, nothing moves, the sender is told too.
    ASSERT_EQ(bip_isend(0, 11, big.data(), big.size()), BIP_OK);
    EXPECT_EQ(bip_recv(11, in.data(), e, &len), BIP_ERR_TRUNCATED);
    EXPECT_EQ(len, big.size());
    EXPECT_EQ(bip_swait(), BIP_ERR_TRUNCATED);
    // Both sides are usable afterwards.
    roundtrip(e + 50, 11, 8);
}

TEST(BipUnit, SmallSendBlocksOnlyWhileTheReceiverBuffersAreFull) {
    // VIASTACK_BIP_SMALL_BUFFERS (default 8) buffers per sender: that many
    // small messages go without a receive, the next waits.
    const int k = 8;
    uint32_t v;
    for (v = 0; v < uint32_t(k); v++) ASSERT_EQ(bip_send(0, 20, &v, sizeof v), BIP_OK);
    ASSERT_EQ(bip_isend(0, 20, &v, sizeof v), BIP_OK);
    for (int i = 0; i < 2000; i++) ASSERT_EQ(bip_stest(), 0) << "sent with every receiver buffer full";
    uint32_t got;
    size_t len;
    ASSERT_EQ(bip_recv(20, &got, sizeof got, &len), 0);
    EXPECT_EQ(got, 0u);
    // One buffer is free again (its credit goes back when the receiver idles).
    int done = 0;
    for (long i = 0; i < 10000000 && !done; i++) done = bip_stest();
    ASSERT_EQ(done, 1);
    for (uint32_t w = 1; w <= uint32_t(k); w++) {
        ASSERT_EQ(bip_recv(20, &got, sizeof got, &len), 0);
        EXPECT_EQ(got, w) << "in order on the tag";
    }
}

TEST(BipUnit, BadInputGetsItsCode) {
    char b[8] = {};
    size_t len;
    EXPECT_EQ(bip_send(1, 0, b, 1), BIP_ERR_BAD_DEST);
    EXPECT_EQ(bip_send(-1, 0, b, 1), BIP_ERR_BAD_DEST);
    EXPECT_EQ(bip_isend(7, 0, b, 1), BIP_ERR_BAD_DEST);
    EXPECT_EQ(bip_send(0, -1, b, 1), BIP_ERR_BAD_TAG);
    EXPECT_EQ(bip_send(0, BIP_NTAGS, b, 1), BIP_ERR_BAD_TAG);
    EXPECT_EQ(bip_irecv(BIP_NTAGS, b, 1), BIP_ERR_BAD_TAG);
    EXPECT_EQ(bip_recv(-3, b, 1, &len), BIP_ERR_BAD_TAG);
    EXPECT_EQ(bip_send(0, 0, nullptr, 4), BIP_ERR_NULL_BUF);
    EXPECT_EQ(bip_irecv(0, nullptr, 4), BIP_ERR_NULL_BUF);
    EXPECT_EQ(bip_send(0, 0, b, size_t(BIP_MAX_MESSAGE) + 1), BIP_ERR_TOO_LONG);
    EXPECT_EQ(bip_eager_max(3), BIP_ERR_BAD_DEST);
    // None of them left anything pending.
    EXPECT_EQ(bip_stest(), BIP_ERR_NO_PENDING);
    EXPECT_EQ(bip_rtest(nullptr, nullptr), BIP_ERR_NO_PENDING);
    // A NULL buffer of length 0 is a message of length 0.
    ASSERT_EQ(bip_irecv(0, nullptr, 0), BIP_OK);
    ASSERT_EQ(bip_send(0, 0, nullptr, 0), BIP_OK);
    EXPECT_EQ(bip_rwait(&len), 0);
    EXPECT_EQ(len, 0u);
    EXPECT_STREQ(bip_error_name(BIP_ERR_PENDING), "BIP_ERR_PENDING");
}

TEST(BipUnit, FinalizeThenInitAgain) {
    // A message left unreceived is discarded by finalize; a new bip_init
    // starts clean.
    uint32_t v = 7;
    ASSERT_EQ(bip_send(0, 30, &v, sizeof v), BIP_OK);
    ASSERT_EQ(bip_finalize(), BIP_OK);
    EXPECT_EQ(bip_mynode(), -1);
    EXPECT_EQ(bip_send(0, 30, &v, sizeof v), BIP_ERR_NOT_INIT);
    ASSERT_EQ(bip_init(), BIP_OK);
    EXPECT_EQ(bip_rtest(nullptr, nullptr), BIP_ERR_NO_PENDING);
    ASSERT_EQ(bip_irecv(30, &v, sizeof v), BIP_OK);
    EXPECT_EQ(bip_rtest(nullptr, nullptr), 0) << "the old message is gone";
    uint32_t w = 9;
    ASSERT_EQ(bip_send(0, 30, &w, sizeof w), BIP_OK);
    EXPECT_EQ(bip_rwait(nullptr), 0);
    EXPECT_EQ(v, 9u);
    roundtrip(size_t(bip_eager_max(0)) + 1, 31, 12);
}

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    char b[4];
    g_not_init[0] = bip_send(0, 0, b, 1);
    g_not_init[1] = bip_irecv(0, b, 1);
    g_not_init[2] = bip_stest();
    g_not_init[3] = bip_rwait(nullptr);
    g_not_init[4] = bip_free_mem(b);
    if (bip_init() != BIP_OK) {
        std::fprintf(stderr, "bip_init failed\n");
        return 1;
    }
    int rc = RUN_ALL_TESTS();
    if (bip_finalize() != BIP_OK) rc = 1;
    return rc;
}
