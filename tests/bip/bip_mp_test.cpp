// bip_mp_test - BIP across N processes (vipl-run -n N), each rank announcing
// its own switch point (4, 8 or 12 KB): every rank sends to every other rank
// messages 1 byte below, at and above the receiver's threshold
// and well above it (bytes and sources checked, RDMA-written bytes counted);
// each rank's messages on two tags received in order by its neighbour with
// small and long ones mixed; unknown destinations.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <cstring>
#include <vector>

#include "bip.h"
#include "vipl_boot.h"

namespace {

int me = 0, n = 1;

uint8_t pattern(size_t i, unsigned seed) { return uint8_t((i * 131u + seed * 7u) ^ (i >> 8)); }
unsigned seed_of(int src, int dst, size_t len) { return unsigned(src * 1000 + dst * 10) + unsigned(len); }

// The switch point each rank announces (main sets it before bip_init):
// the receiver fixes it, so senders use the destination's.
long eager_of(int rank) { return 4096L * (1 + rank % 3); }

TEST(BipMp, EveryPairAcrossTheThreshold) {
    for (int r = 0; r < n; r++) ASSERT_EQ(bip_eager_max(r), eager_of(r)) << "rank " << r << "'s announced switch point";
    // 1 byte, 1 byte below, at and above the receiver's switch point, and well above it.
    auto sizes_for = [](long e) { return std::vector<size_t>{1, size_t(e) - 1, size_t(e), size_t(e) + 1, 65536 + 3}; };
    const long my_e = eager_of(me);
    const unsigned long long rdma_before = bip_rdma_bytes();
    unsigned long long long_bytes = 0;
    for (int round = 1; round < n; round++) {
        const int dst = (me + round) % n, src = (me - round + n) % n;
        const std::vector<size_t> out_sizes = sizes_for(eager_of(dst)), in_sizes = sizes_for(my_e);
        for (size_t si = 0; si < out_sizes.size(); si++) {
            const size_t len = out_sizes[si], in_len = in_sizes[si];
            const int tag = round * 6 + int(si); // one possible sender per receive
            std::vector<uint8_t> out(len), in(in_len + 4, 0xee);
            for (size_t i = 0; i < len; i++) out[i] = pattern(i, seed_of(me, dst, len));
            ASSERT_EQ(bip_irecv(tag, in.data(), in.size()), BIP_OK);
            ASSERT_EQ(bip_send(dst, tag, out.data(), len), BIP_OK) << "to rank " << dst << ", " << len << " bytes";
            size_t got = 0;
            ASSERT_EQ(bip_rwait(&got), src);
            ASSERT_EQ(got, in_len);
            size_t bad = 0;
            for (size_t i = 0; i < in_len; i++) bad += in[i] != pattern(i, seed_of(src, me, in_len));
            EXPECT_EQ(bad, 0u) << in_len << " bytes from rank " << src;
            EXPECT_EQ(in[in_len], 0xee);
            if (long(in_len) > my_e) long_bytes += in_len;
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
    // Small and long by the receiver's switch point.
    auto lens_for = [](long e) { return std::vector<size_t>{3, size_t(e) + 7, 40, 8, 1, size_t(e) * 3}; };
    const int right = (me + 1) % n, left = (me - 1 + n) % n;
    const std::vector<size_t> send_lens = lens_for(eager_of(right)), lens = lens_for(eager_of(me));
    std::vector<std::vector<uint8_t>> out(send_lens.size());
    for (size_t k = 0; k < send_lens.size(); k++) {
        out[k].resize(send_lens[k]);
        for (size_t i = 0; i < send_lens[k]; i++) out[k][i] = pattern(i, unsigned(k * 17 + right));
    }
    std::vector<uint8_t> in(size_t(eager_of(me)) * 3 + 8);
    // Receive order: tag 51's messages (k = 1, 3, 5), then tag 50's (0, 2, 4).
    const size_t order[] = {1, 3, 5, 0, 2, 4};
    size_t next_send = 0, next_recv = 0;
    bool recv_posted = false, send_posted = false;
    // Both sides at once with the non-blocking calls (one pending of each).
    while (next_send < std::size(lens) || next_recv < std::size(order) || send_posted || recv_posted) {
        if (!send_posted && next_send < std::size(lens)) {
            ASSERT_EQ(bip_isend(right, 50 + int(next_send % 2), out[next_send].data(), send_lens[next_send]), BIP_OK);
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

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    // Each receiver fixes its own switch point: 4, 8 or 12 KB by rank.
    const char *rank = std::getenv("VIASTACK_RANK");
    const std::string e = std::to_string(eager_of(rank ? std::atoi(rank) : 0));
    setenv("VIASTACK_BIP_EAGER", e.c_str(), 1);
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
