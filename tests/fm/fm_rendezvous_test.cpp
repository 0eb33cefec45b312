// fm_rendezvous_test - a job of one (self-sends): the rendezvous of long
// messages (docs/fm.md, "Rendezvous") across its threshold.  1 byte below,
// at and above it, from and into unaligned buffers, with the handler
// (a) naming one buffer for the whole message (the rest after the first
// packet is RDMA-written, less what the sender streamed as packets while the
// answer was in flight: none with inline firmware, whose answer reaches a
// node sending to itself before its next packet), (b) reading a
// header and then the body (likewise), (c) reading in pieces smaller than
// the RDMA threshold (the rendezvous is declined and the rest comes as
// packets), (d) returning after a few bytes (declined, the rest dropped, the
// next message intact), (e) messages long enough that the answer is always
// accepted, whatever the sender streamed meanwhile.  Every byte and the guard
// bytes around the receiving buffer are checked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "fm.h"

namespace {

// The layer's defaults, set explicitly so the threshold is known here.
constexpr uint32_t kPacket = 2048, kHeader = 16, kRdmaMin = 32768;
constexpr uint32_t kPayload = kPacket - kHeader;
constexpr uint32_t kRendezvousMin = kRdmaMin + kPayload; // docs/fm.md, "Rendezvous"
constexpr uint32_t kGuard = 64;

uint8_t pattern(uint32_t i, uint32_t seed) { return uint8_t((i * 131u + seed * 7u) ^ (i >> 8)); }

enum class Reader { whole, header_body, pieces, early_return };
Reader g_reader = Reader::whole;
uint32_t g_len = 0, g_seed = 0, g_dst_off = 0;
std::vector<uint8_t> g_dst_heap;
uint8_t *g_dst_base = nullptr; // g_dst_heap's, or FM_alloc_mem memory
size_t g_dst_size = 0;
int g_alloc_before_init = 0;
int g_done = 0, g_bad = 0;

int handler(FM_stream *s, unsigned) {
    uint8_t *dst = g_dst_base + kGuard + g_dst_off;
    int rc = FM_OK;
    switch (g_reader) {
    case Reader::whole: rc = FM_receive(dst, s, g_len); break;
    case Reader::header_body:
        rc = FM_receive(dst, s, 8);
        if (rc == FM_OK) rc = FM_receive(dst + 8, s, g_len - 8);
        break;
    case Reader::pieces:
        for (uint32_t off = 0; off < g_len && rc == FM_OK; off += 1000)
            rc = FM_receive(dst + off, s, std::min<uint32_t>(1000, g_len - off));
        break;
    case Reader::early_return: rc = FM_receive(dst, s, 100); break;
    }
    if (rc != FM_OK) g_bad++;
    g_done++;
    return FM_CONTINUE;
}

int g_small_done = 0;
uint8_t g_small[40];
int small_handler(FM_stream *s, unsigned) {
    if (FM_receive(g_small, s, sizeof g_small) != FM_OK) g_bad++;
    g_small_done++;
    return FM_CONTINUE;
}

void send(uint32_t len, uint32_t seed, uint32_t src_off, const std::vector<uint32_t> &pieces, uint8_t *src_mem) {
    std::vector<uint8_t> buf(src_mem ? 0 : len + src_off + 1);
    uint8_t *msg = (src_mem ? src_mem : buf.data()) + src_off;
    for (uint32_t i = 0; i < len; i++) msg[i] = pattern(i, seed);
    FM_stream *s = FM_begin_message(FM_nodeid(), len, handler);
    ASSERT_NE(s, nullptr) << FM_error_name(FM_last_error());
    uint32_t off = 0;
    for (size_t k = 0; off < len; k++) {
        const uint32_t n = std::min(pieces[k % pieces.size()], len - off);
        ASSERT_EQ(FM_send_piece(s, msg + off, n), FM_OK);
        off += n;
    }
    ASSERT_EQ(FM_end_message(s), FM_OK);
}

// One message of len bytes read by `reader`; returns the bytes FM wrote in place.
// src_mem / dst_mem: buffers to use (FM_alloc_mem memory), else heap vectors.
unsigned long long run(Reader reader, uint32_t len, uint32_t src_off, uint32_t dst_off,
                       const std::vector<uint32_t> &pieces, uint8_t *src_mem = nullptr, uint8_t *dst_mem = nullptr) {
    g_reader = reader;
    g_len = len;
    g_seed = len + src_off * 3 + dst_off;
    g_dst_off = dst_off;
    g_dst_size = len + dst_off + 2 * kGuard;
    if (dst_mem) {
        g_dst_base = dst_mem;
        std::memset(dst_mem, 0xee, g_dst_size);
    } else {
        g_dst_heap.assign(g_dst_size, 0xee);
        g_dst_base = g_dst_heap.data();
    }
    const int before = g_done;
    const unsigned long long rdma0 = FM_rdma_bytes();
    send(len, g_seed, src_off, pieces, src_mem);
    while (g_done == before && g_bad == 0) FM_extract(FM_EXTRACT_ALL);
    EXPECT_EQ(g_bad, 0);
    const uint32_t read = reader == Reader::early_return ? 100 : len;
    const uint8_t *dst = g_dst_base + kGuard + dst_off;
    for (uint32_t i = 0; i < read; i++)
        if (dst[i] != pattern(i, g_seed)) {
            ADD_FAILURE() << len << " bytes: byte " << i << " wrong (src +" << src_off << ", dst +" << dst_off << ")";
            break;
        }
    for (uint32_t i = 0; i < kGuard + dst_off; i++) EXPECT_EQ(g_dst_base[i], 0xee) << "written before the buffer";
    for (size_t i = kGuard + dst_off + read; i < g_dst_size; i++)
        if (g_dst_base[i] != 0xee) {
            ADD_FAILURE() << "written past what the handler read, at +" << (i - kGuard - dst_off);
            break;
        }
    EXPECT_EQ(FM_suspended_handlers(), 0u);
    return FM_rdma_bytes() - rdma0;
}

const uint32_t kSizes[] = {kRendezvousMin - 1, kRendezvousMin, kRendezvousMin + 1};

bool inline_firmware() {
    const char *m = std::getenv("VIPL_NICFW_MODE");
    return m && !std::strcmp(m, "inline");
}

// The bytes written in place for a len-byte message read whole: everything
// after the first packet with inline firmware; with a firmware thread the
// sender streams packets until the answer comes, so at most that (none when
// the receiver found too little left to ask for).
void expect_rdma(unsigned long long rdma, uint32_t len) {
    if (len < kRendezvousMin) return;
    if (inline_firmware()) EXPECT_EQ(rdma, len - kPayload) << len << " bytes";
    else EXPECT_LE(rdma, len - kPayload) << len << " bytes";
}
const uint32_t kOffsets[][2] = {{0, 0}, {1, 3}, {7, 0}, {0, 5}};

TEST(FmRendezvous, WholeMessageIntoTheNamedBuffer) {
    for (uint32_t len : kSizes)
        for (auto &o : kOffsets) {
            const unsigned long long rdma = run(Reader::whole, len, o[0], o[1], {len});
            // From the threshold on, everything after the first packet is written in place.
            expect_rdma(rdma, len);
        }
}

TEST(FmRendezvous, HeaderThenBodyInOddPieces) {
    for (uint32_t len : kSizes)
        for (auto &o : kOffsets) {
            const unsigned long long rdma = run(Reader::header_body, len, o[0], o[1], {3, 9000, 1, 30000});
            expect_rdma(rdma, len);
        }
}

TEST(FmRendezvous, SmallReadsDeclineAndGetPackets) {
    for (uint32_t len : kSizes)
        for (auto &o : kOffsets) EXPECT_EQ(run(Reader::pieces, len, o[0], o[1], {len}), 0u) << len << " bytes";
}

TEST(FmRendezvous, EarlyReturnDeclinesAndTheNextMessageArrives) {
    for (uint32_t len : kSizes) {
        EXPECT_EQ(run(Reader::early_return, len, 1, 1, {len}), 0u);
        uint8_t m[sizeof g_small];
        for (uint32_t i = 0; i < sizeof m; i++) m[i] = pattern(i, 99);
        FM_stream *s = FM_begin_message(FM_nodeid(), sizeof m, small_handler);
        ASSERT_NE(s, nullptr);
        ASSERT_EQ(FM_send_piece(s, m, sizeof m), FM_OK);
        ASSERT_EQ(FM_end_message(s), FM_OK);
        const int before = g_small_done;
        while (g_small_done == before && g_bad == 0) FM_extract(FM_EXTRACT_ALL);
        EXPECT_EQ(std::memcmp(g_small, m, sizeof m), 0);
    }
}

TEST(FmRendezvous, ManyInARowIntoOneBuffer) {
    // The named buffer's registration is reused (cached where the NIC's
    // registration pins nothing): every message still lands intact.
    for (int i = 0; i < 50; i++) run(Reader::whole, kRendezvousMin + uint32_t(i) * 1001, 0, 0, {65536});
}

TEST(FmRendezvous, StreamedWhileTheAnswerIsInFlight) {
    // 256 KB: at most k + 1 packets can be queued when the handler names its
    // buffer, so it always asks and the sender always writes the rest from
    // wherever its streaming had got to; the packets before that point and
    // the write after it land in order.
    constexpr uint32_t kLong = 256 * 1024;
    constexpr uint32_t kCredits = 8;
    for (int i = 0; i < 20; i++) {
        const uint32_t len = kLong + uint32_t(i) * 777;
        const unsigned long long rdma = run(Reader::whole, len, uint32_t(i % 3), uint32_t(i % 5), {len});
        EXPECT_GE(rdma, len - (kCredits + 2) * kPayload) << len << " bytes";
        EXPECT_LE(rdma, len - kPayload) << len << " bytes";
    }
}

TEST(FmRendezvous, BuffersFromFmAllocMem) {
    // NIC memory on both sides (one memcpy on nicfw), across the threshold, unaligned.
    const size_t bytes = kRendezvousMin + 4096;
    auto *src = static_cast<uint8_t *>(FM_alloc_mem(bytes));
    auto *dst = static_cast<uint8_t *>(FM_alloc_mem(bytes + 2 * kGuard + 8));
    ASSERT_NE(src, nullptr);
    ASSERT_NE(dst, nullptr);
    for (uint32_t len : kSizes)
        for (auto &o : kOffsets) {
            const unsigned long long rdma = run(Reader::whole, len, o[0], o[1], {len}, src, dst);
            expect_rdma(rdma, len);
        }
    // Heap into NIC memory and back.
    run(Reader::header_body, kRendezvousMin + 1, 3, 0, {100, 40000}, nullptr, dst);
    run(Reader::header_body, kRendezvousMin + 1, 0, 3, {100, 40000}, src, nullptr);
    EXPECT_EQ(FM_free_mem(src), FM_OK);
    EXPECT_EQ(FM_free_mem(src), FM_ERR_BAD_ARG) << "freed twice";
    EXPECT_EQ(FM_free_mem(dst), FM_OK);
    // A new block, perhaps at the same address: no stale registration is used.
    dst = static_cast<uint8_t *>(FM_alloc_mem(bytes + 2 * kGuard + 8));
    ASSERT_NE(dst, nullptr);
    run(Reader::whole, kRendezvousMin, 0, 0, {kRendezvousMin}, nullptr, dst);
    // dst is left to FM_finalize.
}

TEST(FmRendezvous, AllocMemBadInput) {
    EXPECT_EQ(g_alloc_before_init, FM_ERR_NOT_INIT);
    EXPECT_EQ(FM_alloc_mem(0), nullptr);
    EXPECT_EQ(FM_last_error(), FM_ERR_BAD_ARG);
    int x = 0;
    EXPECT_EQ(FM_free_mem(&x), FM_ERR_BAD_ARG);
    EXPECT_EQ(FM_free_mem(nullptr), FM_ERR_BAD_ARG);
}

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    setenv("VIASTACK_FM_PACKET", "2048", 1);
    setenv("VIASTACK_FM_RDMA_MIN", "32768", 1);
    setenv("VIASTACK_FM_CREDITS", "8", 1);
    if (FM_alloc_mem(64) == nullptr) g_alloc_before_init = FM_last_error();
    if (FM_set_handler(1, handler) != FM_OK || FM_set_handler(2, small_handler) != FM_OK) return 1;
    if (FM_initialize() != FM_OK) {
        std::fprintf(stderr, "FM_initialize failed: %s\n", FM_error_name(FM_last_error()));
        return 1;
    }
    const int rc = RUN_ALL_TESTS();
    if (FM_finalize() != FM_OK) return 1;
    return rc;
}
