// fm_unit_test - Fast Messages in a job of one: every message goes to this
// node over the self-connection.  Streams with mismatched piece sizes, a
// message longer than the credits (the sender extracts while it waits),
// pacing with FM_extract(maxbytes), a handler suspended in FM_receive and
// resumed, FM 1.x calls, and each bad input's error code.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "fm.h"

namespace {

int g_not_init_rc = 0; // FM_extract before FM_initialize (main)

uint8_t pattern(uint32_t i, uint32_t seed) { return uint8_t((i * 131u + seed * 7u) ^ (i >> 8)); }

// ---- stream with mismatched pieces ------------------------------------------
std::vector<uint32_t> g_recv_pieces;
uint32_t g_stream_len = 0, g_stream_seed = 0;
int g_stream_ok = 0, g_stream_bad = 0;

int piece_handler(FM_stream *s, unsigned sender) {
    std::vector<uint8_t> got(g_stream_len);
    uint32_t off = 0;
    for (size_t k = 0; off < g_stream_len; k++) {
        uint32_t n = std::min(g_recv_pieces[k % g_recv_pieces.size()], g_stream_len - off);
        if (FM_receive(got.data() + off, s, n) != FM_OK) {
            g_stream_bad++;
            return FM_CONTINUE;
        }
        off += n;
    }
    // Nothing is left: one more byte is too many.
    uint8_t extra;
    if (FM_receive(&extra, s, 1) != FM_ERR_TOO_LONG) g_stream_bad++;
    for (uint32_t i = 0; i < g_stream_len; i++)
        if (got[i] != pattern(i, g_stream_seed)) {
            g_stream_bad++;
            return FM_CONTINUE;
        }
    if (sender != FM_nodeid()) g_stream_bad++;
    g_stream_ok++;
    return FM_CONTINUE;
}

void send_pieces(uint32_t len, uint32_t seed, const std::vector<uint32_t> &pieces) {
    std::vector<uint8_t> msg(len);
    for (uint32_t i = 0; i < len; i++) msg[i] = pattern(i, seed);
    FM_stream *s = FM_begin_message(FM_nodeid(), len, piece_handler);
    ASSERT_NE(s, nullptr) << FM_error_name(FM_last_error());
    uint32_t off = 0;
    for (size_t k = 0; off < len; k++) {
        uint32_t n = std::min(pieces[k % pieces.size()], len - off);
        ASSERT_EQ(FM_send_piece(s, msg.data() + off, n), FM_OK);
        off += n;
    }
    ASSERT_EQ(FM_end_message(s), FM_OK);
}

void run_stream_case(uint32_t len, const std::vector<uint32_t> &send, const std::vector<uint32_t> &recv) {
    g_recv_pieces = recv;
    g_stream_len = len;
    g_stream_seed = len;
    int before = g_stream_ok;
    send_pieces(len, len, send);
    while (g_stream_ok == before && g_stream_bad == 0) FM_extract(FM_EXTRACT_ALL);
    EXPECT_EQ(g_stream_bad, 0);
    EXPECT_EQ(g_stream_ok, before + 1);
    EXPECT_EQ(FM_suspended_handlers(), 0u);
}

TEST(FmUnit, NotInitialized) { EXPECT_EQ(g_not_init_rc, FM_ERR_NOT_INIT); }

TEST(FmUnit, StreamMismatchedPiecesShort) { run_stream_case(100, {1, 7, 13}, {50, 3, 47}); }

TEST(FmUnit, StreamMismatchedPiecesAcrossPackets) {
    // Several packets; pieces straddle packet boundaries on both sides.
    run_stream_case(5 * FM_max_buffer_message() + 17, {1, 333, 2049, 5}, {4095, 2, 777});
}

TEST(FmUnit, StreamLongerThanCredits) {
    // 64 packets with 8 credits: FM_send_piece waits for credits, extracting
    // meanwhile, so the handler starts, consumes, suspends and is resumed
    // while the message is still being sent.
    run_stream_case(64 * FM_max_buffer_message(), {10000}, {3, 65536});
}

TEST(FmUnit, EmptyMessage) { run_stream_case(0, {1}, {1}); }

// ---- a handler that reads only part of its message ----------------------------
int g_partial_done = 0;
int partial_handler(FM_stream *s, unsigned) {
    uint32_t first;
    if (FM_receive(&first, s, sizeof first) == FM_OK && first == 0xabcdef01u) g_partial_done++;
    return FM_CONTINUE; // the rest is discarded
}

TEST(FmUnit, UnreadBytesAreDiscarded) {
    const uint32_t len = 3 * FM_max_buffer_message();
    std::vector<uint8_t> msg(len, 0x5a);
    const uint32_t first = 0xabcdef01u;
    std::memcpy(msg.data(), &first, 4);
    for (int round = 0; round < 3; round++) {
        FM_stream *s = FM_begin_message(FM_nodeid(), len, partial_handler);
        ASSERT_NE(s, nullptr);
        ASSERT_EQ(FM_send_piece(s, msg.data(), len), FM_OK);
        ASSERT_EQ(FM_end_message(s), FM_OK);
    }
    while (g_partial_done < 3) FM_extract(FM_EXTRACT_ALL);
    // The next message starts clean.
    run_stream_case(1000, {100}, {10});
}

// ---- pacing ----------------------------------------------------------------------
std::vector<int> g_paced;
void paced_handler(void *buf, unsigned size, unsigned) {
    int v;
    std::memcpy(&v, buf, sizeof v);
    for (unsigned i = 4; i < size; i++)
        if (static_cast<uint8_t *>(buf)[i] != uint8_t(v + i)) v = -1;
    g_paced.push_back(v);
}

TEST(FmUnit, ExtractMaxbytesLeavesTheRestQueued) {
    // 5 one-packet messages of 1000 bytes: with 8 credits returned in batches
    // of 4, at least 8 - 3 credits are always here, so sending never waits
    // (and never extracts).
    g_paced.clear();
    // Credit packets of the earlier tests may still be on the way (thread
    // firmware mode moves them asynchronously): let them land first, so the
    // credits the comment counts on are here.
    for (auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
         std::chrono::steady_clock::now() < end;)
        FM_extract(FM_EXTRACT_ALL);
    std::vector<uint8_t> buf(1000);
    for (int m = 0; m < 5; m++) {
        std::memcpy(buf.data(), &m, 4);
        for (unsigned i = 4; i < buf.size(); i++) buf[i] = uint8_t(m + int(i));
        ASSERT_EQ(FM_send(FM_nodeid(), paced_handler, buf.data(), unsigned(buf.size())), FM_OK);
    }
    EXPECT_TRUE(g_paced.empty());
    // Whole packets, at least one: 1 byte asked processes one message.
    int got = 0;
    while ((got = FM_extract(1)) == 0) {}
    EXPECT_EQ(got, 1000);
    EXPECT_EQ(g_paced.size(), 1u);
    // 2500 bytes: three packets (the third crosses the limit), not more.
    int total = 0;
    while (total < 2500) {
        int n = FM_extract(2500 - unsigned(total));
        ASSERT_GE(n, 0);
        total += n;
    }
    EXPECT_EQ(total, 3000);
    EXPECT_EQ(g_paced.size(), 4u);
    while (g_paced.size() < 5) FM_extract(FM_EXTRACT_ALL);
    ASSERT_EQ(g_paced.size(), 5u);
    for (int m = 0; m < 5; m++) EXPECT_EQ(g_paced[size_t(m)], m) << "in order, intact";
}

// ---- suspension observed ------------------------------------------------------------
int g_susp_done = 0;
int whole_handler(FM_stream *s, unsigned) {
    std::vector<uint8_t> all(3 * FM_max_buffer_message());
    if (FM_receive(all.data(), s, unsigned(all.size())) == FM_OK && all.front() == 1 && all.back() == 3) g_susp_done++;
    return FM_CONTINUE;
}

TEST(FmUnit, HandlerSuspendsUntilBytesArrive) {
    const uint32_t pk = FM_max_buffer_message();
    std::vector<uint8_t> msg(3 * pk);
    std::memset(msg.data(), 1, pk);
    std::memset(msg.data() + pk, 2, pk);
    std::memset(msg.data() + 2 * pk, 3, pk);
    FM_stream *s = FM_begin_message(FM_nodeid(), unsigned(msg.size()), whole_handler);
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(FM_send_piece(s, msg.data(), unsigned(msg.size())), FM_OK);
    ASSERT_EQ(FM_end_message(s), FM_OK);
    // Packet by packet (FM_extract(1) takes one): after each packet but the
    // last the handler has started, copied what is there and waits for the
    // rest, suspended.  Sending itself may have extracted the first packets:
    // a send that waits for credits extracts everything that has arrived, and
    // with the firmware on its own thread (or a real device) the credits of
    // the earlier tests may still be on their way when this one starts.
    bool saw_suspended = FM_suspended_handlers() == 1 && g_susp_done == 0;
    int packets = 0;
    while (g_susp_done == 0) {
        if (FM_extract(1) <= 0) continue;
        ++packets;
        if (g_susp_done == 0) {
            EXPECT_EQ(FM_suspended_handlers(), 1u) << "after packet " << packets << " of the test's extraction";
            saw_suspended = true;
        }
    }
    EXPECT_TRUE(saw_suspended) << "the handler never waited for the rest of its message";
    EXPECT_LE(packets, 3);
    EXPECT_EQ(FM_suspended_handlers(), 0u);
    EXPECT_EQ(g_susp_done, 1);
}

// ---- FM 1.x ---------------------------------------------------------------------------
int g_words[4], g_words_n = 0;
unsigned g_words_size = 0;
void words_handler(void *buf, unsigned size, unsigned) {
    std::memcpy(g_words, buf, sizeof g_words);
    g_words_size = size;
    g_words_n++;
}

TEST(FmUnit, Send4AndSend) {
    ASSERT_EQ(FM_send_4(FM_nodeid(), words_handler, 1, -2, 3, -4), FM_OK);
    while (g_words_n == 0) FM_extract(FM_EXTRACT_ALL);
    EXPECT_EQ(g_words_size, 16u);
    EXPECT_EQ(g_words[0], 1);
    EXPECT_EQ(g_words[1], -2);
    EXPECT_EQ(g_words[2], 3);
    EXPECT_EQ(g_words[3], -4);
    const int w[4] = {9, 8, 7, 6};
    ASSERT_EQ(FM_send(FM_nodeid(), words_handler, w, sizeof w), FM_OK);
    while (g_words_n == 1) FM_extract(FM_EXTRACT_ALL);
    EXPECT_EQ(g_words[3], 6);
}

// ---- bad input ----------------------------------------------------------------------
int unregistered(FM_stream *, unsigned) { return FM_CONTINUE; }
void unregistered_buf(void *, unsigned, unsigned) {}
FM_stream *g_inbound_seen = nullptr;
int keep_stream(FM_stream *s, unsigned) {
    g_inbound_seen = s;
    return FM_CONTINUE;
}

TEST(FmUnit, BadInputHasClearCodes) {
    const unsigned me = FM_nodeid();
    EXPECT_EQ(FM_begin_message(FM_numnodes(), 4, piece_handler), nullptr);
    EXPECT_EQ(FM_last_error(), FM_ERR_BAD_DEST);
    EXPECT_EQ(FM_send_4(FM_numnodes() + 5, words_handler, 0, 0, 0, 0), FM_ERR_BAD_DEST);
    EXPECT_EQ(FM_begin_message(me, 4, unregistered), nullptr);
    EXPECT_EQ(FM_last_error(), FM_ERR_UNKNOWN_HANDLER);
    EXPECT_EQ(FM_begin_message(me, 4, nullptr), nullptr);
    EXPECT_EQ(FM_last_error(), FM_ERR_UNKNOWN_HANDLER);
    EXPECT_EQ(FM_send_4(me, unregistered_buf, 0, 0, 0, 0), FM_ERR_UNKNOWN_HANDLER);
    // A stream handler is not a buffer handler.
    EXPECT_EQ(FM_send(me, reinterpret_cast<FM_buffer_handler>(reinterpret_cast<void (*)()>(piece_handler)), "x", 1),
              FM_ERR_UNKNOWN_HANDLER);
    std::vector<uint8_t> big(FM_max_buffer_message() + 1);
    EXPECT_EQ(FM_send(me, words_handler, big.data(), unsigned(big.size())), FM_ERR_TOO_LONG);
    EXPECT_EQ(FM_send(me, words_handler, nullptr, 4), FM_ERR_BAD_ARG);
    EXPECT_EQ(FM_begin_message(me, 0x80000000u, piece_handler), nullptr);
    EXPECT_EQ(FM_last_error(), FM_ERR_TOO_LONG);
    EXPECT_EQ(FM_set_handler(FM_MAX_HANDLERS, piece_handler), FM_ERR_BAD_ARG);
    EXPECT_EQ(FM_set_handler(7, nullptr), FM_ERR_BAD_ARG);

    FM_stream *s = FM_begin_message(me, 8, keep_stream);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(FM_send_piece(s, nullptr, 4), FM_ERR_BAD_ARG);
    EXPECT_EQ(FM_send_piece(s, "123456789", 9), FM_ERR_TOO_LONG) << "more than announced";
    EXPECT_EQ(FM_send_piece(s, "1234", 4), FM_OK);
    EXPECT_EQ(FM_end_message(s), FM_ERR_STATE) << "4 of 8 bytes";
    EXPECT_EQ(FM_receive(big.data(), s, 1), FM_ERR_BAD_ARG) << "a sending stream";
    EXPECT_EQ(FM_send_piece(s, "5678", 4), FM_OK);
    EXPECT_EQ(FM_end_message(s), FM_OK);
    EXPECT_EQ(FM_end_message(s), FM_ERR_STATE) << "already ended";
    while (!g_inbound_seen) FM_extract(FM_EXTRACT_ALL);
    char c;
    EXPECT_EQ(FM_receive(&c, g_inbound_seen, 1), FM_ERR_STATE) << "outside its handler";
    EXPECT_EQ(FM_receive(&c, nullptr, 1), FM_ERR_BAD_ARG);
    EXPECT_EQ(FM_send_piece(nullptr, "x", 1), FM_ERR_BAD_ARG);
}

TEST(FmUnit, FinalizeRefusesAnOpenMessage) {
    FM_stream *s = FM_begin_message(FM_nodeid(), 2, keep_stream);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(FM_finalize(), FM_ERR_STATE);
    ASSERT_EQ(FM_send_piece(s, "ok", 2), FM_OK);
    ASSERT_EQ(FM_end_message(s), FM_OK);
}

TEST(FmUnit, OpenStreamsAreLimited) {
    std::vector<FM_stream *> open;
    FM_stream *s;
    while ((s = FM_begin_message(FM_nodeid(), 1, keep_stream)) != nullptr) open.push_back(s);
    EXPECT_EQ(FM_last_error(), FM_ERR_RESOURCE);
    EXPECT_GE(open.size(), 1u);
    for (FM_stream *o : open) {
        ASSERT_EQ(FM_send_piece(o, "z", 1), FM_OK);
        ASSERT_EQ(FM_end_message(o), FM_OK);
    }
}

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    g_not_init_rc = FM_extract(FM_EXTRACT_ALL);
    FM_set_handler(1, piece_handler);
    FM_set_handler(2, partial_handler);
    FM_set_handler(3, whole_handler);
    FM_set_handler(4, keep_stream);
    FM_set_buffer_handler(10, paced_handler);
    FM_set_buffer_handler(11, words_handler);
    if (FM_initialize() != FM_OK) {
        std::fprintf(stderr, "FM_initialize failed\n");
        return 1;
    }
    int rc = RUN_ALL_TESTS();
    if (FM_finalize() != FM_OK) rc = 1;
    return rc;
}
