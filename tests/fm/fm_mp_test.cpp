// fm_mp_test - Fast Messages among N processes (vipl-run -n N): streams
// between every pair with mismatched piece sizes, long messages from several
// senders at once into one node (handlers suspended and interleaved; a long
// message does not hold up other senders' short ones), pacing with
// FM_extract(maxbytes) that loses nothing, bad destinations.  Every phase
// ends in a count of what each node must have received, then a
// vipl_boot_barrier (out of band: it does not extract).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "fm.h"
#include "vipl_boot.h"

namespace {

unsigned me() { return FM_nodeid(); }
unsigned nodes() { return FM_numnodes(); }

uint8_t pattern(uint32_t i, uint32_t src, uint32_t dst) { return uint8_t(i * 31u + src * 17u + dst * 5u + (i >> 9)); }

// ---- all pairs, mismatched pieces --------------------------------------------
int g_pairs_ok = 0, g_pairs_bad = 0;
uint32_t pair_len(unsigned src, unsigned dst, int m) { return 1 + 1500u * (src + 1) + 7919u * (dst + 1) * unsigned(m); }

int pair_handler(FM_stream *s, unsigned sender) {
    uint32_t hdr[2]; // message index, length
    if (FM_receive(hdr, s, sizeof hdr) != FM_OK) {
        g_pairs_bad++;
        return FM_CONTINUE;
    }
    const uint32_t len = hdr[1];
    std::vector<uint8_t> body(len);
    static const uint32_t pieces[] = {1, 4093, 17, 2048, 333};
    for (uint32_t off = 0, k = 0; off < len; k++) {
        uint32_t n = std::min(pieces[k % 5], len - off);
        if (FM_receive(body.data() + off, s, n) != FM_OK) {
            g_pairs_bad++;
            return FM_CONTINUE;
        }
        off += n;
    }
    if (len != pair_len(sender, me(), int(hdr[0]))) g_pairs_bad++;
    for (uint32_t i = 0; i < len; i++)
        if (body[i] != pattern(i, sender, me())) {
            g_pairs_bad++;
            break;
        }
    g_pairs_ok++;
    return FM_CONTINUE;
}

TEST(FmMp, AllPairsMismatchedPieces) {
    const int kMsgs = 4;
    for (int m = 0; m < kMsgs; m++)
        for (unsigned d = 0; d < nodes(); d++) {
            const unsigned dst = (me() + d) % nodes();
            const uint32_t len = pair_len(me(), dst, m);
            std::vector<uint8_t> body(len);
            for (uint32_t i = 0; i < len; i++) body[i] = pattern(i, me(), dst);
            const uint32_t hdr[2] = {uint32_t(m), len};
            FM_stream *s = FM_begin_message(dst, unsigned(sizeof hdr + len), pair_handler);
            ASSERT_NE(s, nullptr) << FM_error_name(FM_last_error());
            ASSERT_EQ(FM_send_piece(s, hdr, sizeof hdr), FM_OK);
            static const uint32_t pieces[] = {999, 1, 6000, 2};
            for (uint32_t off = 0, k = 0; off < len; k++) {
                uint32_t n = std::min(pieces[k % 4], len - off);
                ASSERT_EQ(FM_send_piece(s, body.data() + off, n), FM_OK);
                off += n;
            }
            ASSERT_EQ(FM_end_message(s), FM_OK);
        }
    while (g_pairs_ok + g_pairs_bad < kMsgs * int(nodes())) FM_extract(FM_EXTRACT_ALL);
    EXPECT_EQ(g_pairs_bad, 0);
    EXPECT_EQ(g_pairs_ok, kMsgs * int(nodes()));
    EXPECT_EQ(FM_suspended_handlers(), 0u);
    ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK);
}

// ---- interleaved senders ---------------------------------------------------------
// Node 0 receives one long message from every other node at once; each
// handler reads it in one FM_receive, so it stays suspended until its last
// packet while the others run.  Node 1 holds back the last byte of its long
// message until node 0 says "go", and node 0 says it only once node 2's
// short messages (sent after node 2's own long message) have all been
// handled: if a long message in progress blocked other senders, the test
// would hang (and time out), and node 2's long handler necessarily ran while
// node 1's was suspended.
constexpr uint32_t kLong = 400 * 1024;
int g_long_active = 0, g_long_max_active = 0, g_long_done = 0, g_long_bad = 0;
bool g_long_started[64] = {};
int g_short_done = 0, g_short_seen_active = 0;
volatile int g_go = 0;

int long_handler(FM_stream *s, unsigned sender) {
    g_long_active++;
    if (sender < 64) g_long_started[sender] = true;
    if (g_long_active > g_long_max_active) g_long_max_active = g_long_active;
    std::vector<uint8_t> body(kLong);
    if (FM_receive(body.data(), s, kLong) != FM_OK) g_long_bad++;
    for (uint32_t i = 0; i < kLong; i += 97)
        if (body[i] != pattern(i, sender, 0)) {
            g_long_bad++;
            break;
        }
    if (body[kLong - 1] != pattern(kLong - 1, sender, 0)) g_long_bad++;
    g_long_active--;
    g_long_done++;
    return FM_CONTINUE;
}

void short_handler(void *, unsigned, unsigned) {
    if (g_long_active > 0) g_short_seen_active++;
    g_short_done++;
}

void go_handler(void *, unsigned, unsigned) { g_go = 1; }
volatile int g_go_short = 0;
void go_short_handler(void *, unsigned, unsigned) { g_go_short = 1; }

TEST(FmMp, SuspendedHandlersInterleaveSenders) {
    if (nodes() < 3) GTEST_SKIP() << "needs two senders";
    const int kShort = 8;
    if (me() != 0) {
        std::vector<uint8_t> body(kLong);
        for (uint32_t i = 0; i < kLong; i++) body[i] = pattern(i, me(), 0);
        FM_stream *s = FM_begin_message(0, kLong, long_handler);
        ASSERT_NE(s, nullptr);
        if (me() == 1) {
            ASSERT_EQ(FM_send_piece(s, body.data(), kLong - 1), FM_OK);
            while (!g_go) FM_extract(FM_EXTRACT_ALL);
            ASSERT_EQ(FM_send_piece(s, body.data() + kLong - 1, 1), FM_OK);
        } else {
            ASSERT_EQ(FM_send_piece(s, body.data(), kLong), FM_OK);
        }
        ASSERT_EQ(FM_end_message(s), FM_OK);
    }
    if (me() == 2) {
        // Only once node 1's handler is running at node 0 (and suspended for
        // its last byte): otherwise these could be handled before node 1's
        // first packet arrived, with no handler active to interleave with.
        while (!g_go_short) FM_extract(FM_EXTRACT_ALL);
        for (int i = 0; i < kShort; i++) ASSERT_EQ(FM_send_4(0, short_handler, i, 0, 0, 0), FM_OK);
    }
    if (me() == 0) {
        while (!g_long_started[1]) FM_extract(FM_EXTRACT_ALL);
        ASSERT_EQ(FM_send_4(2, go_short_handler, 0, 0, 0, 0), FM_OK);
        while (g_short_done < kShort) FM_extract(FM_EXTRACT_ALL);
        EXPECT_TRUE(g_long_active > 0) << "node 1's handler is waiting for its last byte";
        EXPECT_EQ(g_short_seen_active, kShort);
        ASSERT_EQ(FM_send_4(1, go_handler, 0, 0, 0, 0), FM_OK);
        while (g_long_done < int(nodes()) - 1) FM_extract(FM_EXTRACT_ALL);
        EXPECT_EQ(g_long_bad, 0);
        EXPECT_GE(g_long_max_active, 2);
    }
    ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK);
}

// ---- layer interleaving -------------------------------------------------------------
// Every node sends node 0 a header and a 300 KB body in odd pieces; node 0's
// handler reads the header, then names a buffer for the whole body before it
// has arrived.  From other nodes the body is RDMA-written into that buffer
// (FM_rdma_bytes grows); to itself it may come as packets; either way the
// bytes must be exact.
constexpr uint32_t kBody = 300 * 1024;
int g_body_ok = 0, g_body_bad = 0;

int body_handler(FM_stream *s, unsigned sender) {
    uint32_t hdr[4];
    if (FM_receive(hdr, s, sizeof hdr) != FM_OK || hdr[0] != sender || hdr[1] != kBody) {
        g_body_bad++;
        return FM_CONTINUE;
    }
    std::vector<uint8_t> body(kBody);
    if (FM_receive(body.data(), s, kBody) != FM_OK) g_body_bad++;
    for (uint32_t i = 0; i < kBody; i++)
        if (body[i] != pattern(i, sender, 7)) {
            g_body_bad++;
            return FM_CONTINUE;
        }
    uint32_t trailer;
    if (FM_receive(&trailer, s, 4) != FM_OK || trailer != 0xfeedu) g_body_bad++;
    g_body_ok++;
    return FM_CONTINUE;
}

TEST(FmMp, NamedBufferIsWrittenInPlace) {
    const unsigned long long before = FM_rdma_bytes();
    std::vector<uint8_t> body(kBody);
    for (uint32_t i = 0; i < kBody; i++) body[i] = pattern(i, me(), 7);
    const uint32_t hdr[4] = {me(), kBody, 0, 0};
    const uint32_t trailer = 0xfeedu;
    FM_stream *s = FM_begin_message(0, unsigned(sizeof hdr + kBody + 4), body_handler);
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(FM_send_piece(s, hdr, sizeof hdr), FM_OK);
    static const uint32_t pieces[] = {7, 5000, 65536, 1, 30000};
    for (uint32_t off = 0, k = 0; off < kBody; k++) {
        uint32_t n = std::min(pieces[k % 5], kBody - off);
        ASSERT_EQ(FM_send_piece(s, body.data() + off, n), FM_OK);
        off += n;
    }
    ASSERT_EQ(FM_send_piece(s, &trailer, 4), FM_OK);
    ASSERT_EQ(FM_end_message(s), FM_OK);
    if (me() == 0) {
        while (g_body_ok + g_body_bad < int(nodes())) FM_extract(FM_EXTRACT_ALL);
        EXPECT_EQ(g_body_bad, 0);
        const char *v = std::getenv("VIASTACK_FM_RDMA_MIN");
        const bool rdma_off = v && std::strcmp(v, "0") == 0;
        if (rdma_off) {
            EXPECT_EQ(FM_rdma_bytes(), before) << "VIASTACK_FM_RDMA_MIN=0 turns RDMA off";
        } else if (nodes() > 1) {
            EXPECT_GT(FM_rdma_bytes(), before) << "bodies from other nodes are written in place";
        }
    }
    ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK);
}

// ---- pacing ----------------------------------------------------------------------------
std::vector<std::vector<int>> g_paced;
int g_paced_bad = 0;
void paced_handler(void *buf, unsigned size, unsigned sender) {
    int v;
    std::memcpy(&v, buf, 4);
    for (unsigned i = 4; i < size; i++)
        if (static_cast<uint8_t *>(buf)[i] != uint8_t(v + int(sender) + int(i))) g_paced_bad++;
    g_paced[sender].push_back(v);
}

TEST(FmMp, PacedExtractLosesNothing) {
    // 5 messages per sender: of 8 credits, returned in batches of 4, at least
    // 5 are always at the sender, so it never waits for node 0 (which is in
    // the barrier, not extracting).
    const int kMsgs = 5;
    const unsigned kSize = 700;
    g_paced.assign(nodes(), {});
    if (me() != 0) {
        std::vector<uint8_t> buf(kSize);
        for (int m = 0; m < kMsgs; m++) {
            std::memcpy(buf.data(), &m, 4);
            for (unsigned i = 4; i < kSize; i++) buf[i] = uint8_t(m + int(me()) + int(i));
            ASSERT_EQ(FM_send(0, paced_handler, buf.data(), kSize), FM_OK);
        }
    }
    ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK);
    if (me() == 0) {
        size_t total = 0, want = size_t(kMsgs) * (nodes() - 1);
        while (total < want) {
            const int n = FM_extract(1); // one packet at most
            ASSERT_TRUE(n == 0 || n == int(kSize)) << n;
            size_t now = 0;
            for (auto &v : g_paced) now += v.size();
            ASSERT_EQ(now, total + (n ? 1u : 0u));
            total = now;
        }
        EXPECT_EQ(g_paced_bad, 0);
        for (unsigned s = 1; s < nodes(); s++) {
            ASSERT_EQ(g_paced[s].size(), size_t(kMsgs));
            for (int m = 0; m < kMsgs; m++) EXPECT_EQ(g_paced[s][size_t(m)], m) << "from " << s;
        }
    }
    ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK);
}

// ---- the waiting policy -------------------------------------------------------
// Node 0 polls with FM_extract for a message node 1 sends only after 200 ms.
// Under VIASTACK_WAIT=block the empty polls must end in sleeps in VipCQWait
// (FM_blocked_waits counts them); under spin and yield there are none.
volatile int g_woken = 0;
void wake_handler(void *, unsigned, unsigned) { g_woken = 1; }

TEST(FmMp, WaitPolicyOfAnIdlePoll) {
    if (nodes() < 2) GTEST_SKIP() << "needs two nodes";
    const char *w = std::getenv("VIASTACK_WAIT");
    const bool block = w && std::strcmp(w, "block") == 0;
    g_woken = 0;
    ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK);
    if (me() == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        ASSERT_EQ(FM_send_4(0, wake_handler, 1, 2, 3, 4), FM_OK);
    } else if (me() == 0) {
        const unsigned long long before = FM_blocked_waits();
        while (!g_woken) FM_extract(FM_EXTRACT_ALL);
        const unsigned long long slept = FM_blocked_waits() - before;
        if (block) EXPECT_GT(slept, 0u) << "200 ms of empty polls never slept in VipCQWait";
        else EXPECT_EQ(slept, 0u) << "VIASTACK_WAIT=" << (w ? w : "(unset)") << " must not block";
    }
    ASSERT_EQ(vipl_boot_barrier(), VIPL_BOOT_OK);
}

TEST(FmMp, UnknownDestination) {
    EXPECT_EQ(FM_send_4(nodes(), short_handler, 0, 0, 0, 0), FM_ERR_BAD_DEST);
    EXPECT_EQ(FM_begin_message(nodes() + 100, 1, pair_handler), nullptr);
    EXPECT_EQ(FM_last_error(), FM_ERR_BAD_DEST);
}

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    FM_set_handler(1, pair_handler);
    FM_set_handler(2, long_handler);
    FM_set_buffer_handler(3, short_handler);
    FM_set_buffer_handler(4, paced_handler);
    FM_set_buffer_handler(5, go_handler);
    FM_set_handler(6, body_handler);
    FM_set_buffer_handler(7, go_short_handler);
    FM_set_buffer_handler(8, wake_handler);
    if (FM_initialize() != FM_OK) {
        std::fprintf(stderr, "rank ?: FM_initialize failed\n");
        return 1;
    }
    // Only rank 0 prints gtest's report; a failing rank still exits non-zero.
    if (FM_nodeid() != 0) {
        auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
    }
    int rc = RUN_ALL_TESTS();
    if (FM_finalize() != FM_OK) rc = 1;
    return rc;
}
