// fake_am_test.cpp - Active Messages protocol behaviour in one process over the
// fake provider (VIPL_PROVIDER=fake; AM maps an endpoint to itself, the NIC
// connects the MAP's VI to a second VI of fake0).  The fake completes every
// message at post time, so what AM does with credits and broken connections
// is observed without sleeps and without timing: handlers run inside AM_Poll
// (or inside a request that waits for a credit), nowhere else.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "am.h"
#include "am_test_util.hpp"
#include "fake_hooks.h"
#include "vipl.h"

using namespace amtest;

namespace {

constexpr tag_t kTag = 0x0fa6e0fa6e0ull;
constexpr int kCredits = 4;

class AmFake : public ::testing::Test {
protected:
    eb_t eb{};
    ep_t ep{};
    en_t name{};
    std::vector<uint8_t> seg = std::vector<uint8_t>(64 * 1024);

    void SetUp() override {
        vipl_fake_faults_clear();
        vipl_fake_reset_stats();
        ASSERT_EQ(AM_Init(), AM_OK);
        ASSERT_EQ(AM_AllocateBundle(AM_SEQ, &eb), AM_OK);
        ASSERT_EQ(AM_AllocateEndpoint(eb, &ep, &name), AM_OK);
        ASSERT_EQ(AM_SetTag(ep, kTag), AM_OK);
        ASSERT_EQ(AM_SetSeg(ep, seg.data(), seg.size()), AM_OK);
        ASSERT_EQ(AM_SetExpectedResources(ep, 1, kCredits), AM_OK); // k for the MAP below
        ASSERT_EQ(AM_Map(ep, 0, name, kTag), AM_OK);
        ASSERT_EQ(AM_SetHandler(ep, 0, refusal_handler), AM_OK);
        set_all_handlers(ep);
        g_refusal = Refusal{};
        for (auto &f : g_on) f = nullptr;
    }
    void TearDown() override {
        for (auto &f : g_on) f = nullptr;
        vipl_fake_faults_clear();
        AM_Terminate();
    }
    amvia_stats_t stats() const {
        amvia_stats_t s{};
        EXPECT_EQ(AMVIA_GetEndpointStatistics(ep, &s), AM_OK);
        return s;
    }
};

// Requests whose handler does not reply use up the k request credits; the next
// request finds none, waits (polling its own bundle), runs the handlers queued
// at its endpoint, which return the credits, and goes out.  Every handler runs
// once, in order.  (The MAP's first exchange may hold one credit of the first
// window, so at most k requests fit before the first wait.)
TEST_F(AmFake, CreditsAreExhaustedAndReturned) {
    std::vector<int32_t> seen;
    g_on[kShortReq] = [&](const Received &r) { seen.push_back(r.args[0]); };
    int sent = 0;
    while (stats().CreditStalls == 0 && sent <= kCredits) {
        ASSERT_TRUE(seen.empty()) << "a handler ran before any request had to wait";
        ASSERT_EQ(AM_Request1(ep, 0, kHShortReq + 1, sent), AM_OK);
        sent++;
    }
    ASSERT_EQ(stats().CreditStalls, 1u) << kCredits + 1 << " requests went out on " << kCredits << " credits";
    const int fit = sent - 1; // the last one waited
    EXPECT_GE(fit, 1);
    EXPECT_LE(fit, kCredits);
    EXPECT_EQ(int(seen.size()), fit) << "the wait must run exactly the handlers queued before it";
    const int n = 3 * kCredits;
    for (; sent < n; sent++) ASSERT_EQ(AM_Request1(ep, 0, kHShortReq + 1, sent), AM_OK);
    EXPECT_GE(stats().CreditStalls, 2u) << "a window of " << kCredits << " credits must stall again";
    ASSERT_TRUE(poll_until(
        eb, [&] { return int(seen.size()) == n; }, 10));
    for (int i = 0; i < n; i++) EXPECT_EQ(seen[size_t(i)], i) << "handlers out of order";
    EXPECT_EQ(stats().RequestsSent[AMVIA_Short], uint64_t(n));
    EXPECT_EQ(stats().RequestsReceived[AMVIA_Short], uint64_t(n));
    EXPECT_EQ(g_refusal.count, 0);
    // Credits came back: with every handler run and the returns taken in, the
    // next request goes out at once.
    ASSERT_EQ(AM_Poll(eb), AM_OK);
    const uint64_t stalls = stats().CreditStalls;
    ASSERT_EQ(AM_Request1(ep, 0, kHShortReq + 1, n), AM_OK);
    EXPECT_EQ(stats().CreditStalls, stalls) << "credits were not returned";
    ASSERT_TRUE(poll_until(
        eb, [&] { return int(seen.size()) == n + 1; }, 10));
}

// An asynchronous request that finds no credit is refused instead of waiting
// (AM_RequestXferAsync: AM_ERR_IN_USE; it may poll once, but never blocks), and
// goes out once credits return.  Every accepted one runs its handler once.
TEST_F(AmFake, AsyncRequestWithoutCreditIsRefusedUntilCreditsReturn) {
    int ran = 0, warm = 0;
    g_on[kBulkReq] = [&](const Received &) { ran++; };
    g_on[kShortReq] = [&](const Received &) { warm++; };
    // An async request also refuses while the MAP is still connecting: bring it
    // up with a blocking request first.
    ASSERT_EQ(AM_Request0(ep, 0, kHShortReq), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return warm == 1; }, 10));
    ASSERT_EQ(AM_Poll(eb), AM_OK); // take the credit return in
    char src[64] = "credit";
    int sent = 0, rc = AM_OK;
    while ((rc = AM_RequestXferAsync0(ep, 0, 0, kHBulkReq, src, sizeof src)) == AM_OK && sent <= kCredits) sent++;
    EXPECT_EQ(rc, AM_ERR_IN_USE) << "more requests than credits were accepted";
    EXPECT_GE(sent, 1);
    EXPECT_LE(sent, kCredits);
    ASSERT_TRUE(poll_until(
        eb, [&] { return ran == sent; }, 10))
        << "an accepted request was lost";
    ASSERT_TRUE(poll_until(
        eb, [&] { return AM_RequestXferAsync0(ep, 0, 0, kHBulkReq, src, sizeof src) == AM_OK; }, 10))
        << "the credits never came back";
    ASSERT_TRUE(poll_until(
        eb, [&] { return ran == sent + 1; }, 10));
}

// Replies travel back on the same MAP and carry the request's arguments.
TEST_F(AmFake, RequestAndReplyRoundTrip) {
    int32_t got = 0;
    g_on[kShortReq] = [&](const Received &r) { ASSERT_EQ(AM_Reply1(r.token, kHShortRep + 1, r.args[0] + 1), AM_OK); };
    g_on[kShortRep] = [&](const Received &r) { got = r.args[0]; };
    ASSERT_EQ(AM_Request1(ep, 0, kHShortReq + 1, 41), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return got == 42; }, 10));
}

// A message lost on the MAP's reliable VI breaks the connection (the fake's
// drop fault): AM sees the broken VI, later requests are not sent, and the
// application hears of it through handler 0 with EUNREACHABLE.
TEST_F(AmFake, BrokenConnectionSurfacesAsUnreachable) {
    int ran = 0;
    g_on[kShortReq] = [&](const Received &) { ran++; };
    ASSERT_EQ(AM_Request1(ep, 0, kHShortReq + 1, 1), AM_OK);
    ASSERT_TRUE(poll_until(
        eb, [&] { return ran == 1; }, 10));
    ASSERT_EQ(vipl_fake_fault_next(nullptr, VIPL_FAKE_DROP, 1, 0), VIP_SUCCESS);
    AM_Request1(ep, 0, kHShortReq + 1, 2); // lost: the connection breaks under it
    vipl_fake_stats fs;
    vipl_fake_get_stats(&fs);
    EXPECT_EQ(fs.dropped, 1u);
    EXPECT_EQ(fs.connections_broken, 1u);
    // AM learns of the break when it next polls; then a request is refused.
    int rc = AM_OK;
    ASSERT_TRUE(poll_until(
        eb, [&] { return (rc = AM_Request1(ep, 0, kHShortReq + 1, 3)) != AM_OK; }, 10))
        << "requests kept being accepted on a broken MAP";
    EXPECT_EQ(rc, AM_ERR_NOT_SENT);
    EXPECT_GE(g_refusal.count, 1);
    EXPECT_EQ(g_refusal.status, EUNREACHABLE);
    EXPECT_EQ(ran, 1) << "the lost request or a refused one ran";
}

} // namespace
