// am_bad_input_test - bad input to the calls of am.h, as a program written from
// the AM-2 specification would make them (public header only): calls before
// AM_Init, NULL, stale (freed) and foreign (the other object kind) endpoints
// and bundles, translation indices outside the table, handler 0 and NULL
// handlers, argument counts outside 0..16, segments, tokens used outside their
// handler, and calls a handler may not make.  One process, one endpoint mapped
// to itself.  Each test names its rows in docs/bad-input.md.
#include <gtest/gtest.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "am.h"
#include "vipl.h"

namespace {

constexpr tag_t kTag = 0xbad1bad2bad3ull;
constexpr size_t kSegLen = 64 * 1024;

// What handler 0 heard.
struct Returned {
    int count = 0;
    int status = 0;
    op_t opcode = 0;
};
Returned g_returned;
void returned_handler(int status, op_t opcode, void *) {
    g_returned.count++;
    g_returned.status = status;
    g_returned.opcode = opcode;
}

// The body a test gives the short handler 1 and the reply handler 2.
std::function<void(void *token, int32_t a0)> g_on_request;
std::function<void(void *token)> g_on_reply;
void request_handler(void *token, int32_t a0) {
    if (g_on_request) g_on_request(token, a0);
}
void reply_handler(void *token) {
    if (g_on_reply) g_on_reply(token);
}
void long_handler(void *, void *, size_t, int32_t) {}

class Am : public ::testing::Test {
protected:
    eb_t eb{};
    ep_t ep{};
    en_t name{};
    std::vector<uint8_t> seg = std::vector<uint8_t>(kSegLen);

    void SetUp() override {
        ASSERT_EQ(AM_Init(), AM_OK);
        ASSERT_EQ(AM_AllocateBundle(AM_SEQ, &eb), AM_OK);
        ASSERT_EQ(AM_AllocateEndpoint(eb, &ep, &name), AM_OK);
        ASSERT_EQ(AM_SetTag(ep, kTag), AM_OK);
        ASSERT_EQ(AM_SetSeg(ep, seg.data(), seg.size()), AM_OK);
        ASSERT_EQ(AM_Map(ep, 0, name, kTag), AM_OK);
        ASSERT_EQ(AM_SetHandler(ep, 0, returned_handler), AM_OK);
        ASSERT_EQ(AM_SetHandler(ep, 1, request_handler), AM_OK);
        ASSERT_EQ(AM_SetHandler(ep, 2, reply_handler), AM_OK);
        ASSERT_EQ(AM_SetHandler(ep, 3, long_handler), AM_OK);
        g_returned = Returned{};
        g_on_request = nullptr;
        g_on_reply = nullptr;
    }
    void TearDown() override {
        g_on_request = nullptr;
        g_on_reply = nullptr;
        EXPECT_EQ(AM_Terminate(), AM_OK);
    }
    // Polls until cond() or about 5 s.
    bool poll_until(const std::function<bool()> &cond) {
        for (int i = 0; i < 5000000 && !cond(); i++) AM_Poll(eb);
        return cond();
    }
};

// ---- before AM_Init -----------------------------------------------------------------
TEST(AmBeforeInit, EveryCallIsRefusedWithNotInit) {
    eb_t eb = nullptr;
    ep_t ep = nullptr;
    en_t n{};
    tag_t t;
    int i;
    void *p;
    uintptr_t len;
    handler_t h;
    int32_t args[1] = {0};
    EXPECT_EQ(AM_Terminate(), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_AllocateBundle(AM_SEQ, &eb), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_FreeBundle(eb), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_AllocateEndpoint(eb, &ep, &n), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_FreeEndpoint(ep), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_MoveEndpoint(ep, eb, eb), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_SetSeg(ep, nullptr, 0), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_GetSeg(ep, &p, &len), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_SetTag(ep, 1), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_GetTag(ep, &t), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_Map(ep, 0, n, 1), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_MapAny(ep, &i, n, 1), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_UnMap(ep, 0), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_GetTranslationInuse(ep, 0), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_GetTranslationTag(ep, 0, &t), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_GetTranslationName(ep, 0, &n), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_GetNumTranslations(ep, &i), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_SetNumTranslations(ep, 8), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_SetExpectedResources(ep, 1, 1), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_SetHandler(ep, 1, request_handler), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_SetHandlerAny(ep, &h, request_handler), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_GetEventMask(eb, &i), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_SetEventMask(eb, AM_NOTEMPTY), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_WaitSema(eb), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_Poll(eb), AM_ERR_NOT_INIT);
    EXPECT_EQ(AMVIA_Request(ep, 0, 1, 1, args), AM_ERR_NOT_INIT);
    EXPECT_EQ(AMVIA_RequestI(ep, 0, 1, args, 4, 1, args), AM_ERR_NOT_INIT);
    EXPECT_EQ(AMVIA_RequestXfer(ep, 0, 1, args, 4, 0, 0, 1, args), AM_ERR_NOT_INIT);
    // Token calls have no token outside a handler.
    EXPECT_EQ(AMVIA_Reply(nullptr, 1, 0, args), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetSourceEndpoint(nullptr, &n), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetDestEndpoint(nullptr, &ep), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetMsgTag(nullptr, &t), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_NicHandle(), nullptr);
    EXPECT_EQ(AMVIA_AllocMem(4096), nullptr);
    int stack_byte = 0;
    EXPECT_EQ(AMVIA_FreeMem(&stack_byte), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_MaxSegLength(&len), AM_OK) << "answers before AM_Init too";
}

// A configuration variable AM_Init reads, with a value it does not know.
TEST(AmInitBad, UnknownWaitPolicyIsRefusedAndNothingStays) {
    const char *old = std::getenv("VIASTACK_WAIT");
    std::string saved = old ? old : "";
    setenv("VIASTACK_WAIT", "sometimes", 1);
    EXPECT_EQ(AM_Init(), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_Terminate(), AM_ERR_NOT_INIT) << "a refused AM_Init leaves AM uninitialized";
    if (old) setenv("VIASTACK_WAIT", saved.c_str(), 1);
    else unsetenv("VIASTACK_WAIT");
    ASSERT_EQ(AM_Init(), AM_OK);
    EXPECT_EQ(AM_Terminate(), AM_OK);
}

// ---- NULL, stale and foreign endpoints and bundles -------------------------------------
// Every call taking an endpoint or a bundle, with `bad_ep` / `bad_eb`.
void expect_refused(ep_t bad_ep, eb_t bad_eb, eb_t good_eb, const char *what) {
    SCOPED_TRACE(what);
    en_t n{};
    tag_t t;
    int i;
    void *p;
    uintptr_t len;
    handler_t h;
    amvia_stats_t st;
    int32_t args[1] = {0};
    uint8_t byte = 0;
    ep_t out;
    EXPECT_EQ(AM_FreeBundle(bad_eb), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_AllocateEndpoint(bad_eb, &out, &n), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_FreeEndpoint(bad_ep), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_MoveEndpoint(bad_ep, good_eb, good_eb), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetSeg(bad_ep, nullptr, 0), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetSeg(bad_ep, &p, &len), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetTag(bad_ep, 1), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetTag(bad_ep, &t), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_Map(bad_ep, 0, n, 1), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_MapAny(bad_ep, &i, n, 1), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_UnMap(bad_ep, 0), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetTranslationInuse(bad_ep, 0), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetTranslationTag(bad_ep, 0, &t), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetTranslationName(bad_ep, 0, &n), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetNumTranslations(bad_ep, &i), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetNumTranslations(bad_ep, 8), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetExpectedResources(bad_ep, 1, 1), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetHandler(bad_ep, 1, request_handler), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetHandlerAny(bad_ep, &h, request_handler), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetEventMask(bad_eb, &i), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetEventMask(bad_eb, AM_NOTEMPTY), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_WaitSema(bad_eb), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_Poll(bad_eb), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_Request(bad_ep, 0, 1, 1, args), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_RequestI(bad_ep, 0, 1, &byte, 1, 1, args), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_RequestXfer(bad_ep, 0, 3, &byte, 1, 0, 0, 1, args), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_RequestXfer(bad_ep, 0, 3, &byte, 1, 0, 1, 1, args), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_GetEndpointStatistics(bad_ep, &st), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_ResetEndpointStatistics(bad_ep), AM_ERR_BAD_ARG);
}

TEST_F(Am, NullEndpointAndBundle) { expect_refused(nullptr, nullptr, eb, "NULL"); }

TEST_F(Am, ForeignEndpointAndBundle) {
    // The other object kind, and a pointer to ordinary memory.
    expect_refused(reinterpret_cast<ep_t>(eb), reinterpret_cast<eb_t>(ep), eb, "the other kind");
    alignas(16) static uint64_t junk[64];
    std::memset(junk, 0xa5, sizeof junk);
    expect_refused(reinterpret_cast<ep_t>(junk), reinterpret_cast<eb_t>(junk), eb, "user memory");
}

TEST_F(Am, StaleEndpointAndBundle) {
    eb_t eb2;
    ASSERT_EQ(AM_AllocateBundle(AM_SEQ, &eb2), AM_OK);
    ep_t ep2;
    en_t n2;
    ASSERT_EQ(AM_AllocateEndpoint(eb2, &ep2, &n2), AM_OK);
    ASSERT_EQ(AM_FreeEndpoint(ep2), AM_OK);
    EXPECT_EQ(AM_FreeEndpoint(ep2), AM_ERR_BAD_ARG) << "freed twice";
    ep_t ep3;
    en_t n3;
    ASSERT_EQ(AM_AllocateEndpoint(eb2, &ep3, &n3), AM_OK);
    ASSERT_EQ(AM_FreeBundle(eb2), AM_OK); // frees ep3 with it
    EXPECT_EQ(AM_FreeBundle(eb2), AM_ERR_BAD_ARG) << "freed twice";
    expect_refused(ep2, eb2, eb, "freed endpoint, freed bundle");
    expect_refused(ep3, eb2, eb, "endpoint freed with its bundle");
    // The live endpoint still works.
    int ran = 0;
    g_on_request = [&](void *, int32_t) { ran++; };
    ASSERT_EQ(AM_Request1(ep, 0, 1, 5), AM_OK);
    EXPECT_TRUE(poll_until([&] { return ran == 1; }));
}

TEST(AmStale, EndpointFromBeforeAM_TerminateIsRefusedAfterReinit) {
    ASSERT_EQ(AM_Init(), AM_OK);
    eb_t eb;
    ep_t ep;
    en_t n;
    ASSERT_EQ(AM_AllocateBundle(AM_SEQ, &eb), AM_OK);
    ASSERT_EQ(AM_AllocateEndpoint(eb, &ep, &n), AM_OK);
    ASSERT_EQ(AM_Terminate(), AM_OK);
    tag_t t;
    EXPECT_EQ(AM_GetTag(ep, &t), AM_ERR_NOT_INIT);
    ASSERT_EQ(AM_Init(), AM_OK);
    eb_t other;
    ASSERT_EQ(AM_AllocateBundle(AM_SEQ, &other), AM_OK);
    EXPECT_EQ(AM_Poll(eb), other == eb ? AM_OK : AM_ERR_BAD_ARG);
    amvia_stats_t st;
    EXPECT_EQ(AMVIA_GetEndpointStatistics(ep, &st), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetTag(ep, 3), AM_ERR_BAD_ARG);
    ASSERT_EQ(AM_Terminate(), AM_OK);
}

// ---- NULL outputs and bundle / endpoint arguments -----------------------------------------
TEST_F(Am, NullOutputs) {
    en_t n{};
    EXPECT_EQ(AM_MaxSegLength(nullptr), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_AllocateBundle(AM_SEQ, nullptr), AM_ERR_BAD_ARG);
    ep_t out;
    EXPECT_EQ(AM_AllocateEndpoint(eb, nullptr, &n), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_AllocateEndpoint(eb, &out, nullptr), AM_ERR_BAD_ARG);
    void *p;
    uintptr_t len;
    EXPECT_EQ(AM_GetSeg(ep, nullptr, &len), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetSeg(ep, &p, nullptr), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetTag(ep, nullptr), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_MapAny(ep, nullptr, name, kTag), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetTranslationTag(ep, 0, nullptr), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetTranslationName(ep, 0, nullptr), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetNumTranslations(ep, nullptr), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetHandlerAny(ep, nullptr, request_handler), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetEventMask(eb, nullptr), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_GetEndpointStatistics(ep, nullptr), AM_ERR_BAD_ARG);
    amvia_stats_t st = AMVIA_initial_stats;
    EXPECT_EQ(AMVIA_AggregateStatistics(nullptr, &st), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_AggregateStatistics(&st, nullptr), AM_ERR_BAD_ARG);
    const char *text = AMVIA_DumpStatistics(nullptr, nullptr, 1);
    EXPECT_NE(text, nullptr) << "a NULL record gives an empty text, not a crash";
}

TEST_F(Am, BundleAndEndpointArguments) {
    eb_t eb2;
    EXPECT_EQ(AM_AllocateBundle(-1, &eb2), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_AllocateBundle(AM_NUM_BUNDLE_MODES, &eb2), AM_ERR_BAD_ARG);
    {
        // AM_PAR: granted exactly when the NIC says it is thread safe.
        VIP_NIC_ATTRIBUTES attr{};
        ASSERT_EQ(VipQueryNic(static_cast<VIP_NIC_HANDLE>(AMVIA_NicHandle()), &attr), VIP_SUCCESS);
        const int par = AM_AllocateBundle(AM_PAR, &eb2);
        EXPECT_EQ(par, attr.ThreadSafe == VIP_TRUE ? AM_OK : AM_ERR_RESOURCE);
        if (par == AM_OK) EXPECT_EQ(AM_FreeBundle(eb2), AM_OK);
    }
    ASSERT_EQ(AM_AllocateBundle(AM_SEQ, &eb2), AM_OK);
    ep_t ep2;
    en_t n2;
    ASSERT_EQ(AM_AllocateEndpoint(eb2, &ep2, &n2), AM_OK);
    EXPECT_EQ(AM_MoveEndpoint(ep2, eb, eb2), AM_ERR_BAD_ARG) << "ep2 is not in eb";
    EXPECT_EQ(AM_MoveEndpoint(ep, eb, eb2), AM_ERR_RESOURCE) << "ep has a MAP connection";
    EXPECT_EQ(AM_FreeBundle(eb2), AM_OK);
    EXPECT_EQ(AMVIA_SetLayout(2), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_SetLayout(-3), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetExpectedResources(ep, -1, 1), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetExpectedResources(ep, 1, -1), AM_ERR_BAD_ARG);
    EXPECT_STREQ(AMVIA_ErrorName(99), "AM_ERR_?");
    EXPECT_STREQ(AMVIA_ErrorName(-1), "AM_ERR_?");
    EXPECT_STREQ(AMVIA_StatusName(11), "E?");
    EXPECT_STREQ(AMVIA_StatusName(-1), "E?");
}

// ---- translation table indices -------------------------------------------------------------
TEST_F(Am, TranslationIndexOutsideTheTable) {
    int ntrans = 0;
    ASSERT_EQ(AM_GetNumTranslations(ep, &ntrans), AM_OK);
    tag_t t;
    en_t n;
    for (int bad : {-1, ntrans, INT_MAX, INT_MIN}) {
        SCOPED_TRACE(bad);
        EXPECT_EQ(AM_Map(ep, bad, name, kTag), AM_ERR_BAD_ARG);
        EXPECT_EQ(AM_UnMap(ep, bad), AM_ERR_BAD_ARG);
        EXPECT_EQ(AM_GetTranslationInuse(ep, bad), AM_ERR_BAD_ARG);
        EXPECT_EQ(AM_GetTranslationTag(ep, bad, &t), AM_ERR_BAD_ARG);
        EXPECT_EQ(AM_GetTranslationName(ep, bad, &n), AM_ERR_BAD_ARG);
        EXPECT_EQ(AM_Request0(ep, bad, 1), AM_ERR_BAD_ARG);
        uint8_t b = 0;
        EXPECT_EQ(AM_RequestI0(ep, bad, 1, &b, 1), AM_ERR_BAD_ARG);
        EXPECT_EQ(AM_RequestXfer0(ep, bad, 0, 3, &b, 1), AM_ERR_BAD_ARG);
    }
    // Inside the table but not mapped.
    EXPECT_EQ(AM_GetTranslationTag(ep, 5, &t), AM_ERR_RESOURCE);
    EXPECT_EQ(AM_GetTranslationName(ep, 5, &n), AM_ERR_RESOURCE);
    EXPECT_EQ(AM_UnMap(ep, 5), AM_ERR_RESOURCE);
    EXPECT_EQ(AM_Request0(ep, 5, 1), AM_ERR_NOT_SENT);
    EXPECT_EQ(g_returned.status, EBADENTRY);
    for (int bad : {0, -1, AMVIA_MAX_TRANSLATIONS_LIMIT + 1})
        EXPECT_EQ(AM_SetNumTranslations(ep, bad), AM_ERR_BAD_ARG) << bad;
    // A malformed endpoint name.
    en_t bogus = name;
    bogus.addr_len = AMVIA_MAX_NICADDR + 1;
    EXPECT_EQ(AM_Map(ep, 3, bogus, kTag), AM_ERR_BAD_ARG);
    // A full table.
    ASSERT_EQ(AM_SetNumTranslations(ep, 2), AM_OK);
    int idx = -1;
    ASSERT_EQ(AM_MapAny(ep, &idx, name, kTag), AM_OK);
    EXPECT_EQ(AM_MapAny(ep, &idx, name, kTag), AM_ERR_RESOURCE);
}

// ---- handlers and argument counts ------------------------------------------------------
TEST_F(Am, HandlerAndArgumentCount) {
    EXPECT_EQ(AM_SetHandler(ep, 5, nullptr), AM_ERR_BAD_ARG);
    handler_t h;
    EXPECT_EQ(AM_SetHandlerAny(ep, &h, nullptr), AM_ERR_BAD_ARG);
    int32_t args[17] = {};
    uint8_t bytes[8] = {};
    for (int bad : {-1, 17, INT_MAX}) {
        SCOPED_TRACE(bad);
        EXPECT_EQ(AMVIA_Request(ep, 0, 1, bad, args), AM_ERR_BAD_ARG);
        EXPECT_EQ(AMVIA_RequestI(ep, 0, 1, bytes, 8, bad, args), AM_ERR_BAD_ARG);
        EXPECT_EQ(AMVIA_RequestXfer(ep, 0, 3, bytes, 8, 0, 0, bad, args), AM_ERR_BAD_ARG);
    }
    // Arguments promised but not given.
    EXPECT_EQ(AMVIA_Request(ep, 0, 1, 2, nullptr), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_RequestI(ep, 0, 1, bytes, 8, 1, nullptr), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_RequestXfer(ep, 0, 3, bytes, 8, 0, 0, 3, nullptr), AM_ERR_BAD_ARG);
    // Handler 0 is the returned-message handler.
    EXPECT_EQ(AM_Request0(ep, 0, 0), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_RequestI0(ep, 0, 0, bytes, 8), AM_ERR_BAD_ARG);
    // Payload without a source.
    EXPECT_EQ(AM_RequestI0(ep, 0, 1, nullptr, 8), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_RequestXfer0(ep, 0, 0, 3, nullptr, 8), AM_ERR_BAD_ARG);
    // A handler that was never set at the receiver: returned with EBADHANDLER.
    ASSERT_EQ(AM_Request0(ep, 0, 77), AM_OK);
    ASSERT_TRUE(poll_until([] { return g_returned.count == 1; }));
    EXPECT_EQ(g_returned.status, EBADHANDLER);
    EXPECT_EQ(g_returned.opcode, AM_REQUEST_M);
    // Nothing above was delivered to handler 1.
    int ran = 0;
    g_on_request = [&](void *, int32_t) { ran++; };
    ASSERT_EQ(AM_Request1(ep, 0, 1, 9), AM_OK);
    ASSERT_TRUE(poll_until([&] { return ran == 1; }));
    for (int i = 0; i < 1000; i++) AM_Poll(eb);
    EXPECT_EQ(ran, 1);
    EXPECT_EQ(g_returned.count, 1);
}

// Reply arguments are checked the same way, inside the request handler.
TEST_F(Am, ReplyArgumentsInsideTheHandler) {
    int32_t args[17] = {};
    uint8_t bytes[8] = {};
    std::vector<int> rcs;
    g_on_request = [&](void *token, int32_t) {
        rcs.push_back(AMVIA_Reply(token, 2, 17, args));
        rcs.push_back(AMVIA_Reply(token, 2, -1, args));
        rcs.push_back(AMVIA_Reply(token, 2, 1, nullptr));
        rcs.push_back(AMVIA_Reply(token, 0, 0, args));
        rcs.push_back(AMVIA_ReplyI(token, 2, nullptr, 8, 0, args));
        rcs.push_back(AMVIA_ReplyI(token, 2, bytes, size_t(AM_MaxMedium()) + 1, 0, args));
        rcs.push_back(AMVIA_ReplyXfer(token, 3, nullptr, 8, 0, 0, args));
        rcs.push_back(AMVIA_ReplyXfer(token, 3, bytes, size_t(AM_MaxLong()) + 1, 0, 0, args));
        // Calls a handler may not make.
        rcs.push_back(AM_Terminate());
        rcs.push_back(AM_FreeEndpoint(ep));
        rcs.push_back(AM_FreeBundle(eb));
        rcs.push_back(AM_SetSeg(ep, nullptr, 0));
        rcs.push_back(AM_WaitSema(eb));
        en_t n;
        tag_t t;
        ep_t e;
        rcs.push_back(AM_GetSourceEndpoint(token, nullptr));
        rcs.push_back(AM_GetDestEndpoint(token, nullptr));
        rcs.push_back(AM_GetMsgTag(token, nullptr));
        // The good ones still work.
        rcs.push_back(AM_GetSourceEndpoint(token, &n));
        rcs.push_back(AM_GetDestEndpoint(token, &e));
        rcs.push_back(AM_GetMsgTag(token, &t));
    };
    int replies = 0;
    g_on_reply = [&](void *) { replies++; };
    ASSERT_EQ(AM_Request1(ep, 0, 1, 1), AM_OK);
    ASSERT_TRUE(poll_until([&] { return rcs.size() == 19; }));
    const std::vector<int> want = {AM_ERR_BAD_ARG,
                                   AM_ERR_BAD_ARG,
                                   AM_ERR_BAD_ARG,
                                   AM_ERR_BAD_ARG,
                                   AM_ERR_BAD_ARG,
                                   AM_ERR_BAD_ARG,
                                   AM_ERR_BAD_ARG,
                                   AM_ERR_BAD_ARG,
                                   AM_ERR_RESOURCE,
                                   AM_ERR_RESOURCE,
                                   AM_ERR_RESOURCE,
                                   AM_ERR_RESOURCE,
                                   AM_ERR_RESOURCE,
                                   AM_ERR_BAD_ARG,
                                   AM_ERR_BAD_ARG,
                                   AM_ERR_BAD_ARG,
                                   AM_OK,
                                   AM_OK,
                                   AM_OK};
    EXPECT_EQ(rcs, want);
    for (int i = 0; i < 1000; i++) AM_Poll(eb);
    EXPECT_EQ(replies, 0) << "no refused reply was sent";
    // The endpoint still carries messages (the layer's own credit reply came back).
    int ran = 0;
    g_on_request = [&](void *, int32_t) { ran++; };
    ASSERT_EQ(AM_Request1(ep, 0, 1, 2), AM_OK);
    EXPECT_TRUE(poll_until([&] { return ran == 1; }));
}

// A token kept past its handler (stale), and a token that never was one.
TEST_F(Am, TokenOutsideItsHandler) {
    void *kept = nullptr;
    g_on_request = [&](void *token, int32_t) { kept = token; };
    ASSERT_EQ(AM_Request1(ep, 0, 1, 1), AM_OK);
    ASSERT_TRUE(poll_until([&] { return kept != nullptr; }));
    int32_t args[1] = {0};
    en_t n;
    tag_t t;
    ep_t e;
    EXPECT_EQ(AMVIA_Reply(kept, 2, 1, args), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_ReplyI(kept, 2, args, 4, 0, args), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_ReplyXfer(kept, 3, args, 4, 0, 0, args), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetSourceEndpoint(kept, &n), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetDestEndpoint(kept, &e), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetMsgTag(kept, &t), AM_ERR_BAD_ARG);
    alignas(16) static uint64_t junk[16];
    std::memset(junk, 0x5a, sizeof junk);
    EXPECT_EQ(AMVIA_Reply(junk, 2, 0, args), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_GetMsgTag(junk, &t), AM_ERR_BAD_ARG);
    int replies = 0;
    g_on_reply = [&](void *) { replies++; };
    for (int i = 0; i < 1000; i++) AM_Poll(eb);
    EXPECT_EQ(replies, 0);
}

// ---- segments -----------------------------------------------------------------------------
TEST_F(Am, SegmentArguments) {
    uint8_t b[16] = {};
    EXPECT_EQ(AM_SetSeg(ep, nullptr, 64), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SetSeg(ep, b, 0), AM_ERR_BAD_ARG);
    uintptr_t maxlen = 0;
    ASSERT_EQ(AM_MaxSegLength(&maxlen), AM_OK);
    if (maxlen < UINTPTR_MAX) { EXPECT_EQ(AM_SetSeg(ep, b, maxlen + 1), AM_ERR_BAD_ARG); }
    void *p;
    uintptr_t len;
    ASSERT_EQ(AM_GetSeg(ep, &p, &len), AM_OK);
    EXPECT_EQ(p, seg.data()) << "a refused AM_SetSeg changes nothing";
    EXPECT_EQ(len, kSegLen);
    // Long messages past the segment: returned to handler 0.
    std::vector<uint8_t> src(256);
    ASSERT_EQ(AM_RequestXfer0(ep, 0, kSegLen + 64, 3, src.data(), 16), AM_OK);
    ASSERT_TRUE(poll_until([] { return g_returned.count == 1; }));
    EXPECT_EQ(g_returned.status, EBADSEGOFF);
    ASSERT_EQ(AM_RequestXfer0(ep, 0, kSegLen - 8, 3, src.data(), 16), AM_OK);
    ASSERT_TRUE(poll_until([] { return g_returned.count == 2; }));
    EXPECT_EQ(g_returned.status, EBADLENGTH);
    // An offset so large that offset + nbytes wraps.
    ASSERT_EQ(AM_RequestXfer0(ep, 0, UINTPTR_MAX - 4, 3, src.data(), 16), AM_OK);
    ASSERT_TRUE(poll_until([] { return g_returned.count == 3; }));
    EXPECT_TRUE(g_returned.status == EBADSEGOFF || g_returned.status == EBADLENGTH) << g_returned.status;
    // No segment at all.
    ASSERT_EQ(AM_SetSeg(ep, nullptr, 0), AM_OK);
    ASSERT_EQ(AM_RequestXfer0(ep, 0, 0, 3, src.data(), 16), AM_OK);
    ASSERT_TRUE(poll_until([] { return g_returned.count == 4; }));
    EXPECT_EQ(g_returned.status, EBADSEGOFF);
    EXPECT_EQ(g_returned.opcode, AM_REQUEST_XFER_M);
    for (uint8_t v : seg) ASSERT_EQ(v, 0) << "a refused long message wrote the segment";
}

// AMVIA_AllocMem / AMVIA_FreeMem: a zero size, memory not from AMVIA_AllocMem
// (NULL, the stack, the heap, an interior pointer, freed twice), memory that
// still holds the endpoint's segment.
TEST_F(Am, AllocMemArguments) {
    EXPECT_EQ(AMVIA_AllocMem(0), nullptr);
    EXPECT_EQ(AMVIA_FreeMem(nullptr), AM_ERR_BAD_ARG);
    int stack_byte = 0;
    EXPECT_EQ(AMVIA_FreeMem(&stack_byte), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_FreeMem(seg.data()), AM_ERR_BAD_ARG);
    auto *m = static_cast<uint8_t *>(AMVIA_AllocMem(8192));
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m[0] | m[8191], 0) << "zeroed";
    EXPECT_EQ(AMVIA_FreeMem(m + 64), AM_ERR_BAD_ARG) << "an interior pointer";
    ASSERT_EQ(AM_SetSeg(ep, m, 8192), AM_OK);
    EXPECT_EQ(AMVIA_FreeMem(m), AM_ERR_RESOURCE) << "it holds the endpoint's segment";
    ASSERT_EQ(AM_SetSeg(ep, seg.data(), kSegLen), AM_OK);
    EXPECT_EQ(AMVIA_FreeMem(m), AM_OK);
    EXPECT_EQ(AMVIA_FreeMem(m), AM_ERR_BAD_ARG) << "freed twice";
}

// ---- tags and events ---------------------------------------------------------------------------
TEST_F(Am, TagAndEventMask) {
    ASSERT_EQ(AM_Map(ep, 1, name, kTag ^ 1), AM_OK);
    int ran = 0;
    g_on_request = [&](void *, int32_t) { ran++; };
    ASSERT_EQ(AM_Request1(ep, 1, 1, 1), AM_OK);
    ASSERT_TRUE(poll_until([] { return g_returned.count == 1; }));
    EXPECT_EQ(g_returned.status, EBADTAG);
    EXPECT_EQ(ran, 0);
    for (int bad : {-1, int(AM_NUMEVENTMASKS), 1000}) EXPECT_EQ(AM_SetEventMask(eb, bad), AM_ERR_BAD_ARG) << bad;
    EXPECT_EQ(AM_WaitSema(eb), AM_ERR_BAD_ARG) << "AM_NOEVENTS would never wake";
}

// AMVIA_FatalErr ends the program (and the job) with code 1 and the message.
TEST(AmFatal, FatalErrExitsWithOneAndTheMessage) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(AMVIA_FatalErr("bad input %d", 42), ::testing::ExitedWithCode(1), "bad input 42");
}

} // namespace
