// bip_mp_test - BIP across N processes (vipl-run -n N): every rank sends to
// every other rank messages 1 byte below, at and above the eager threshold
// and well above it (bytes and sources checked, RDMA-written bytes counted);
// each rank's messages on two tags received in order by its neighbour with
// small and long ones mixed; unknown destinations.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "bip.h"
#include "vipl_boot.h"

namespace {

int me = 0, n = 1;

uint8_t pattern(size_t i, unsigned seed) { return uint8_t((i * 131u + seed * 7u) ^ (i >> 8)); }
unsigned seed_of(int src, int dst, size_t len) { return unsigned(src * 1000 + dst * 10) + unsigned(len); }

TEST(BipMp, EveryPairAcrossTheThreshold) {
    const long e = bip_eager_max((me + 1) % n);
    ASSERT_GT(e, 1);
    for (int r = 0; r < n; r++) ASSERT_EQ(bip_eager_max(r), e) << "every rank announces the same limit here";
    const size_t sizes[] = {1, size_t(e) - 1, size_t(e), size_t(e) + 1, 65536 + 3};
    const unsigned long long rdma_before = bip_rdma_bytes();
    unsigned long long long_bytes = 0;
    for (int round = 1; round < n; round++) {
        const int dst = (me + round) % n, src = (me - round + n) % n;
        for (size_t si = 0; si < std::size(sizes); si++) {
            const size_t len = sizes[si];
            const int tag = round * 6 + int(si);  // one possible sender per receive
            std::vector<uint8_t> out(len), in(len + 4, 0xee);
            for (size_t i = 0; i < len; i++) out[i] = pattern(i, seed_of(me, dst, len));
            ASSERT_EQ(bip_irecv(tag, in.data(), in.size()), BIP_OK);
            ASSERT_EQ(bip_send(dst, tag, out.data(), len), BIP_OK) << "to rank " << dst << ", " << len << " bytes";
            size_t got = 0;
            ASSERT_EQ(bip_rwait(&got), src);
            ASSERT_EQ(got, len);
            size_t bad = 0;
            for (size_t i = 0; i < len; i++) bad += in[i] != pattern(i, seed_of(src, me, len));
            EXPECT_EQ(bad, 0u) << len << " bytes from rank " << src;
            EXPECT_EQ(in[len], 0xee);
            if (long(len) > e) long_bytes += len;
        }
    }
    // Above the threshold every byte was written into the posted buffer; below, none.
    EXPECT_EQ(bip_rdma_bytes() - rdma_before, long_bytes);
    ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK);
}

TEST(BipMp, OrderPerTagFromEverySender) {
    // Each rank sends to its right neighbour, on tags 50 and 51 alternately:
    // small, long, small, small, small, long.  Its left neighbour receives
    // tag 51 first, then tag 50; each tag's messages come in send order.
    // (Long sends wait for their receive, so the receiver's order decides
    // when they go; small ones fit in its buffers.)
    const long e = bip_eager_max((me + 1) % n);
    const size_t lens[] = {3, size_t(e) + 7, 40, 8, 1, size_t(e) * 3};
    const int right = (me + 1) % n, left = (me - 1 + n) % n;
    std::vector<std::vector<uint8_t>> out(std::size(lens));
    for (size_t k = 0; k < std::size(lens); k++) {
        out[k].resize(lens[k]);
        for (size_t i = 0; i < lens[k]; i++) out[k][i] = pattern(i, unsigned(k * 17 + right));
    }
    std::vector<uint8_t> in(size_t(e) * 3 + 8);
    // Receive order: tag 51's messages (k = 1, 3, 5), then tag 50's (0, 2, 4).
    const size_t order[] = {1, 3, 5, 0, 2, 4};
    size_t next_send = 0, next_recv = 0;
    bool recv_posted = false, send_posted = false;
    // Both sides at once with the non-blocking calls (one pending of each).
    while (next_send < std::size(lens) || next_recv < std::size(order) || send_posted || recv_posted) {
        if (!send_posted && next_send < std::size(lens)) {
            ASSERT_EQ(bip_isend(right, 50 + int(next_send % 2), out[next_send].data(), lens[next_send]), BIP_OK);
            send_posted = true;
        }
        if (!recv_posted && next_recv < std::size(order)) {
            ASSERT_EQ(bip_irecv(50 + int(order[next_recv] % 2), in.data(), in.size()), BIP_OK);
            recv_posted = true;
        }
        if (send_posted) {
            int rc = bip_stest();
            ASSERT_GE(rc, 0);
            if (rc == 1) send_posted = false, next_send++;
        }
        if (recv_posted) {
            int src = -1;
            size_t len = 0;
            int rc = bip_rtest(&src, &len);
            ASSERT_GE(rc, 0);
            if (rc == 1) {
                const size_t k = order[next_recv];
                EXPECT_EQ(src, left);
                ASSERT_EQ(len, lens[k]) << "message " << k << " of rank " << left << " out of order";
                size_t bad = 0;
                for (size_t i = 0; i < len; i++) bad += in[i] != pattern(i, unsigned(k * 17 + me));
                EXPECT_EQ(bad, 0u);
                recv_posted = false;
                next_recv++;
            }
        }
    }
    ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK);
}

TEST(BipMp, UnknownDestinations) {
    char b[4] = {};
    EXPECT_EQ(bip_send(n, 0, b, 1), BIP_ERR_BAD_DEST);
    EXPECT_EQ(bip_isend(n + 5, 0, b, 1), BIP_ERR_BAD_DEST);
    EXPECT_EQ(bip_send(-1, 0, b, 1), BIP_ERR_BAD_DEST);
    EXPECT_EQ(bip_eager_max(n), BIP_ERR_BAD_DEST);
    EXPECT_EQ(bip_stest(), BIP_ERR_NO_PENDING);
}

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    if (bip_init() != BIP_OK) {
        std::fprintf(stderr, "bip_init failed\n");
        return 1;
    }
    me = bip_mynode();
    n = bip_numnodes();
    // Only rank 0 prints gtest's report; a failing rank still exits non-zero.
    if (me != 0) {
        auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
    }
    int rc = RUN_ALL_TESTS();
    if (bip_finalize() != BIP_OK) rc = 1;
    return rc;
}
