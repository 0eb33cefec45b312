// am_unit_test - one process, no launcher: the API surface (constants, argument
// checking, translation and handler tables) and every message class through a
// self-mapped endpoint (the NIC connects the MAP's VI to a second VI of the
// same NIC).  Both AMVIA layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

#include "am.h"
#include "vipl.h"
#include "am_test_util.hpp"

using namespace amtest;

namespace {

constexpr tag_t kTag = 0x1234abcd5678ull;
constexpr size_t kSegLen = 4 << 20; // room for AM_MaxLong() (1 MiB) and its reply

TEST(AmConstants, MatchTheAm2Headers) {
    EXPECT_EQ(AM_OK, 0);
    EXPECT_EQ(AM_ERR_NOT_INIT, 1);
    EXPECT_EQ(AM_ERR_BAD_ARG, 2);
    EXPECT_EQ(AM_ERR_RESOURCE, 3);
    EXPECT_EQ(AM_ERR_NOT_SENT, 4);
    EXPECT_EQ(AM_ERR_IN_USE, 5);
    const int statuses[] = {EBADARGS,   EBADENTRY,    EBADTAG,     EBADHANDLER,  EBADSEGOFF,
                            EBADLENGTH, EBADENDPOINT, ECONGESTION, EUNREACHABLE, EREPLYREJECTED};
    for (int i = 0; i < 10; i++) EXPECT_EQ(statuses[i], i + 1);
    EXPECT_EQ(AM_REQUEST_M, 1);
    EXPECT_EQ(AM_REQUEST_IM, 2);
    EXPECT_EQ(AM_REQUEST_XFER_M, 3);
    EXPECT_EQ(AM_REPLY_M, 4);
    EXPECT_EQ(AM_REPLY_IM, 5);
    EXPECT_EQ(AM_REPLY_XFER_M, 6);
    EXPECT_EQ(AM_NONE, 0);
    EXPECT_EQ(AM_ALL, 1);
    EXPECT_EQ(int(AM_SEQ), 0);
    EXPECT_EQ(int(AM_PAR), 1);
    EXPECT_EQ(int(AM_NOEVENTS), 0);
    EXPECT_EQ(int(AM_NOTEMPTY), 1);
    EXPECT_EQ(sizeof(tag_t), 8u);
    EXPECT_GE(AM_MaxNumHandlers(), 256);
    EXPECT_EQ(AM_MaxShort(), 16);
    EXPECT_GE(AM_MaxMedium(), 512);
    EXPECT_GE(AM_MaxLong(), 8192);
}

TEST(AmInit, CallsBeforeInitAreRefused) {
    eb_t eb;
    EXPECT_EQ(AM_AllocateBundle(AM_SEQ, &eb), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_Terminate(), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_Request0(nullptr, 0, 1), AM_ERR_NOT_INIT);
    ASSERT_EQ(AM_Init(), AM_OK);
    ASSERT_EQ(AM_Init(), AM_OK); // idempotent
    EXPECT_EQ(AM_Terminate(), AM_OK);
    EXPECT_EQ(AM_Terminate(), AM_ERR_NOT_INIT);
}

class AmLoop : public ::testing::TestWithParam<int> {
protected:
    eb_t eb{};
    ep_t ep{};
    en_t name{};
    std::vector<uint8_t> seg = std::vector<uint8_t>(kSegLen);

    void SetUp() override {
        ASSERT_EQ(AM_Init(), AM_OK);
        ASSERT_EQ(AMVIA_SetLayout(GetParam()), AM_OK);
        ASSERT_EQ(AM_AllocateBundle(AM_SEQ, &eb), AM_OK);
        ASSERT_EQ(AM_AllocateEndpoint(eb, &ep, &name), AM_OK);
        ASSERT_EQ(AM_SetTag(ep, kTag), AM_OK);
        ASSERT_EQ(AM_SetSeg(ep, seg.data(), seg.size()), AM_OK);
        ASSERT_EQ(AM_Map(ep, 0, name, kTag), AM_OK);
        ASSERT_EQ(AM_SetHandler(ep, 0, refusal_handler), AM_OK);
        set_all_handlers(ep);
        g_refusal = Refusal{};
        for (auto &f : g_on) f = nullptr;
    }
    void TearDown() override {
        for (auto &f : g_on) f = nullptr;
        EXPECT_EQ(AM_Terminate(), AM_OK);
    }
};

TEST_P(AmLoop, BadArgumentsGetReturnCodes) {
    eb_t eb2;
    {
        // AM_PAR: granted exactly when the NIC says it is thread safe.
        VIP_NIC_ATTRIBUTES attr{};
        ASSERT_EQ(VipQueryNic(static_cast<VIP_NIC_HANDLE>(AMVIA_NicHandle()), &attr), VIP_SUCCESS);
        const int par = AM_AllocateBundle(AM_PAR, &eb2);
        EXPECT_EQ(par, attr.ThreadSafe == VIP_TRUE ? AM_OK : AM_ERR_RESOURCE);
        if (par == AM_OK) EXPECT_EQ(AM_FreeBundle(eb2), AM_OK);
    }
    EXPECT_EQ(AM_AllocateBundle(7, &eb2), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_AllocateBundle(AM_SEQ, nullptr), AM_ERR_BAD_ARG);
    ep_t ep2;
    EXPECT_EQ(AM_AllocateEndpoint(nullptr, &ep2, &name), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetSeg(ep, nullptr, 10), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_Map(ep, -1, name, kTag), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_Map(ep, 0, name, kTag), AM_ERR_RESOURCE); // in use
    EXPECT_EQ(AM_SetEventMask(eb, 9), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_WaitSema(eb), AM_ERR_BAD_ARG); // AM_NOEVENTS would never wake
    EXPECT_EQ(AM_Poll(nullptr), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetExpectedResources(ep, 1, -1), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetExpectedResources(ep, 1, 1000), AM_OK); // granted as AMVIA_MAX_CREDITS
    int32_t v[16] = {};
    EXPECT_EQ(AM_Request0(ep, 0, 0), AM_ERR_BAD_ARG);     // handler 0 is the error handler
    EXPECT_EQ(AM_Request0(ep, 9999, 10), AM_ERR_BAD_ARG); // index outside the table
    EXPECT_EQ(AMVIA_Request(ep, 0, 10, 17, v), AM_ERR_BAD_ARG);
    std::vector<uint8_t> big(AM_MaxMedium() + 1);
    EXPECT_EQ(AM_RequestI0(ep, 0, 50, big.data(), big.size()), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_RequestXfer0(ep, 0, 0, 50, big.data(), size_t(AM_MaxLong()) + 1), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_Reply0(nullptr, 30), AM_ERR_BAD_ARG);
    EXPECT_EQ(g_refusal.count, 0);
}

TEST_P(AmLoop, TranslationTable) {
    int ntrans = 0;
    ASSERT_EQ(AM_GetNumTranslations(ep, &ntrans), AM_OK);
    EXPECT_EQ(ntrans, AMVIA_MAX_NUMTRANSLATIONS);
    EXPECT_EQ(AM_GetTranslationInuse(ep, 0), AM_OK);
    EXPECT_EQ(AM_GetTranslationInuse(ep, 1), AM_ERR_RESOURCE);
    tag_t t = 0;
    ASSERT_EQ(AM_GetTranslationTag(ep, 0, &t), AM_OK);
    EXPECT_EQ(t, kTag);
    en_t n2{};
    ASSERT_EQ(AM_GetTranslationName(ep, 0, &n2), AM_OK);
    EXPECT_EQ(n2.id, name.id);
    int idx = -1;
    ASSERT_EQ(AM_MapAny(ep, &idx, name, kTag + 1), AM_OK);
    EXPECT_EQ(idx, 1);
    ASSERT_EQ(AM_UnMap(ep, 1), AM_OK);
    EXPECT_EQ(AM_UnMap(ep, 1), AM_ERR_RESOURCE);
    EXPECT_EQ(AM_SetNumTranslations(ep, 1024), AM_OK);
    ASSERT_EQ(AM_GetNumTranslations(ep, &ntrans), AM_OK);
    EXPECT_EQ(ntrans, 1024);
    EXPECT_EQ(AM_Map(ep, 1000, name, kTag), AM_OK);
    EXPECT_EQ(AM_SetNumTranslations(ep, 500), AM_ERR_RESOURCE); // 1000 is mapped
    handler_t h = 0;
    ASSERT_EQ(AM_SetHandlerAny(ep, &h, refusal_handler), AM_OK);
    EXPECT_EQ(h, 1); // 1..9 are free in this suite's layout
    tag_t mine = 0;
    ASSERT_EQ(AM_GetTag(ep, &mine), AM_OK);
    EXPECT_EQ(mine, kTag);
    void *base;
    uintptr_t len;
    ASSERT_EQ(AM_GetSeg(ep, &base, &len), AM_OK);
    EXPECT_EQ(base, seg.data());
    EXPECT_EQ(len, kSegLen);
}

// Every N for short, medium and long, each request answered with a reply of the same class.
TEST_P(AmLoop, EveryClassAndArgumentCountRoundTrips) {
    int replies = 0, errors = 0;
    static uint8_t medium_out[AMVIA_MAX_MEDIUM];
    g_on[kShortReq] = [&](const Received &r) {
        for (int i = 0; i < r.nargs; i++) errors += r.args[i] != arg_value(1, r.nargs, i, 0);
        int32_t v[16];
        for (int i = 0; i < r.nargs; i++) v[i] = r.args[i] + 1;
        errors += reply(r.nargs, r.token, handler_t(kHShortRep + r.nargs), v) != AM_OK;
    };
    g_on[kShortRep] = [&](const Received &r) {
        for (int i = 0; i < r.nargs; i++) errors += r.args[i] != arg_value(1, r.nargs, i, 0) + 1;
        replies++;
    };
    g_on[kBulkReq] = [&](const Received &r) {
        // args[0] = 0 medium, 1 long; args[1] = seed; the rest patterned
        for (int i = 2; i < r.nargs; i++) errors += r.args[i] != arg_value(2, r.nargs, i, 0);
        errors += mismatches(r.buf, r.nbytes, uint32_t(r.args[1])) != 0;
        int32_t v[16];
        for (int i = 0; i < r.nargs; i++) v[i] = r.args[i];
        if (r.args[0] == 0) {
            fill(medium_out, r.nbytes, uint32_t(r.args[1]) + 1);
            errors += reply_i(r.nargs, r.token, handler_t(kHBulkRep + r.nargs), medium_out, r.nbytes, v) != AM_OK;
        } else {
            // Long reply: the received bytes go back into the second half of the segment.
            uintptr_t back = kSegLen / 2 + (uintptr_t(static_cast<uint8_t *>(r.buf) - seg.data()));
            errors += reply_xfer(r.nargs, r.token, handler_t(kHBulkRep + r.nargs), r.buf, r.nbytes, back, v) != AM_OK;
        }
    };
    g_on[kBulkRep] = [&](const Received &r) {
        uint32_t seed = uint32_t(r.args[1]) + (r.args[0] == 0 ? 1 : 0);
        errors += mismatches(r.buf, r.nbytes, seed) != 0;
        if (r.args[0] == 1) errors += static_cast<uint8_t *>(r.buf) < seg.data() + kSegLen / 2;
        replies++;
    };
    int expected = 0;
    std::vector<uint8_t> src(AM_MaxLong());
    for (int n = 0; n <= 16; n++) {
        int32_t v[16];
        for (int i = 0; i < 16; i++) v[i] = arg_value(1, n, i, 0);
        ASSERT_EQ(request(n, ep, 0, handler_t(kHShortReq + n), v), AM_OK);
        expected++;
        if (n >= 2) {
            for (int i = 2; i < 16; i++) v[i] = arg_value(2, n, i, 0);
            size_t nb = size_t(n) * 200 + 1;
            v[0] = 0;
            v[1] = 100 + n;
            fill(src.data(), nb, uint32_t(v[1]));
            ASSERT_EQ(request_i(n, ep, 0, handler_t(kHBulkReq + n), src.data(), nb, v), AM_OK);
            expected++;
            v[0] = 1;
            v[1] = 200 + n;
            nb = size_t(n) * 3000 + 5;
            fill(src.data(), nb, uint32_t(v[1]));
            uintptr_t off = uintptr_t(n) * 64 + 3; // unaligned offsets in the first half
            ASSERT_EQ(request_xfer(n, ep, 0, handler_t(kHBulkReq + n), src.data(), nb, off, v), AM_OK);
            expected++;
            ASSERT_TRUE(poll_until(eb, [&] { return replies == expected; }));
        }
    }
    ASSERT_TRUE(poll_until(eb, [&] { return replies == expected; }));
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(g_refusal.count, 0);
}

TEST_P(AmLoop, LongMessagesOfEverySizeLandAtTheirOffsets) {
    int got = 0, errors = 0;
    g_on[kBulkReq] = [&](const Received &r) {
        uintptr_t off = uintptr_t(static_cast<uint8_t *>(r.buf) - seg.data());
        errors += off != uintptr_t(r.args[0]) || r.nbytes != size_t(r.args[1]);
        errors += mismatches(r.buf, r.nbytes, uint32_t(r.args[1])) != 0;
        got++;
    };
    std::vector<uint8_t> src(AM_MaxLong());
    const size_t sizes[] = {0, 1, 7, 64, 4095, 4096, 4097, 30000, size_t(AM_MaxLong())};
    int sent = 0;
    for (size_t nb : sizes) {
        uintptr_t off = nb == size_t(AM_MaxLong()) ? kSegLen - nb : (nb * 37 + 11) % (kSegLen / 2);
        fill(src.data(), nb, uint32_t(nb));
        ASSERT_EQ(AM_RequestXfer2(ep, 0, off, kHBulkReq + 2, src.data(), nb, int32_t(off), int32_t(nb)), AM_OK);
        sent++;
        ASSERT_TRUE(poll_until(
            eb, [&] { return got == sent; }, 10))
            << nb << " bytes at " << off;
    }
    EXPECT_EQ(errors, 0);
}

TEST_P(AmLoop, RefusedMessagesReachHandlerZero) {
    int ran = 0;
    g_on[kShortReq] = [&](const Received &) { ran++; };
    // Tag mismatch: a translation with the wrong tag.
    ASSERT_EQ(AM_Map(ep, 1, name, kTag + 99), AM_OK);
    ASSERT_EQ(AM_Request2(ep, 1, kHShortReq + 2, 7, 8), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return g_refusal.count == 1; }, 10));
    EXPECT_EQ(g_refusal.status, EBADTAG);
    EXPECT_EQ(g_refusal.opcode, AM_REQUEST_M);
    EXPECT_EQ(g_refusal.tag, kTag + 99);
    // AM_NONE refuses even the right tag; AM_ALL accepts any.
    ASSERT_EQ(AM_SetTag(ep, AM_NONE), AM_OK);
    ASSERT_EQ(AM_Request0(ep, 0, kHShortReq), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return g_refusal.count == 2; }, 10));
    EXPECT_EQ(g_refusal.status, EBADTAG);
    ASSERT_EQ(AM_SetTag(ep, AM_ALL), AM_OK);
    ASSERT_EQ(AM_Request0(ep, 1, kHShortReq), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return ran == 1; }, 10));
    ASSERT_EQ(AM_SetTag(ep, kTag), AM_OK);
    // Unset handler at the receiver.
    uint8_t bytes[40] = {};
    ASSERT_EQ(AM_RequestI1(ep, 0, 200, bytes, sizeof bytes, 5), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return g_refusal.count == 3; }, 10));
    EXPECT_EQ(g_refusal.status, EBADHANDLER);
    EXPECT_EQ(g_refusal.opcode, AM_REQUEST_IM);
    // Unmapped translation index.
    EXPECT_EQ(AM_Request0(ep, 7, kHShortReq), AM_ERR_NOT_SENT);
    EXPECT_EQ(g_refusal.count, 4);
    EXPECT_EQ(g_refusal.status, EBADENTRY);
    // Long past the segment's end, and an offset past it.
    std::vector<uint8_t> src(4096);
    // Judged by the receiver against its current segment (as AMUDP/AMMPI do):
    // the request is sent, the message comes back to handler 0.
    EXPECT_EQ(AM_RequestXfer0(ep, 0, kSegLen - 4095, kHBulkReq, src.data(), 4096), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return g_refusal.count == 5; }, 10));
    EXPECT_EQ(g_refusal.status, EBADLENGTH);
    EXPECT_EQ(g_refusal.opcode, AM_REQUEST_XFER_M);
    EXPECT_EQ(AM_RequestXfer0(ep, 0, kSegLen + 1, kHBulkReq, src.data(), 1), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return g_refusal.count == 6; }, 10));
    EXPECT_EQ(g_refusal.status, EBADSEGOFF);
    // Exactly to the end is fine.
    int long_ran = 0;
    g_on[kBulkReq] = [&](const Received &r) { long_ran += r.nbytes == 4096; };
    EXPECT_EQ(AM_RequestXfer0(ep, 0, kSegLen - 4096, kHBulkReq, src.data(), 4096), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return long_ran == 1; }, 10));
    EXPECT_EQ(ran, 1);
    // A reply naming a handler the requester never set: the requester's own
    // handler 0 hears of it, with the reply's opcode.
    g_on[kShortReq] = [&](const Received &r) { EXPECT_EQ(AM_Reply1(r.token, 222, 1), AM_OK); };
    ASSERT_EQ(AM_Request0(ep, 0, kHShortReq), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return g_refusal.count == 7; }, 10));
    EXPECT_EQ(g_refusal.status, EBADHANDLER);
    EXPECT_EQ(g_refusal.opcode, AM_REPLY_M);
}

// The segment may change after the MAP is up: the first long message after
// AM_SetSeg must reach the new segment with no AM_Poll in between (the sender
// refreshes its copy of the peer's segment instead of refusing), offsets are
// judged against the receiver's current segment, and AM_GetSeg reports it.
TEST_P(AmLoop, LongMessagesFollowAM_SetSegAtOnce) {
    int got = 0;
    void *where = nullptr;
    g_on[kBulkReq] = [&](const Received &r) {
        where = r.buf;
        got++;
    };
    std::vector<uint8_t> src(4096, 0x5a), big(4 * kSegLen);
    ASSERT_EQ(AM_SetSeg(ep, big.data(), big.size()), AM_OK);
    void *a = nullptr;
    uintptr_t n = 0;
    ASSERT_EQ(AM_GetSeg(ep, &a, &n), AM_OK);
    EXPECT_EQ(a, big.data());
    EXPECT_EQ(n, big.size());
    // Past the old segment's end, inside the new one.
    ASSERT_EQ(AM_RequestXfer0(ep, 0, 2 * kSegLen, kHBulkReq, src.data(), src.size()), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return got == 1; }, 10));
    EXPECT_EQ(where, big.data() + 2 * kSegLen);
    EXPECT_EQ(big[2 * kSegLen + 4095], 0x5a);
    // Back to the small segment: an offset that fits both lands in the new one.
    ASSERT_EQ(AM_SetSeg(ep, seg.data(), seg.size()), AM_OK);
    ASSERT_EQ(AM_GetSeg(ep, &a, &n), AM_OK);
    EXPECT_EQ(a, seg.data());
    ASSERT_EQ(AM_RequestXfer0(ep, 0, 8192, kHBulkReq, src.data(), src.size()), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return got == 2; }, 10));
    EXPECT_EQ(where, seg.data() + 8192);
    EXPECT_EQ(seg[8192 + 4095], 0x5a);
    // Past the current segment: refused by the receiver, whatever the sender knew.
    EXPECT_EQ(AM_RequestXfer0(ep, 0, 2 * kSegLen, kHBulkReq, src.data(), src.size()), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return g_refusal.count == 1; }, 10));
    EXPECT_EQ(g_refusal.status, EBADSEGOFF);
    EXPECT_EQ(g_refusal.opcode, AM_REQUEST_XFER_M);
    EXPECT_EQ(got, 2);
}

// An endpoint mapped before it had a segment: AM_SetSeg, then a long message
// at once.  A job of one must not need anyone else to poll.
TEST(AmSegment, SetSegAfterMapThenLongAtOnce) {
    ASSERT_EQ(AM_Init(), AM_OK);
    eb_t eb;
    ep_t ep;
    en_t name;
    ASSERT_EQ(AM_AllocateBundle(AM_SEQ, &eb), AM_OK);
    ASSERT_EQ(AM_AllocateEndpoint(eb, &ep, &name), AM_OK);
    ASSERT_EQ(AM_SetTag(ep, kTag), AM_OK);
    ASSERT_EQ(AM_Map(ep, 0, name, kTag), AM_OK);
    set_all_handlers(ep);
    int got = 0;
    g_on[kBulkReq] = [&](const Received &r) { got += r.nbytes == 100; };
    ASSERT_EQ(AM_Request0(ep, 0, kHShortReq), AM_OK); // the MAP is up, no segment yet
    for (int i = 0; i < 1000; i++) AM_Poll(eb);       // and the peer has said so
    std::vector<uint8_t> seg(kSegLen), src(100, 7);
    ASSERT_EQ(AM_SetSeg(ep, seg.data(), seg.size()), AM_OK);
    EXPECT_EQ(AM_RequestXfer0(ep, 0, 1000, kHBulkReq, src.data(), src.size()), AM_OK);
    EXPECT_TRUE(poll_until(
        eb, [&] { return got == 1; }, 10));
    EXPECT_EQ(seg[1099], 7);
    for (auto &f : g_on) f = nullptr;
    EXPECT_EQ(AM_Terminate(), AM_OK);
}

// Medium messages up to AM_MaxMedium(), which AM-2 programs size buffers
// from (AMUDP and AMMPI give 65000): requests and replies, several in flight.
TEST_P(AmLoop, MediumsUpToAM_MaxMediumRoundTrip) {
    ASSERT_GE(AM_MaxMedium(), 65000);
    int replies = 0, errors = 0;
    static std::vector<uint8_t> out(AM_MaxMedium());
    g_on[kBulkReq] = [&](const Received &r) {
        errors += mismatches(r.buf, r.nbytes, uint32_t(r.args[0])) != 0 || r.nbytes != size_t(r.args[1]);
        fill(out.data(), r.nbytes, uint32_t(r.args[0]) + 1);
        errors += AM_ReplyI2(r.token, kHBulkRep + 2, out.data(), r.nbytes, r.args[0], r.args[1]) != AM_OK;
    };
    g_on[kBulkRep] = [&](const Received &r) {
        errors += mismatches(r.buf, r.nbytes, uint32_t(r.args[0]) + 1) != 0 || r.nbytes != size_t(r.args[1]);
        replies++;
    };
    const size_t sizes[] = {4096, 4097, 20000, 65000, size_t(AM_MaxMedium())};
    std::vector<uint8_t> src(AM_MaxMedium());
    int sent = 0;
    for (int round = 0; round < 6; round++)
        for (size_t nb : sizes) {
            int32_t seed = round * 100 + sent;
            fill(src.data(), nb, uint32_t(seed));
            ASSERT_EQ(AM_RequestI2(ep, 0, kHBulkReq + 2, src.data(), nb, seed, int32_t(nb)), AM_OK);
            sent++; // no waiting: the source is free on return, many are in flight
        }
    ASSERT_TRUE(poll_until(
        eb, [&] { return replies == sent; }, 30));
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(g_refusal.count, 0);
}

// With AMVIA_VerboseErrors, a refused call prints the exact call with its
// arguments and what to do about it.
TEST_P(AmLoop, ErrorsNameTheExactCall) {
    std::vector<uint8_t> big(size_t(AM_MaxLong()) + 1);
    fflush(stderr);
    FILE *cap = std::tmpfile();
    ASSERT_NE(cap, nullptr);
    int saved = dup(2);
    dup2(fileno(cap), 2);
    int old = AMVIA_VerboseErrors;
    AMVIA_VerboseErrors = 1;
    int rc1 = AM_RequestI2(ep, 0, kHBulkReq + 2, big.data(), size_t(AM_MaxMedium()) + 1, 1, 2);
    int rc2 = AM_RequestXferAsync1(ep, 7, 64, kHBulkReq + 1, big.data(), 10, 3);
    int rc3 = AM_RequestXfer0(ep, 0, 0, kHBulkReq, big.data(), size_t(AM_MaxLong()) + 1);
    AMVIA_VerboseErrors = old;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    std::string text;
    std::rewind(cap);
    for (int c; (c = std::fgetc(cap)) != EOF;) text += char(c);
    std::fclose(cap);
    EXPECT_EQ(rc1, AM_ERR_BAD_ARG);
    EXPECT_EQ(rc2, AM_ERR_NOT_SENT);
    EXPECT_EQ(rc3, AM_ERR_BAD_ARG);
    EXPECT_NE(text.find("AM_RequestI2("), std::string::npos) << text;
    EXPECT_NE(text.find("AM_MaxMedium"), std::string::npos) << text;
    EXPECT_NE(text.find("AM_RequestXferAsync1("), std::string::npos) << text;
    EXPECT_NE(text.find("AM_Map"), std::string::npos) << text; // the fix for an unmapped index
    EXPECT_NE(text.find("AM_RequestXfer0("), std::string::npos) << text;
    EXPECT_NE(text.find("AM_MaxLong"), std::string::npos) << text;
    EXPECT_EQ(text.find("returns AM_ERR_BAD_ARG: endpoint"), std::string::npos) << text;
}

TEST_P(AmLoop, ReplyRulesAreEnforced) {
    int second_reply = -1, from_reply = -1, request_in_handler = -1, got = 0;
    g_on[kShortReq] = [&](const Received &r) {
        EXPECT_EQ(AM_Reply0(r.token, kHShortRep), AM_OK);
        second_reply = AM_Reply0(r.token, kHShortRep);
        request_in_handler = AM_Request0(ep, 0, kHShortReq);
    };
    g_on[kShortRep] = [&](const Received &r) {
        from_reply = AM_Reply0(r.token, kHShortRep);
        got++;
    };
    ASSERT_EQ(AM_Request0(ep, 0, kHShortReq), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return got == 1; }, 10));
    EXPECT_EQ(second_reply, AM_ERR_BAD_ARG);
    EXPECT_EQ(from_reply, AM_ERR_BAD_ARG);
    EXPECT_EQ(request_in_handler, AM_ERR_RESOURCE);
}

// Handlers that never reply: the layer returns the credit, so 10x the credit
// count of requests all get through.
TEST_P(AmLoop, SilentHandlersReturnCredits) {
    int ran = 0;
    g_on[kShortReq] = [&](const Received &r) { ran += r.args[0] == 77; };
    const int total = 10 * 8;
    for (int i = 0; i < total; i++) ASSERT_EQ(AM_Request1(ep, 0, kHShortReq + 1, 77), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return ran == total; }, 20));
    EXPECT_EQ(ran, total);
}

// The deadlock/atomicity rule: AM_Poll inside a request handler runs replies
// but only queues requests; they run at the next top-level poll, never nested.
TEST_P(AmLoop, RequestsArrivingInsideAHandlerAreQueuedNotNested) {
    int depth = 0, max_depth = 0, ran = 0, replies = 0, polls_done = 0;
    g_on[kShortReq] = [&](const Received &r) {
        max_depth = std::max(max_depth, ++depth);
        ran++;
        if (r.args[0] == 0) {
            // The other requests are on their way: poll for them from inside.
            for (int i = 0; i < 2000; i++) AM_Poll(eb);
            polls_done = 1;
            EXPECT_EQ(ran, 1); // none of them ran in here
        }
        EXPECT_EQ(AM_Reply1(r.token, kHShortRep + 1, r.args[0]), AM_OK);
        depth--;
    };
    g_on[kShortRep] = [&](const Received &) { replies++; };
    for (int i = 0; i < 4; i++) ASSERT_EQ(AM_Request1(ep, 0, kHShortReq + 1, i), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return replies == 4; }, 10));
    EXPECT_EQ(polls_done, 1);
    EXPECT_EQ(ran, 4);
    EXPECT_EQ(max_depth, 1);
}

// One credit per MAP (AM_SetExpectedResources): every request waits for the
// previous reply, and all still get through.
TEST_P(AmLoop, OneCreditStillMovesEverything) {
    ep_t ep1;
    en_t n1;
    ASSERT_EQ(AM_AllocateEndpoint(eb, &ep1, &n1), AM_OK);
    ASSERT_EQ(AM_SetExpectedResources(ep1, 1, 1), AM_OK);
    ASSERT_EQ(AM_SetTag(ep1, kTag), AM_OK);
    ASSERT_EQ(AM_Map(ep1, 0, n1, kTag), AM_OK);
    set_all_handlers(ep1);
    long sum = 0;
    int replies = 0;
    g_on[kBulkReq] = [&](const Received &r) {
        EXPECT_EQ(mismatches(r.buf, r.nbytes, uint32_t(r.args[0])), 0u);
        EXPECT_EQ(AM_Reply1(r.token, kHShortRep + 1, r.args[0]), AM_OK);
    };
    g_on[kShortRep] = [&](const Received &r) {
        sum += r.args[0];
        replies++;
    };
    uint8_t buf[700];
    for (int i = 0; i < 100; i++) {
        fill(buf, sizeof buf, uint32_t(i));
        ASSERT_EQ(AM_RequestI1(ep1, 0, kHBulkReq + 1, buf, sizeof buf, i), AM_OK);
    }
    ASSERT_TRUE(poll_until(
        eb, [&] { return replies == 100; }, 20));
    EXPECT_EQ(sum, 99 * 100 / 2);
    EXPECT_EQ(AM_FreeEndpoint(ep1), AM_OK);
}

TEST_P(AmLoop, WaitSemaWakesOnArrival) {
    int ran = 0;
    g_on[kShortReq] = [&](const Received &) { ran++; };
    ASSERT_EQ(AM_SetEventMask(eb, AM_NOTEMPTY), AM_OK);
    ASSERT_EQ(AM_Request0(ep, 0, kHShortReq), AM_OK);
    ASSERT_EQ(AM_WaitSema(eb), AM_OK);
    int mask = -1;
    ASSERT_EQ(AM_GetEventMask(eb, &mask), AM_OK);
    EXPECT_EQ(mask, AM_NOEVENTS); // one-shot
    ASSERT_TRUE(poll_until(
        eb, [&] { return ran == 1; }, 10));
}

TEST_P(AmLoop, MoveEndpointOnlyBeforeMapping) {
    eb_t eb2;
    ASSERT_EQ(AM_AllocateBundle(AM_SEQ, &eb2), AM_OK);
    EXPECT_EQ(AM_MoveEndpoint(ep, eb, eb2), AM_ERR_RESOURCE);
    ep_t ep2;
    en_t n2;
    ASSERT_EQ(AM_AllocateEndpoint(eb, &ep2, &n2), AM_OK);
    EXPECT_EQ(AM_MoveEndpoint(ep2, eb, eb2), AM_OK);
    EXPECT_EQ(AM_FreeEndpoint(ep2), AM_OK);
    EXPECT_EQ(AM_FreeBundle(eb2), AM_OK);
}

TEST(AmLayoutV1, MediumReplyToShortRequestDoesNotFit) {
    ASSERT_EQ(AM_Init(), AM_OK);
    ASSERT_EQ(AMVIA_SetLayout(1), AM_OK);
    eb_t eb;
    ep_t ep;
    en_t name;
    ASSERT_EQ(AM_AllocateBundle(AM_SEQ, &eb), AM_OK);
    ASSERT_EQ(AM_AllocateEndpoint(eb, &ep, &name), AM_OK);
    ASSERT_EQ(AM_SetTag(ep, kTag), AM_OK);
    ASSERT_EQ(AM_Map(ep, 0, name, kTag), AM_OK);
    set_all_handlers(ep);
    int rc = -1, got = 0;
    static uint8_t data[1024];
    g_on[kShortReq] = [&](const Received &r) {
        rc = AM_ReplyI0(r.token, kHBulkRep, data, sizeof data);
        EXPECT_EQ(AM_Reply0(r.token, kHShortRep), AM_OK); // a short reply still fits
    };
    g_on[kShortRep] = [&](const Received &) { got++; };
    ASSERT_EQ(AM_Request0(ep, 0, kHShortReq), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return got == 1; }, 10));
    EXPECT_EQ(rc, AM_ERR_BAD_ARG);
    for (auto &f : g_on) f = nullptr;
    EXPECT_EQ(AM_Terminate(), AM_OK);
    AMVIA_SetLayout(3);
}

INSTANTIATE_TEST_SUITE_P(Layouts, AmLoop, ::testing::Values(3, 1),
                         [](const auto &info) { return std::string("v") += std::to_string(info.param); });

} // namespace
