// am_mp_test - AM-2 between processes under vipl-run (any N >= 2; CTest runs
// 2, 4 and 8).  Every test is collective: all ranks run the same tests in the
// same order, and end with a barrier so no test's messages leak into the next.
//
// Message counts shrink in thread firmware mode (VIPL_NICFW_MODE=thread),
// where 2N spinning threads share the machine's cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "am.h"
#include "am_spmd.h"
#include "am_test_util.hpp"
#include "vipl_instr.h"

using namespace amtest;

namespace {

constexpr size_t kSegLen = 4 << 20;
uint8_t *g_seg;
eb_t eb;
ep_t ep;
int me, np;
bool slow; // thread firmware mode

int scale(int fast, int slow_value) { return slow ? slow_value : fast; }

class AmMp : public ::testing::Test {
protected:
    // Tests install their handler callbacks, then call start(): a peer's
    // first message must not find the callbacks still unset.
    void SetUp() override { g_refusal = Refusal{}; }
    static void start() { ASSERT_EQ(AM_SPMDBarrier(), AM_OK); }
    void TearDown() override {
        EXPECT_EQ(AM_SPMDBarrier(), AM_OK);
        for (auto &f : g_on) f = nullptr;
    }
};

// Each rank sends every class with every argument count to its right
// neighbour; handlers check arguments and payloads and reply in kind.
TEST_F(AmMp, EveryClassWithZeroToSixteenArguments) {
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    const size_t slice = kSegLen / 4; // [0,1/4) long requests in, [1/2, 3/4) long replies in
    int replies = 0, errors = 0, requests = 0;
    static uint8_t medium_out[AMVIA_MAX_MEDIUM];
    g_on[kShortReq] = [&](const Received &r) {
        en_t src;
        AM_GetSourceEndpoint(r.token, &src);
        for (int i = 0; i < r.nargs; i++) errors += r.args[i] != arg_value(left, r.nargs, i, 1);
        int32_t v[16];
        for (int i = 0; i < r.nargs; i++) v[i] = ~r.args[i];
        errors += reply(r.nargs, r.token, handler_t(kHShortRep + r.nargs), v) != AM_OK;
        requests++;
    };
    g_on[kShortRep] = [&](const Received &r) {
        for (int i = 0; i < r.nargs; i++) errors += r.args[i] != ~arg_value(me, r.nargs, i, 1);
        replies++;
    };
    g_on[kBulkReq] = [&](const Received &r) {
        // args[0]: 0 medium / 1 long; args[1]: payload seed; args[2..]: pattern
        for (int i = 2; i < r.nargs; i++) errors += r.args[i] != arg_value(left, r.nargs, i, 2);
        errors += mismatches(r.buf, r.nbytes, uint32_t(r.args[1])) != 0;
        int32_t v[16];
        for (int i = 0; i < r.nargs; i++) v[i] = r.args[i];
        if (r.args[0] == 0) {
            fill(medium_out, r.nbytes, uint32_t(r.args[1]) ^ 0xffu);
            errors += reply_i(r.nargs, r.token, handler_t(kHBulkRep + r.nargs), medium_out, r.nbytes, v) != AM_OK;
        } else {
            errors += static_cast<uint8_t *>(r.buf) < g_seg || static_cast<uint8_t *>(r.buf) >= g_seg + slice;
            uintptr_t back = 2 * slice + uintptr_t(static_cast<uint8_t *>(r.buf) - g_seg);
            errors += reply_xfer(r.nargs, r.token, handler_t(kHBulkRep + r.nargs), r.buf, r.nbytes, back, v) != AM_OK;
        }
        requests++;
    };
    g_on[kBulkRep] = [&](const Received &r) {
        uint32_t seed = uint32_t(r.args[1]) ^ (r.args[0] == 0 ? 0xffu : 0u);
        errors += mismatches(r.buf, r.nbytes, seed) != 0;
        if (r.args[0] == 1) errors += static_cast<uint8_t *>(r.buf) < g_seg + 2 * slice;
        replies++;
    };
    start();
    std::vector<uint8_t> src(AM_MaxLong());
    int sent = 0;
    for (int n = 0; n <= 16; n++) {
        int32_t v[16];
        for (int i = 0; i < 16; i++) v[i] = arg_value(me, n, i, 1);
        ASSERT_EQ(request(n, ep, right, handler_t(kHShortReq + n), v), AM_OK);
        sent++;
        if (n < 2) continue;
        for (int i = 2; i < 16; i++) v[i] = arg_value(me, n, i, 2);
        v[0] = 0;
        v[1] = 1000 * me + n;
        size_t nb = n == 16 ? AM_MaxMedium() : size_t(n) * 97;
        fill(src.data(), nb, uint32_t(v[1]));
        ASSERT_EQ(request_i(n, ep, right, handler_t(kHBulkReq + n), src.data(), nb, v), AM_OK);
        sent++;
        v[0] = 1;
        v[1] = 1000 * me + 500 + n;
        nb = n == 16 ? AM_MaxLong() : size_t(n) * 1531 + 1;
        fill(src.data(), nb, uint32_t(v[1]));
        uintptr_t off = n == 16 ? slice - AM_MaxLong() : uintptr_t(n) * 8192 + 1;
        ASSERT_EQ(request_xfer(n, ep, right, handler_t(kHBulkReq + n), src.data(), nb, off, v), AM_OK);
        sent++;
        ASSERT_TRUE(poll_until(eb, [&] { return replies == sent; })) // src is reused
            << "n " << n << ": " << replies << " replies to " << sent << " requests, " << requests << " requests in, "
            << errors << " errors";
    }
    ASSERT_TRUE(poll_until(eb, [&] { return replies == sent && requests == sent; }));
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(g_refusal.count, 0);
}

// Rank 0 ping-pongs with every other rank in turn, then every rank with every
// other at once.
TEST_F(AmMp, PingPongWithManyPeers) {
    int pongs = 0, errors = 0;
    g_on[kShortReq] = [&](const Received &r) {
        errors += AM_Reply4(r.token, kHShortRep + 4, r.args[0], r.args[1] + 1, r.args[2], me) != AM_OK;
    };
    int32_t expect_round = 0, expect_peer = 0;
    g_on[kShortRep] = [&](const Received &r) {
        errors += r.args[0] != expect_round || r.args[1] != me + 1 || r.args[3] != expect_peer;
        pongs++;
    };
    const int rounds = scale(200, 10);
    start();
    if (me == 0)
        for (int p = 1; p < np; p++)
            for (int i = 0; i < rounds; i++) {
                expect_round = i;
                expect_peer = p;
                int before = pongs;
                ASSERT_EQ(AM_Request4(ep, p, kHShortReq + 4, i, me, 0, 0), AM_OK);
                ASSERT_TRUE(poll_until(eb, [&] { return pongs == before + 1; }));
            }
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK);
    pongs = 0;
    int counts[64] = {};
    g_on[kShortRep] = [&](const Received &r) {
        errors += r.args[1] != me + 1;
        counts[r.args[3] & 63]++;
        pongs++;
    };
    const int each = scale(50, 4);
    for (int i = 0; i < each; i++)
        for (int d = 1; d < np; d++) {
            int p = (me + d) % np;
            ASSERT_EQ(AM_Request4(ep, p, kHShortReq + 4, i, me, 0, 0), AM_OK);
        }
    ASSERT_TRUE(poll_until(eb, [&] { return pongs == each * (np - 1); }));
    // The others may still be sending to this rank, whose request handler
    // writes `errors`, a local: the fixture's barrier runs after this body has
    // returned, so its polls would call the handler on a dead frame (found by
    // ASan when this rank's own pongs came in first).  Everyone reaches this
    // barrier only once all its requests were answered, so after it none is left.
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK);
    for (int p = 0; p < np && p < 64; p++) EXPECT_EQ(counts[p], p == me ? 0 : each) << "peer " << p;
    EXPECT_EQ(errors, 0);
}

// Everyone floods everyone (far more requests than the k = 8 credits per MAP)
// with handlers that reply with data: senders spend most of the time out of
// credits and must serve the others' requests while they wait.  Nothing may
// deadlock and nothing may be lost.
TEST_F(AmMp, AllToAllWithCreditsExhausted) {
    const int per_peer = scale(120, 24);
    long req_sum = 0, rep_sum = 0;
    int requests = 0, replies = 0, errors = 0;
    g_on[kShortReq] = [&](const Received &r) { // no reply: the layer returns the credit
        req_sum += r.args[1];
        requests++;
    };
    g_on[kBulkReq] = [&](const Received &r) {
        errors += mismatches(r.buf, r.nbytes, uint32_t(r.args[0])) != 0;
        req_sum += r.args[1];
        requests++;
        uint8_t out[64];
        fill(out, sizeof out, uint32_t(r.args[1]));
        errors += AM_ReplyI2(r.token, kHBulkRep + 2, out, sizeof out, r.args[0], r.args[1]) != AM_OK;
    };
    g_on[kBulkRep] = [&](const Received &r) {
        errors += mismatches(r.buf, r.nbytes, uint32_t(r.args[1])) != 0 || r.nbytes != 64;
        rep_sum += r.args[1];
        replies++;
    };
    start();
    uint8_t payload[300];
    long sent_sum = 0;
    int sent_medium = 0;
    for (int i = 0; i < per_peer; i++)
        for (int d = 1; d < np; d++) {
            int p = (me + d) % np;
            int32_t val = me * 100000 + i * 10 + d;
            if (i % 3 == 2) {
                ASSERT_EQ(AM_Request2(ep, p, kHShortReq + 2, 0, val), AM_OK);
            } else {
                fill(payload, sizeof payload, uint32_t(val));
                ASSERT_EQ(AM_RequestI2(ep, p, kHBulkReq + 2, payload, sizeof payload, val, val), AM_OK);
                sent_medium++;
            }
            sent_sum += val;
        }
    ASSERT_TRUE(poll_until(
        eb, [&] { return replies == sent_medium; }, 120));
    // Every rank knows how many requests it is owed: wait for them all.  (The
    // short ones have no reply, so passing the barrier does not mean they were
    // delivered: on a lossy wire a dropped one is resent after the barrier's
    // release has arrived.)
    EXPECT_TRUE(poll_until(
        eb, [&] { return requests == per_peer * (np - 1); }, 120));
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK); // everyone's requests have all been served
    EXPECT_EQ(requests, per_peer * (np - 1));
    // Sum of what everyone sent me = what my handlers saw.
    std::vector<long> sums(size_t(np) * size_t(np));
    std::vector<long> mine(static_cast<size_t>(np));
    for (int i = 0; i < per_peer; i++)
        for (int d = 1; d < np; d++) mine[size_t((me + d) % np)] += me * 100000 + i * 10 + d;
    ASSERT_EQ(AM_SPMDAllGather(mine.data(), sums.data(), sizeof(long) * size_t(np)), AM_OK);
    long expect_in = 0;
    for (int r = 0; r < np; r++) expect_in += sums[size_t(r) * size_t(np) + size_t(me)];
    EXPECT_EQ(req_sum, expect_in);
    long expect_rep = 0;
    for (int i = 0; i < per_peer; i++)
        for (int d = 1; d < np; d++)
            if (i % 3 != 2) expect_rep += me * 100000 + i * 10 + d;
    EXPECT_EQ(rep_sum, expect_rep);
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(g_refusal.count, 0);
}

// A one-way stream of requests without replies gets its credits back in
// batches of k/2, one credit message each (docs/am.md, "Credit return"): the
// target's sends while it serves N requests are at most N/(k/2) batches plus
// one early return per time the requester ran out (at most N/k), and a
// margin.  When a credit message carried at most 4, a stream at k = 32 cost
// N/4 of them.  k: VIASTACK_AM_CREDITS, else the provider's default (32 on
// nicfw, 8 on verbs).  Counted with the instrumentation's am.VipPostSend.
TEST_F(AmMp, OneWayStreamReturnsCreditsInBatchesOfHalfK) {
    const char *ke = std::getenv("VIASTACK_AM_CREDITS");
    const char *prov = std::getenv("VIPL_PROVIDER");
    const char *layout = std::getenv("VIASTACK_AM_LAYOUT");
    const long k_ep = ke ? std::atol(ke) : (prov && std::strcmp(prov, "verbs") == 0 ? 8 : 32);
    // AMVIAv1's short-message VI gets 2k credits (at most 64).
    const long k = layout && std::strcmp(layout, "v1") == 0 ? std::min(2 * k_ep, long(AMVIA_MAX_CREDITS)) : k_ep;
    ASSERT_GE(k, 2);
    const long n = 20 * k;
    const long batch = k / 2;
    int got = 0;
    g_on[kShortReq] = [&](const Received &) { got++; };
    const bool was_on = vipl_instr_enabled();
    vipl_instr_enable(1);
    start();
    vipl_instr_reset(); // the barrier's messages are not counted (a request or two may be served in it)
    if (me == 0) {
        for (long i = 0; i < n; i++) ASSERT_EQ(AM_Request2(ep, 1, kHShortReq + 2, 0, int32_t(i)), AM_OK);
    }
    if (me == 1) {
        ASSERT_TRUE(poll_until(
            eb, [&] { return got == n; }, 120));
        vipl_instr_sample posts{};
        const long sent = vipl_instr_find("am.VipPostSend", &posts) == 0 ? long(posts.count) : 0;
        EXPECT_LE(sent, n / batch + n / k + 2) << "credit messages for " << n << " requests at k = " << k;
        EXPECT_GE(sent, n / batch - 3) << "each batch goes back (or the requester would have stalled)";
    }
    vipl_instr_enable(was_on);
}

// Long messages: many offsets into the peer's segment, AM_MaxLong at the end,
// the asynchronous form, and zero bytes.
TEST_F(AmMp, LongMessagesLandAtTheirOffsets) {
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    int got = 0, errors = 0, replies = 0;
    g_on[kBulkReq] = [&](const Received &r) {
        uintptr_t off = uintptr_t(static_cast<uint8_t *>(r.buf) - g_seg);
        errors += off != uintptr_t(uint32_t(r.args[1])) || r.nbytes != size_t(r.args[2]);
        errors += mismatches(r.buf, r.nbytes, uint32_t(r.args[0] ^ left)) != 0;
        got++;
    };
    g_on[kShortRep] = [&](const Received &) { replies++; };
    start();
    const size_t sizes[] = {0, 1, 7, 64, 4095, 4096, 4097, 30000, size_t(AM_MaxLong())};
    constexpr size_t kSizes = sizeof sizes / sizeof sizes[0];
    // One buffer per message: an asynchronous request's source must stay
    // untouched until the message has been handled.
    std::vector<std::vector<uint8_t>> srcs(kSizes, std::vector<uint8_t>(AM_MaxLong()));
    int sent = 0;
    for (size_t k = 0; k < kSizes; k++) {
        size_t nb = sizes[k];
        uint8_t *src = srcs[k].data();
        uintptr_t off = k == 8 ? kSegLen - nb : k * 100003 % (kSegLen / 2);
        fill(src, nb, uint32_t(int32_t(k) ^ me));
        if (k % 2) {
            ASSERT_EQ(AM_RequestXfer3(ep, right, off, kHBulkReq + 3, src, nb, int32_t(k), int32_t(off), int32_t(nb)),
                      AM_OK);
            std::memset(src, 0xee, nb); // a blocking request's source is free on return
        } else {
            int rc;
            while ((rc = AM_RequestXferAsync3(ep, right, off, kHBulkReq + 3, src, nb, int32_t(k), int32_t(off),
                                              int32_t(nb))) == AM_ERR_IN_USE)
                AM_Poll(eb);
            ASSERT_EQ(rc, AM_OK);
        }
        sent++;
        // >=: the left neighbour may already be a message ahead
        ASSERT_TRUE(poll_until(eb, [&] { return got >= sent; }))
            << "size " << nb << " at " << off << ": got " << got << " of " << sent << ", " << errors << " errors";
    }
    ASSERT_TRUE(poll_until(eb, [&] { return got == sent; }));
    // Once everyone has handled all it was sent, no asynchronous source is
    // being read any more and srcs may go.
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK);
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(replies, 0);
}

// Many asynchronous long messages in flight at once, across 4 KiB and 32 KiB
// (1 byte below, at, above), from AMVIA_AllocMem and plain memory, each from
// a source of its own into a target range of its own, sent without waiting
// for any handler: every byte lands, each handler runs exactly once, in the
// order the messages were sent (a link is one ordered VI).
TEST_F(AmMp, ManyLongMessagesInFlight) {
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    const size_t sizes[] = {4095, 4096, 4097, 32767, 32768, 32769};
    constexpr size_t kSizes = sizeof sizes / sizeof sizes[0];
    const int n = scale(96, 24);
    std::vector<size_t> len(static_cast<size_t>(n)), off(static_cast<size_t>(n));
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        len[size_t(i)] = sizes[size_t(i) % kSizes];
        off[size_t(i)] = total + size_t(i % 7); // odd offsets, disjoint ranges
        total = off[size_t(i)] + len[size_t(i)];
    }
    ASSERT_LE(total, kSegLen);
    std::vector<int> times_run(size_t(n), 0);
    int got = 0, errors = 0, out_of_order = 0;
    g_on[kBulkReq] = [&](const Received &r) {
        const int i = r.args[0];
        if (i < 0 || i >= n) {
            errors++;
            return;
        }
        out_of_order += i != got;
        times_run[size_t(i)]++;
        got++;
        const uintptr_t at = uintptr_t(static_cast<uint8_t *>(r.buf) - g_seg);
        errors += at != off[size_t(i)] || r.nbytes != len[size_t(i)];
        errors += mismatches(r.buf, r.nbytes, uint32_t(i * 131 + left)) != 0;
    };
    start();
    // Half the sources in AMVIA_AllocMem memory (one memcpy on nicfw), half
    // in plain memory (cross-memory attach): a source of its own per message,
    // untouched until its handler has run.
    auto *shm = static_cast<uint8_t *>(AMVIA_AllocMem(total));
    ASSERT_NE(shm, nullptr);
    std::vector<uint8_t> plain(total);
    for (int i = 0; i < n; i++) {
        uint8_t *src = (i % 2 ? shm : plain.data()) + off[size_t(i)];
        fill(src, len[size_t(i)], uint32_t(i * 131 + me));
        int rc;
        while ((rc = AM_RequestXferAsync3(ep, right, off[size_t(i)], kHBulkReq + 3, src, len[size_t(i)], int32_t(i),
                                          int32_t(off[size_t(i)]), int32_t(len[size_t(i)]))) == AM_ERR_IN_USE)
            AM_Poll(eb);
        ASSERT_EQ(rc, AM_OK) << "message " << i;
    }
    ASSERT_TRUE(poll_until(eb, [&] { return got >= n; })) << got << " of " << n << " handled";
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK); // every handler everywhere has run: the sources are free
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(out_of_order, 0);
    EXPECT_EQ(got, n);
    for (int i = 0; i < n; i++) {
        EXPECT_EQ(times_run[size_t(i)], 1) << "message " << i;
        EXPECT_EQ(mismatches(g_seg + off[size_t(i)], len[size_t(i)], uint32_t(i * 131 + left)), 0u)
            << "message " << i << " after every handler ran";
    }
    EXPECT_EQ(AMVIA_FreeMem(shm), AM_OK);
}

// Long messages across nicfw's single-copy crossover (VIPL_NICFW_DMA_MIN,
// default 64 KiB: 1 byte below, at, above) and at AM_MaxLong(), at odd
// offsets, from plain memory (cross-memory attach) and from AMVIA_AllocMem
// memory (one memcpy), blocking and asynchronous; each handler replies with a
// long message of the same bytes back into the sender's segment, from the
// received data in its own segment.
TEST_F(AmMp, LongMessagesAcrossTheBulkCrossover) {
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    const char *env = std::getenv("VIPL_NICFW_DMA_MIN");
    const size_t dma_min = env && std::strtoul(env, nullptr, 0) ? std::strtoul(env, nullptr, 0) : 65536;
    const size_t sizes[] = {dma_min - 1, dma_min, dma_min + 1, size_t(AM_MaxLong()) - 5, size_t(AM_MaxLong())};
    constexpr size_t kSizes = sizeof sizes / sizeof sizes[0];
    const size_t half = kSegLen / 2; // requests land in [0, half), replies in [half, kSegLen)
    int got = 0, replies = 0, errors = 0;
    g_on[kBulkReq] = [&](const Received &r) {
        uintptr_t off = uintptr_t(static_cast<uint8_t *>(r.buf) - g_seg);
        errors += off != uintptr_t(uint32_t(r.args[1])) || r.nbytes != size_t(r.args[2]);
        errors += mismatches(r.buf, r.nbytes, uint32_t(r.args[0] ^ left)) != 0;
        got++;
        errors += AM_ReplyXfer3(r.token, off + half, kHBulkRep + 3, r.buf, r.nbytes, r.args[0], r.args[1], r.args[2]) !=
            AM_OK;
    };
    g_on[kBulkRep] = [&](const Received &r) {
        uintptr_t off = uintptr_t(static_cast<uint8_t *>(r.buf) - g_seg);
        errors += off != uintptr_t(uint32_t(r.args[1])) + half || r.nbytes != size_t(r.args[2]);
        errors += mismatches(r.buf, r.nbytes, uint32_t(r.args[0] ^ me)) != 0;
        replies++;
    };
    start();
    std::vector<uint8_t> plain(AM_MaxLong() + 64);
    auto *shm = static_cast<uint8_t *>(AMVIA_AllocMem(AM_MaxLong() + 64));
    ASSERT_NE(shm, nullptr);
    int sent = 0;
    for (int from_shm = 0; from_shm < 2; from_shm++)
        for (size_t k = 0; k < kSizes; k++) {
            const size_t nb = sizes[k];
            uint8_t *src = (from_shm ? shm : plain.data()) + 1 + k;                               // odd source offsets
            const uintptr_t off = k == kSizes - 1 ? half - nb : 3 + 8 * k + size_t(from_shm) * 7; // odd target offsets
            const int32_t seed = int32_t(k + 16 * size_t(from_shm));
            fill(src, nb, uint32_t(seed ^ me));
            if (k % 2 == 0) {
                ASSERT_EQ(AM_RequestXfer3(ep, right, off, kHBulkReq + 3, src, nb, seed, int32_t(off), int32_t(nb)),
                          AM_OK);
            } else {
                int rc;
                while ((rc = AM_RequestXferAsync3(ep, right, off, kHBulkReq + 3, src, nb, seed, int32_t(off),
                                                  int32_t(nb))) == AM_ERR_IN_USE)
                    AM_Poll(eb);
                ASSERT_EQ(rc, AM_OK);
            }
            sent++;
            // The reply proves the handler ran: an asynchronous source is free again.
            ASSERT_TRUE(poll_until(eb, [&] { return replies >= sent; }))
                << (from_shm ? "AMVIA_AllocMem" : "plain") << " source, " << nb << " bytes at " << off << ": "
                << replies << " replies of " << sent << ", " << errors << " errors";
        }
    ASSERT_TRUE(poll_until(eb, [&] { return got == sent; }));
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK);
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(AMVIA_FreeMem(shm), AM_OK);
    EXPECT_EQ(AMVIA_FreeMem(shm), AM_ERR_BAD_ARG); // not AMVIA_AllocMem memory any more
    EXPECT_EQ(AMVIA_FreeMem(g_seg), AM_ERR_BAD_ARG);
}

// Refusals between processes: wrong tag, AM_NONE, missing handler, segment
// overflow (sender-side), unmapped index.
TEST_F(AmMp, RefusedMessagesGetTheRightStatus) {
    ASSERT_EQ(AM_SetHandler(ep, 0, refusal_handler), AM_OK);
    const int right = (me + 1) % np;
    int ran = 0;
    g_on[kShortReq] = [&](const Received &) { ran++; };
    start();
    en_t rn;
    ASSERT_EQ(AM_GetTranslationName(ep, right, &rn), AM_OK);
    int wrong = np + 3;
    ASSERT_EQ(AM_Map(ep, wrong, rn, AM_SPMDGetTag() + 1), AM_OK);
    ASSERT_EQ(AM_Request1(ep, wrong, kHShortReq + 1, 5), AM_OK);
    ASSERT_TRUE(poll_until(eb, [&] { return g_refusal.count == 1; }));
    EXPECT_EQ(g_refusal.status, EBADTAG);
    EXPECT_EQ(g_refusal.opcode, AM_REQUEST_M);
    EXPECT_EQ(g_refusal.tag, AM_SPMDGetTag() + 1);
    ASSERT_EQ(AM_RequestI0(ep, right, 201, &ran, sizeof ran), AM_OK); // handler 201 is unset
    ASSERT_TRUE(poll_until(eb, [&] { return g_refusal.count == 2; }));
    EXPECT_EQ(g_refusal.status, EBADHANDLER);
    EXPECT_EQ(g_refusal.opcode, AM_REQUEST_IM);
    std::vector<uint8_t> src(100);
    // Checked by the receiver against its current segment: sent, then returned.
    EXPECT_EQ(AM_RequestXfer0(ep, right, kSegLen - 99, kHBulkReq, src.data(), 100), AM_OK);
    ASSERT_TRUE(poll_until(eb, [&] { return g_refusal.count == 3; }));
    EXPECT_EQ(g_refusal.status, EBADLENGTH);
    EXPECT_EQ(AM_Request0(ep, np + 10, kHShortReq), AM_ERR_NOT_SENT);
    EXPECT_EQ(g_refusal.status, EBADENTRY);
    EXPECT_EQ(g_refusal.count, 4);
    ASSERT_EQ(AM_UnMap(ep, wrong), AM_OK);
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK);
    // AM_NONE at the receiver refuses the correct tag too; AM_ALL takes anything.
    ASSERT_EQ(AM_SetTag(ep, AM_NONE), AM_OK);
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK);
    ASSERT_EQ(AM_Request0(ep, right, kHShortReq), AM_OK);
    ASSERT_TRUE(poll_until(eb, [&] { return g_refusal.count == 5; }));
    EXPECT_EQ(g_refusal.status, EBADTAG);
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK);
    ASSERT_EQ(AM_SetTag(ep, AM_ALL), AM_OK);
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK);
    ASSERT_EQ(AM_Map(ep, wrong, rn, 0xdeadbeef), AM_OK);
    ASSERT_EQ(AM_Request0(ep, wrong, kHShortReq), AM_OK);
    ASSERT_TRUE(poll_until(eb, [&] { return ran == 1; }));
    ASSERT_EQ(AM_UnMap(ep, wrong), AM_OK);
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK);
    ASSERT_EQ(AM_SetTag(ep, AM_SPMDGetTag()), AM_OK);
    EXPECT_EQ(g_refusal.count, 5);
    EXPECT_EQ(ran, 1);
}

// Every rank moves its segment, the job synchronises by non-AM means
// (AM_SPMDAllGather), and the first long message to each peer must land in
// the peer's new segment: no refusal, no AM_ERR_NOT_SENT.  Then back again.
TEST_F(AmMp, LongMessagesFollowAPeersAM_SetSeg) {
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    int got = 0, errors = 0;
    void *where = nullptr;
    g_on[kBulkReq] = [&](const Received &r) {
        where = r.buf;
        errors += r.nbytes != 1000 || mismatches(r.buf, r.nbytes, uint32_t(left)) != 0;
        got++;
    };
    ASSERT_EQ(AM_SetHandler(ep, 0, refusal_handler), AM_OK);
    start();
    const size_t big_len = 2 * kSegLen;
    std::vector<uint8_t> big(big_len), src(1000);
    fill(src.data(), src.size(), uint32_t(me));
    int dummy = me, all[64];
    // No segment for a while (peers learn it while they poll in the barrier),
    // then a first segment, announced by nothing but the AllGather.
    ASSERT_EQ(AM_SetSeg(ep, nullptr, 0), AM_OK);
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK);
    ASSERT_EQ(AM_SetSeg(ep, big.data(), big_len), AM_OK);
    ASSERT_EQ(AM_SPMDAllGather(&dummy, all, sizeof dummy), AM_OK);
    ASSERT_EQ(AM_RequestXfer1(ep, right, kSegLen + 4096, kHBulkReq + 1, src.data(), src.size(), 1), AM_OK);
    ASSERT_TRUE(poll_until(eb, [&] { return got == 1; }));
    EXPECT_EQ(where, big.data() + kSegLen + 4096);
    ASSERT_EQ(AM_SetSeg(ep, g_seg, kSegLen), AM_OK);
    ASSERT_EQ(AM_SPMDAllGather(&dummy, all, sizeof dummy), AM_OK);
    ASSERT_EQ(AM_RequestXfer1(ep, right, 4096, kHBulkReq + 1, src.data(), src.size(), 1), AM_OK);
    ASSERT_TRUE(poll_until(eb, [&] { return got == 2; }));
    EXPECT_EQ(where, g_seg + 4096);
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(g_refusal.count, 0);
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK); // nobody writes into big any more
}

// Mediums of AM_MaxMedium() bytes (>= 65000, as AMUDP/AMMPI) between processes,
// everyone to everyone at once.
TEST_F(AmMp, MaxMediumsBetweenProcesses) {
    ASSERT_GE(AM_MaxMedium(), 65000);
    // Over verbs this failed (replies with stale bytes) when an earlier test's
    // bounce ring had been freed and a new one landed at the same address: the
    // registration cache still held a memory region pinning the old pages.
    int replies = 0, requests = 0, errors = 0;
    // A wrong payload: which message's bytes is it carrying (seed = sender*1000 + i*10 + d)?
    auto check = [&](const Received &r, const char *what) {
        size_t bad = mismatches(r.buf, r.nbytes, uint32_t(r.args[0]));
        if (r.nbytes == size_t(AM_MaxMedium()) && bad == 0) return 0;
        int carried = -1;
        for (int s = 0; s < np * 1000 && carried < 0; s++)
            if (mismatches(r.buf, 64, uint32_t(s)) == 0) carried = s;
        ADD_FAILURE() << what << " seed " << r.args[0] << " at " << r.buf << ": " << bad << " of " << r.nbytes
                      << " bytes wrong; the first 64 carry seed " << carried;
        return 1;
    };
    g_on[kBulkReq] = [&](const Received &r) {
        errors += check(r, "request");
        requests++;
        errors += AM_ReplyI1(r.token, kHBulkRep + 1, r.buf, r.nbytes, r.args[0]) != AM_OK;
    };
    g_on[kBulkRep] = [&](const Received &r) {
        errors += check(r, "reply");
        replies++;
    };
    start();
    std::vector<uint8_t> src(AM_MaxMedium());
    const int each = scale(20, 3);
    for (int i = 0; i < each; i++)
        for (int d = 1; d < np; d++) {
            int32_t seed = me * 1000 + i * 10 + d;
            fill(src.data(), src.size(), uint32_t(seed));
            ASSERT_EQ(AM_RequestI1(ep, (me + d) % np, kHBulkReq + 1, src.data(), src.size(), seed), AM_OK);
        }
    ASSERT_TRUE(poll_until(
        eb, [&] { return replies == each * (np - 1); }, 120));
    ASSERT_EQ(AM_SPMDBarrier(), AM_OK);
    EXPECT_EQ(requests, each * (np - 1));
    EXPECT_EQ(errors, 0);
}

// Rank 1 blocks in AM_WaitSema; rank 0 sends only after a pause.  Rank 1 must
// wake (not before the message) and find it with AM_Poll.
TEST_F(AmMp, WaitSemaWakesWhenAMessageArrives) {
    int ran = 0;
    g_on[kShortReq] = [&](const Received &r) { ran += r.args[0] == 4242; };
    start();
    if (me == 1) {
        ASSERT_EQ(AM_SetEventMask(eb, AM_NOTEMPTY), AM_OK);
        auto t0 = std::chrono::steady_clock::now();
        ASSERT_EQ(AM_WaitSema(eb), AM_OK);
        double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // rank 0 waits 0.2 s before sending; the ranks leave start() at slightly
        // different times, so only check that rank 1 really blocked.
        EXPECT_GT(waited, 0.05);
        ASSERT_TRUE(poll_until(
            eb, [&] { return ran == 1; }, 10));
    } else if (me == 0) {
        // The pause is the scenario: rank 1 must already be blocked in
        // AM_WaitSema when the message is sent, and no state rank 0 can
        // observe shows that another process sleeps.
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        ASSERT_EQ(AM_Request1(ep, 1, kHShortReq + 1, 4242), AM_OK);
    } // TearDown's barrier keeps polling until rank 1 is through
}

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    const char *mode = std::getenv("VIPL_NICFW_MODE");
    slow = mode && std::strcmp(mode, "thread") == 0;
    g_seg = static_cast<uint8_t *>(std::aligned_alloc(4096, kSegLen));
    std::memset(g_seg, 0, kSegLen);
    if (AM_SPMDStartupSeg(&argc, &argv, g_seg, kSegLen, &eb, &ep) != AM_OK) return 1;
    me = AM_SPMDMyProc();
    np = AM_SPMDNumProcs();
    set_all_handlers(ep);
    if (np < 2) {
        std::fprintf(stderr, "am_mp_test needs at least 2 processes (vipl-run -n N)\n");
        AM_SPMDExit(1);
    }
    // Every rank prints its report (the launcher tags lines by rank); every
    // rank's result decides the job's exit code.
    int rc = RUN_ALL_TESTS();
    AM_SPMDExit(rc);
}
