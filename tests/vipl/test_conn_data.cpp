// test_conn_data.cpp - the connection extensions libfabric needs (vipl.h,
// "viastack extensions"): private data on a request, an accept and a reject,
// the request that does not block (VipxConnectRequestStart / Done), polling
// VipxConnectWaitData with Timeout 0, and what a VI sees when its peer
// disconnects.  One process: the client and the server are two VIs of this
// process's NIC, driven from this thread, which the non-blocking request makes
// possible.
#include <array>
#include <chrono>
#include <string>
#include <thread>

#include "loopback_fixture.hpp"

using namespace vt;

namespace {

// A request's private data travels with its discriminators: on verbs both
// share rdma_cm's REQ (docs/verbs.md), elsewhere a request carries
// VIPX_CM_DATA_MAX bytes whatever its discriminators.
size_t request_room(size_t disc_bytes) {
    if (provider_is_nicfw() || provider_is_fake()) return VIPX_CM_DATA_MAX;
    return 43 - disc_bytes;
}

std::array<uint8_t, VIPX_CM_DATA_MAX + 1> pattern(uint8_t seed) {
    std::array<uint8_t, VIPX_CM_DATA_MAX + 1> p{};
    for (size_t i = 0; i < p.size(); i++) p[i] = uint8_t(seed + 7 * i);
    return p;
}

class ConnData : public LoopbackTest {
protected:
    void SetUp() override {
        LoopbackTest::SetUp();
        if (IsSkipped()) return;
        client = std::make_unique<Vi>(attr());
        server = std::make_unique<Vi>(attr());
        ASSERT_EQ(client->rc, VIP_SUCCESS);
        ASSERT_EQ(server->rc, VIP_SUCCESS);
        srv_addr = NetAddr::local(unique_disc("srv"));
        cli_addr = NetAddr::local(""); // no discriminator: all the room for data on verbs
    }
    void TearDown() override {
        client.reset();
        server.reset();
        LoopbackTest::TearDown();
    }
    size_t room() const { return request_room(srv_addr.get()->DiscriminatorLen); }

    // Starts the client's request with `len` bytes of pattern(seed).
    VIP_RETURN start(size_t len, uint8_t seed, VIP_ULONG timeout = kWaitMs) {
        auto p = pattern(seed);
        return VipxConnectRequestStart(client->h(), cli_addr.get(), srv_addr.get(), timeout, p.data(), len);
    }
    // Takes the request at the server, polling with Timeout 0 (which makes the
    // provider's progress itself: no VipxProgress between polls); its data in buf/len.
    ::testing::AssertionResult take(VIP_CONN_HANDLE *conn, uint8_t *buf, VIP_ULONG *len,
                                    VIP_VI_ATTRIBUTES *ra = nullptr) {
        NetAddr remote;
        VIP_VI_ATTRIBUTES attrs{};
        VIP_RETURN rc = VIP_TIMEOUT;
        bool ok = poll_until(
            [&] {
                rc = VipxConnectWaitData(nic(), srv_addr.get(), 0, remote.get(), ra ? ra : &attrs, conn, buf, len);
                return rc != VIP_TIMEOUT;
            },
            kWaitMs, false);
        if (!ok || rc != VIP_SUCCESS) return ::testing::AssertionFailure() << "VipxConnectWaitData: " << rc_str(rc);
        return ::testing::AssertionSuccess();
    }
    // Polls VipxConnectRequestDone until it is not VIP_NOT_DONE.
    VIP_RETURN done(VIP_VI_ATTRIBUTES *ra, void *buf, VIP_ULONG *len, VIP_ULONG ms = kWaitMs) {
        VIP_RETURN rc = VIP_NOT_DONE;
        poll_until([&] { return (rc = VipxConnectRequestDone(client->h(), ra, buf, len)) != VIP_NOT_DONE; }, ms, false);
        return rc;
    }

    std::unique_ptr<Vi> client, server;
    NetAddr srv_addr, cli_addr;
};

TEST_P(ConnData, RequestAndAcceptCarryPrivateData) {
    VT_ASSERT_OK(start(24, 1)); // what ofi_rxm's fi_connect sends
    EXPECT_EQ(vi_state(client->h()), VIP_STATE_CONNECT_PENDING);
    VIP_CONN_HANDLE conn = nullptr;
    uint8_t got[VIPX_CM_DATA_MAX] = {};
    VIP_ULONG len = sizeof got;
    VIP_VI_ATTRIBUTES seen_client{};
    ASSERT_TRUE(take(&conn, got, &len, &seen_client));
    ASSERT_EQ(len, 24u);
    EXPECT_EQ(0, std::memcmp(got, pattern(1).data(), 24));
    EXPECT_EQ(seen_client.ReliabilityLevel, level());
    auto reply = pattern(2);
    VT_ASSERT_OK(VipxConnectAcceptData(conn, server->h(), reply.data(), 16));
    VIP_VI_ATTRIBUTES ra{};
    uint8_t back[VIPX_CM_DATA_MAX] = {};
    VIP_ULONG back_len = 4; // a short buffer: 4 bytes copied, the full length reported
    VT_ASSERT_OK(done(&ra, back, &back_len));
    EXPECT_EQ(back_len, 16u);
    EXPECT_EQ(0, std::memcmp(back, reply.data(), 4));
    EXPECT_EQ(back[4], 0) << "copied past the caller's length";
    EXPECT_EQ(ra.ReliabilityLevel, level());
    EXPECT_EQ(vi_state(client->h()), VIP_STATE_CONNECTED);
    EXPECT_EQ(vi_state(server->h()), VIP_STATE_CONNECTED);
    // The result is handed back once.
    VT_EXPECT_RC(VIP_INVALID_STATE, VipxConnectRequestDone(client->h(), nullptr, nullptr, nullptr));
    // The connection carries data.
    Mem buf(64, tag->h());
    fill_recv(d(0), {{buf.p(), buf.mh(), 32}});
    VT_ASSERT_OK(VipPostRecv(server->h(), d(0), dmh()));
    fill_pattern(buf.p() + 32, 32, 9);
    fill_send(d(1), {{buf.p() + 32, buf.mh(), 32}});
    VT_ASSERT_OK(VipPostSend(client->h(), d(1), dmh()));
    EXPECT_EQ(wait_send(client->h()), d(1));
    ASSERT_EQ(wait_recv(server->h()), d(0));
    EXPECT_EQ(check_pattern(buf.p(), 32, 9), -1);
    VT_EXPECT_OK(VipDisconnect(client->h()));
    VT_EXPECT_OK(VipDisconnect(server->h()));
}

// Every request length the provider carries, each answered by a reject carrying
// the complement (so both directions see every length 0..VIPX_CM_DATA_MAX).
TEST_P(ConnData, EveryLengthRoundTripsThroughRequestAndReject) {
    for (size_t n = 0; n <= VIPX_CM_DATA_MAX; n++) {
        SCOPED_TRACE("request length " + std::to_string(n));
        if (n > room()) {
            VT_EXPECT_RC(VIP_INVALID_PARAMETER, start(n, uint8_t(n)));
            EXPECT_EQ(vi_state(client->h()), VIP_STATE_IDLE);
            continue;
        }
        VT_ASSERT_OK(start(n, uint8_t(n)));
        VIP_CONN_HANDLE conn = nullptr;
        uint8_t got[VIPX_CM_DATA_MAX] = {};
        VIP_ULONG len = sizeof got;
        ASSERT_TRUE(take(&conn, got, &len));
        ASSERT_EQ(len, n);
        EXPECT_EQ(0, std::memcmp(got, pattern(uint8_t(n)).data(), n));
        const size_t m = VIPX_CM_DATA_MAX - n;
        auto reason = pattern(uint8_t(100 + n));
        VT_ASSERT_OK(VipxConnectRejectData(conn, reason.data(), m));
        uint8_t back[VIPX_CM_DATA_MAX] = {};
        VIP_ULONG back_len = sizeof back;
        VT_ASSERT_RC(VIP_REJECT, done(nullptr, back, &back_len));
        ASSERT_EQ(back_len, m);
        EXPECT_EQ(0, std::memcmp(back, reason.data(), m));
        EXPECT_EQ(vi_state(client->h()), VIP_STATE_IDLE) << "a rejected VI is idle again";
    }
}

TEST_P(ConnData, TooMuchDataIsRefusedAndLosesNothing) {
    auto p = pattern(3);
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, start(VIPX_CM_DATA_MAX + 1, 3));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER,
                 VipxConnectRequestStart(client->h(), cli_addr.get(), srv_addr.get(), kWaitMs, nullptr, 1));
    EXPECT_EQ(vi_state(client->h()), VIP_STATE_IDLE);
    VT_EXPECT_RC(VIP_INVALID_STATE, VipxConnectRequestDone(client->h(), nullptr, nullptr, nullptr));
    // A refused accept or reject leaves the connection handle usable.
    VT_ASSERT_OK(start(8, 3));
    VIP_CONN_HANDLE conn = nullptr;
    ASSERT_TRUE(take(&conn, nullptr, nullptr));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectAcceptData(conn, server->h(), p.data(), VIPX_CM_DATA_MAX + 1));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectAcceptData(conn, server->h(), nullptr, 2));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectRejectData(conn, p.data(), VIPX_CM_DATA_MAX + 1));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectRejectData(conn, nullptr, 2));
    EXPECT_EQ(vi_state(server->h()), VIP_STATE_IDLE);
    VT_ASSERT_OK(VipxConnectAcceptData(conn, server->h(), p.data(), VIPX_CM_DATA_MAX));
    VIP_ULONG len = 0; // no buffer: only the length
    VT_ASSERT_OK(done(nullptr, nullptr, &len));
    EXPECT_EQ(len, VIPX_CM_DATA_MAX);
    VT_EXPECT_OK(VipDisconnect(client->h()));
    VT_EXPECT_OK(VipDisconnect(server->h()));
}

TEST_P(ConnData, UnansweredRequestTimesOutWhenPolled) {
    NetAddr nobody = NetAddr::local(unique_disc("nobody"));
    auto p = pattern(4);
    auto t0 = Clock::now();
    VT_ASSERT_OK(VipxConnectRequestStart(client->h(), cli_addr.get(), nobody.get(), 300, p.data(), 8));
    EXPECT_LT(elapsed_ms(t0), 300) << "the request waited";
    VIP_RETURN rc = VipxConnectRequestDone(client->h(), nullptr, nullptr, nullptr);
    if (elapsed_ms(t0) < 300) { // (a machine that stalled us past the deadline may have ended it)
        EXPECT_EQ(rc, VIP_NOT_DONE) << rc_str(rc);
        EXPECT_EQ(vi_state(client->h()), VIP_STATE_CONNECT_PENDING);
        rc = done(nullptr, nullptr, nullptr);
    }
    EXPECT_TRUE(rc == VIP_TIMEOUT || rc == VIP_NO_MATCH) << rc_str(rc);
    EXPECT_GE(elapsed_ms(t0), 290);
    EXPECT_EQ(vi_state(client->h()), VIP_STATE_IDLE);
    VT_EXPECT_RC(VIP_INVALID_STATE, VipxConnectRequestDone(client->h(), nullptr, nullptr, nullptr));
    // The VI can ask again.
    VT_ASSERT_OK(start(0, 0));
    VIP_CONN_HANDLE conn = nullptr;
    ASSERT_TRUE(take(&conn, nullptr, nullptr));
    VT_ASSERT_OK(VipConnectAccept(conn, server->h()));
    VIP_ULONG len = 99;
    VT_ASSERT_OK(done(nullptr, nullptr, &len));
    EXPECT_EQ(len, 0u) << "an accept without data";
    VT_EXPECT_OK(VipDisconnect(client->h()));
    VT_EXPECT_OK(VipDisconnect(server->h()));
}

// A request is given up when Done looks after its deadline and no answer has
// been taken in: an accept that arrives past the deadline but before that look
// connects.  (The VI's state shows when the NIC has taken the answer in.)
TEST_P(ConnData, LateAcceptBeforeDoneLooksConnects) {
    VT_ASSERT_OK(start(4, 6, 50));
    VIP_CONN_HANDLE conn = nullptr;
    ASSERT_TRUE(take(&conn, nullptr, nullptr));
    std::this_thread::sleep_for(std::chrono::milliseconds(80));
    VT_ASSERT_OK(VipConnectAccept(conn, server->h()));
    EXPECT_EQ(wait_state_change(client->h(), VIP_STATE_CONNECT_PENDING, kWaitMs), VIP_STATE_CONNECTED);
    VT_EXPECT_OK(done(nullptr, nullptr, nullptr));
    EXPECT_EQ(vi_state(client->h()), VIP_STATE_CONNECTED);
    VT_EXPECT_OK(VipDisconnect(client->h()));
    VT_EXPECT_OK(VipDisconnect(server->h()));
}

// Done gave up (VIP_TIMEOUT, the server told) before the server answered.  The
// accept either knows it (nicfw, once its NIC has taken the cancel in:
// VIP_TIMEOUT, the VI idle, the handle still to be rejected) or connects the
// server's VI to nobody, which then breaks (nicfw with the cancel still on its
// way, the fake provider): never a VI left Connected to an idle one.  (verbs
// first waits 2 s for a retry of the withdrawn request: docs/vipl.md.)
TEST_P(ConnData, AcceptAfterTheClientGaveUp) {
    VT_ASSERT_OK(start(4, 7, 30));
    VIP_CONN_HANDLE conn = nullptr;
    ASSERT_TRUE(take(&conn, nullptr, nullptr));
    VT_ASSERT_RC(VIP_TIMEOUT, done(nullptr, nullptr, nullptr));
    EXPECT_EQ(vi_state(client->h()), VIP_STATE_IDLE);
    VIP_RETURN rc = VipConnectAccept(conn, server->h());
    if (rc == VIP_TIMEOUT) {
        EXPECT_EQ(vi_state(server->h()), VIP_STATE_IDLE);
        VT_EXPECT_OK(VipConnectReject(conn));
    } else {
        VT_ASSERT_OK(rc);
        EXPECT_EQ(wait_state_change(server->h(), VIP_STATE_CONNECTED, kWaitMs), VIP_STATE_ERROR);
        VT_EXPECT_OK(VipDisconnect(server->h()));
    }
    EXPECT_EQ(vi_state(client->h()), VIP_STATE_IDLE) << "the client stays idle";
}

TEST_P(ConnData, DoneWithoutARequestIsInvalidState) {
    VIP_VI_ATTRIBUTES ra;
    uint8_t buf[8];
    VIP_ULONG len = sizeof buf;
    VT_EXPECT_RC(VIP_INVALID_STATE, VipxConnectRequestDone(client->h(), &ra, buf, &len));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectRequestDone(nullptr, &ra, buf, &len));
    EXPECT_EQ(vi_state(client->h()), VIP_STATE_IDLE);
}

TEST_P(ConnData, WaitDataWithTimeoutZeroPollsAtOnce) {
    NetAddr remote;
    VIP_VI_ATTRIBUTES ra;
    VIP_CONN_HANDLE conn;
    uint8_t buf[8];
    VIP_ULONG len = sizeof buf;
    auto t0 = Clock::now();
    for (int i = 0; i < 10; i++)
        VT_EXPECT_RC(VIP_TIMEOUT, VipxConnectWaitData(nic(), srv_addr.get(), 0, remote.get(), &ra, &conn, buf, &len));
    EXPECT_LT(elapsed_ms(t0), 500) << "ten polls with Timeout 0";
}

TEST_P(ConnData, DisconnectAbandonsAPendingRequest) {
    VT_ASSERT_OK(start(8, 5));
    VT_EXPECT_OK(VipDisconnect(client->h()));
    EXPECT_EQ(vi_state(client->h()), VIP_STATE_IDLE);
    VT_EXPECT_RC(VIP_INVALID_STATE, VipxConnectRequestDone(client->h(), nullptr, nullptr, nullptr));
}

// The peer's VipDisconnect: this VI goes to the error state, what it has posted
// comes back flushed, and the error callback hears VIP_ERROR_CONN_LOST.
TEST_P(ConnData, PeerDisconnectBreaksTheVi) {
    VT_ASSERT_OK(start(0, 0));
    VIP_CONN_HANDLE conn = nullptr;
    ASSERT_TRUE(take(&conn, nullptr, nullptr));
    VT_ASSERT_OK(VipConnectAccept(conn, server->h()));
    VT_ASSERT_OK(done(nullptr, nullptr, nullptr));
    Mem buf(64, tag->h());
    fill_recv(d(0), {{buf.p(), buf.mh(), 64}});
    VT_ASSERT_OK(VipPostRecv(server->h(), d(0), dmh()));
    size_t mark = error_mark();
    VT_ASSERT_OK(VipDisconnect(client->h()));
    EXPECT_EQ(wait_state_change(server->h(), VIP_STATE_CONNECTED, kWaitMs), VIP_STATE_ERROR);
    VIP_RETURN rc;
    VIP_DESCRIPTOR *r = wait_recv(server->h(), kWaitMs, &rc);
    ASSERT_EQ(r, d(0)) << "the posted receive was not flushed: " << rc_str(rc);
    EXPECT_TRUE(status_has(r->CS.Status, VIP_STATUS_DESC_FLUSHED_ERROR)) << status_str(r->CS.Status);
    EXPECT_TRUE(wait_error_on(mark, VIP_ERROR_CONN_LOST, server->h(), kWaitMs)) << "no VIP_ERROR_CONN_LOST";
    VT_EXPECT_OK(VipDisconnect(server->h()));
    EXPECT_EQ(vi_state(server->h()), VIP_STATE_IDLE);
}

VT_INSTANTIATE_LEVELS(ConnData);

} // namespace
