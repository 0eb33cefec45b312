// fm_gather_test - FM_send_piece pieces sent as descriptor data segments
// (gather, docs/fm.md "Gather"), in a job of one (every message to itself):
// bytes intact 1 byte below, at and above the threshold, pieces copied and
// gathered mixed in one packet, unaligned pieces, more pieces in a packet
// than its descriptor has segments, a gathered piece as a message's final
// bytes, and the buffer reused at once after FM_send_piece returns.  Each
// case runs under several thresholds and segment limits (FM is finalized and
// initialized again between them); CMake runs it in both firmware modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fm.h"

namespace {

uint8_t pattern(uint32_t i, uint32_t seed) { return uint8_t(i * 131u + seed * 7u + (i >> 9)); }

// The receiving side: the whole message into one buffer, read in pieces of
// recv_piece bytes (independent of the sender's).
std::vector<uint8_t> g_got;
uint32_t g_recv_piece = 1;
int g_done = 0, g_bad = 0;
unsigned long long g_rdma = 0; // bytes of the last message received by RDMA

int gather_handler(FM_stream *s, unsigned) {
    uint32_t off = 0;
    while (off < g_got.size()) {
        const uint32_t n = std::min<uint32_t>(g_recv_piece, uint32_t(g_got.size()) - off);
        if (FM_receive(g_got.data() + off, s, n) != FM_OK) {
            g_bad++;
            return FM_CONTINUE;
        }
        off += n;
    }
    g_done++;
    return FM_CONTINUE;
}

// Sends `len` bytes of pattern(seed) starting `misalign` bytes into a buffer,
// in pieces of the sizes given (cycled); after each FM_send_piece the piece's
// bytes are overwritten (the caller may reuse its buffer once the call
// returns).  Checks what the handler received.  Returns the bytes FM gathered.
unsigned long long send_and_check(uint32_t len, const std::vector<uint32_t> &pieces, uint32_t misalign,
                                  uint32_t recv_piece, uint32_t seed) {
    std::vector<uint8_t> buf(len + misalign + 64);
    uint8_t *msg = buf.data() + misalign;
    for (uint32_t i = 0; i < len; i++) msg[i] = pattern(i, seed);
    g_got.assign(len, 0);
    g_recv_piece = recv_piece;
    const int before = g_done;
    const unsigned long long gathered0 = FM_gathered_bytes(), rdma0 = FM_rdma_bytes();
    FM_stream *s = FM_begin_message(FM_nodeid(), len, gather_handler);
    EXPECT_NE(s, nullptr) << FM_error_name(FM_last_error());
    if (!s) return 0;
    uint32_t off = 0;
    for (size_t k = 0; off < len; k++) {
        const uint32_t n = std::min(pieces[k % pieces.size()], len - off);
        EXPECT_EQ(FM_send_piece(s, msg + off, n), FM_OK);
        std::memset(msg + off, 0xee, n); // reused at once: FM must not read it any more
        off += n;
    }
    EXPECT_EQ(FM_end_message(s), FM_OK);
    while (g_done == before && g_bad == 0) FM_extract(FM_EXTRACT_ALL);
    EXPECT_EQ(g_bad, 0);
    EXPECT_EQ(g_done, before + 1);
    for (uint32_t i = 0; i < len; i++)
        if (g_got[i] != pattern(i, seed)) {
            ADD_FAILURE() << "byte " << i << " of " << len << " (pieces of " << pieces[0] << "..., misalign "
                          << misalign << "): got " << int(g_got[i]) << ", sent " << int(pattern(i, seed));
            break;
        }
    EXPECT_EQ(FM_suspended_handlers(), 0u);
    g_rdma = FM_rdma_bytes() - rdma0;
    return FM_gathered_bytes() - gathered0;
}

// The bytes of pieces of at least t bytes: what FM should gather (less what
// went by RDMA into the handler's named buffer, for messages long enough).
unsigned long long expected_gathered(uint32_t len, const std::vector<uint32_t> &pieces, uint32_t t) {
    unsigned long long sum = 0;
    uint32_t off = 0;
    for (size_t k = 0; off < len; k++) {
        const uint32_t n = std::min(pieces[k % pieces.size()], len - off);
        if (n >= t) sum += n;
        off += n;
    }
    return sum;
}

// Sends and checks that the pieces of at least t bytes were gathered: all of
// them, or (when part of the message went by RDMA) no more than them, and
// what went neither way was not lost.
void check_gathered(uint32_t len, const std::vector<uint32_t> &pieces, uint32_t misalign, uint32_t recv_piece,
                    uint32_t seed, uint32_t t) {
    const unsigned long long g = send_and_check(len, pieces, misalign, recv_piece, seed);
    const unsigned long long want = expected_gathered(len, pieces, t);
    if (g_rdma == 0) {
        EXPECT_EQ(g, want) << len << " bytes, threshold " << t;
    } else {
        EXPECT_LE(g, want) << len << " bytes, threshold " << t;
        EXPECT_GE(g + g_rdma, want) << len << " bytes, threshold " << t << ", " << g_rdma << " by RDMA";
    }
}

// FM under one configuration (environment read by FM_initialize).
struct Config {
    const char *gather_min;
    const char *segments;
};

class FmGather : public ::testing::TestWithParam<Config> {
protected:
    void SetUp() override {
        setenv("VIASTACK_FM_GATHER_MIN", GetParam().gather_min, 1);
        setenv("VIASTACK_FM_GATHER_SEGMENTS", GetParam().segments, 1);
        ASSERT_EQ(FM_set_handler(9, gather_handler), FM_OK);
        ASSERT_EQ(FM_initialize(), FM_OK);
        threshold_ = uint32_t(std::strtoul(GetParam().gather_min, nullptr, 0));
        g_bad = 0;
    }
    void TearDown() override { EXPECT_EQ(FM_finalize(), FM_OK); }
    uint32_t threshold_ = 0;
};

TEST_P(FmGather, AcrossTheThreshold) {
    // A header piece (copied) and one body piece 1 byte below, at and above
    // the threshold: below it is copied, from it on gathered, bytes intact.
    const uint32_t t = threshold_;
    for (uint32_t body : {t - 1, t, t + 1}) {
        const uint32_t len = 8 + body;
        const unsigned long long g = send_and_check(len, {8, body}, 0, 4096, body);
        EXPECT_EQ(g, body >= t ? body : 0u) << "body of " << body << " bytes, threshold " << t;
    }
}

TEST_P(FmGather, PiecesSpanningPackets) {
    // Pieces longer than a packet, straddling packet boundaries, received in
    // pieces of other sizes.
    const uint32_t pk = FM_max_buffer_message();
    const uint32_t t = threshold_;
    check_gathered(5 * pk + 17, {std::max(t, 3 * pk + 1), 7, std::max(t, pk)}, 0, 777, 1, t);
    check_gathered(3 * pk, {std::max(t, 3 * pk)}, 0, 3 * pk, 2, t);
}

TEST_P(FmGather, UnalignedPieces) {
    const uint32_t t = threshold_;
    for (uint32_t mis : {1u, 3u, 7u, 13u}) { check_gathered(4 * t + 5, {t + mis, 5, t + 3}, mis, 1001, mis, t); }
}

TEST_P(FmGather, MorePiecesThanSegments) {
    // Pieces at the threshold, alternating with small copied ones, many more
    // in a packet than its descriptor has segments (when the threshold is
    // small): the packet goes out when the segments run out, the rest follows.
    const uint32_t t = threshold_;
    const uint32_t len = 300 * (t + 3) + 11;
    check_gathered(len, {t, 3, t, 1, 2}, 1, 64, 7, t);
    // Gathered pieces only, one named buffer on the receiving side (RDMA may take part).
    check_gathered(200 * t, {t}, 0, 200 * t, 8, t);
}

TEST_P(FmGather, ManyMessagesBackToBack) {
    // More messages than credits and send slots, each a gathered piece that
    // ends the message (its packet is the last), then a copied one.
    for (uint32_t m = 0; m < 40; m++) check_gathered(8 + threshold_ + m, {8, threshold_ + m}, 0, 512, m, threshold_);
}

INSTANTIATE_TEST_SUITE_P(Thresholds, FmGather,
                         ::testing::Values(Config{"16", "4"},    // tiny pieces, 4 segments: the limit is hit often
                                           Config{"300", "16"},  // several pieces in a packet
                                           Config{"2049", "16"}, // just over a packet's payload
                                           Config{"8192", "3"}), // the default threshold, fewest segments
                         [](const ::testing::TestParamInfo<Config> &i) {
                             return std::string("min") + i.param.gather_min + "_seg" + i.param.segments;
                         });

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
