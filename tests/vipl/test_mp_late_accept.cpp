// test_mp_late_accept.cpp - a connection attempt that fails while the server
// holds the request (under `vipl-run -n 2`): the accepting VI goes back to
// Idle with the receives posted before it kept, and the next attempt connects
// it, the kept receives taking the messages, each once, in posting order
// (docs/vipl.md, "One behaviour on every provider").
#include <cstdlib>
#include <thread>

#include "mp_fixture.hpp"

using namespace vt;

namespace {

using MpLateAccept = MpTest;

constexpr int kKept = 3; // receives posted before the first accept

// The server's kept receives, 64 bytes each in buf, then the wait for the
// client's request (its handle in *conn).
void post_kept_and_wait(VIP_NIC_HANDLE nic, Link &link, VIP_VI_HANDLE vi, Mem &buf, const std::string &disc,
                        VIP_CONN_HANDLE *conn) {
    for (int i = 0; i < kKept; i++) {
        fill_recv(link.d(i), {{buf.p() + 64 * i, buf.mh(), 64}});
        VT_ASSERT_OK(VipPostRecv(vi, link.d(i), link.dmh()));
    }
    NetAddr local = NetAddr::local(disc), remote;
    VIP_VI_ATTRIBUTES ra{};
    VT_ASSERT_OK(VipConnectWait(nic, local.get(), kWaitMs, remote.get(), &ra, conn));
}

// The kept receives complete once each, in posting order, with the sender's
// immediate data (0, 1, ...); none completes twice.
void expect_kept_in_order(Link &link, VIP_VI_HANDLE vi) {
    for (int i = 0; i < kKept; i++) {
        VIP_RETURN rc;
        VIP_DESCRIPTOR *r = wait_recv(vi, kWaitMs, &rc);
        ASSERT_EQ(r, link.d(i)) << "receive " << i << ": " << rc_str(rc);
        EXPECT_FALSE(r->CS.Status & VIP_STATUS_ERROR_MASK) << status_str(r->CS.Status);
        EXPECT_EQ(r->CS.ImmediateData, (VIP_UINT32)i);
    }
    VIP_DESCRIPTOR *extra = nullptr;
    VT_EXPECT_RC(VIP_NOT_DONE, VipRecvDone(vi, &extra)) << "a receive completed twice";
}

// The server's VI: its receives posted, then the request of a client that
// gives up before the accept (here by abandoning it with VipDisconnect, which
// every provider answers as a timeout at the requester).  Deterministic: the
// client gives up between VipConnectWait and VipConnectAccept, and retries
// only after the accept has answered.
TEST_P(MpLateAccept, AcceptAfterTheRequesterGaveUpKeepsTheReceives) {
    Link link; // control messages order the two sides
    ASSERT_TRUE(link.open(name(), attr()));
    VIP_VI_ATTRIBUTES at = attr();
    at.Ptag = link.ptag();
    Vi vi(at);
    VT_ASSERT_OK(vi.rc);
    BarrierAtScopeExit keep_until_both_checked;
    Mem buf(64 * kKept, link.ptag());
    const std::string disc = name() + "-late";
    if (is_server()) {
        VIP_CONN_HANDLE conn = nullptr;
        post_kept_and_wait(nic(), link, vi.h(), buf, disc, &conn);
        if (HasFatalFailure()) return;
        ASSERT_TRUE(link.handshake(kReady)); // the client gives up now
        ASSERT_TRUE(link.handshake(kInfo));  // and has given up
        // Its cancel travels apart from the control message: give it time to land.
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        VT_EXPECT_RC(VIP_TIMEOUT, VipConnectAccept(conn, vi.h())) << "the requester had given up";
        EXPECT_EQ(vi_state(vi.h()), VIP_STATE_IDLE) << "a failed accept leaves the VI Idle";
        VIP_VI_STATE st;
        VIP_VI_ATTRIBUTES a{};
        VIP_BOOLEAN sq_empty = VIP_FALSE, rq_empty = VIP_TRUE;
        VT_ASSERT_OK(VipQueryVi(vi.h(), &st, &a, &sq_empty, &rq_empty));
        EXPECT_FALSE(rq_empty) << "the receives posted before the accept are kept";
        VIP_DESCRIPTOR *early = nullptr;
        VT_EXPECT_RC(VIP_NOT_DONE, VipRecvDone(vi.h(), &early)) << "no receive completes with the failed attempt";
        VT_ASSERT_OK(VipConnectReject(conn));
        ASSERT_TRUE(link.handshake(kDone)); // the client may retry now
        ASSERT_TRUE(connect_to_partner(vi.h(), disc + "2"));
        expect_kept_in_order(link, vi.h());
        if (HasFatalFailure()) return;
        for (int i = 0; i < kKept; i++) EXPECT_EQ(check_pattern(buf.p() + 64 * i, 8, 100 + i), -1);
    } else {
        NetAddr local = NetAddr::local(disc + "-client");
        NetAddr remote(partner_host().data(), (VIP_UINT16)partner_host().size(), disc);
        VT_ASSERT_OK(VipxConnectRequestStart(vi.h(), local.get(), remote.get(), kWaitMs, nullptr, 0));
        ASSERT_TRUE(link.handshake(kReady)); // the server holds the request
        VT_ASSERT_OK(VipDisconnect(vi.h())); // gives it up
        EXPECT_EQ(vi_state(vi.h()), VIP_STATE_IDLE);
        ASSERT_TRUE(link.handshake(kInfo));
        ASSERT_TRUE(link.handshake(kDone));
        ASSERT_TRUE(connect_to_partner(vi.h(), disc + "2"));
        for (int i = 0; i < kKept; i++) {
            fill_pattern(buf.p() + 64 * i, 8, 100 + i);
            fill_send(link.d(i), {{buf.p() + 64 * i, buf.mh(), 8}}, true, (VIP_UINT32)i);
            VT_ASSERT_OK(VipPostSend(vi.h(), link.d(i), link.dmh()));
            VIP_DESCRIPTOR *s = wait_send(vi.h());
            ASSERT_EQ(s, link.d(i));
            EXPECT_FALSE(s->CS.Status & VIP_STATUS_ERROR_MASK) << status_str(s->CS.Status);
        }
    }
}

// The requester gives up mid-handshake: after the server's accept sent its
// answer, before the requester read it; then it retries at once.  verbs
// brought the accepting queue pair up for the attempt that failed: it follows
// the retry on a new queue pair with the receives posted again, each taking
// one message, in order.  The ranks meet at a barrier of the launcher here, not
// on the control VI, whose waits would read the answer and connect.
TEST_P(MpLateAccept, GivingUpMidHandshakeKeepsTheServersReceives) {
    const char *provider = std::getenv("VIPL_PROVIDER");
    if (!provider || std::string(provider) != "verbs")
        GTEST_SKIP() << "nicfw connects at the accept (no third message), so a requester that gives up "
                        "after it breaks the connection instead (docs/vipl.md)";
    Link link;
    ASSERT_TRUE(link.open(name(), attr()));
    VIP_VI_ATTRIBUTES at = attr();
    at.Ptag = link.ptag();
    Vi vi(at);
    VT_ASSERT_OK(vi.rc);
    BarrierAtScopeExit keep_until_both_checked;
    Mem buf(64 * kKept, link.ptag());
    const std::string disc = name() + "-mid";
    if (is_server()) {
        VIP_CONN_HANDLE conn = nullptr;
        post_kept_and_wait(nic(), link, vi.h(), buf, disc, &conn);
        if (HasFatalFailure()) return;
        ASSERT_TRUE(link.handshake(kReady));
        vipl_boot_barrier();
        VT_ASSERT_OK(VipConnectAccept(conn, vi.h())) << "the accept follows the requester's retry";
        expect_kept_in_order(link, vi.h());
        if (HasFatalFailure()) return;
        ASSERT_TRUE(link.handshake(kDone));
    } else {
        NetAddr local = NetAddr::local(disc + "-client");
        NetAddr remote(partner_host().data(), (VIP_UINT16)partner_host().size(), disc);
        VT_ASSERT_OK(VipxConnectRequestStart(vi.h(), local.get(), remote.get(), kWaitMs, nullptr, 0));
        ASSERT_TRUE(link.handshake(kReady)); // (its waits send the request)
        vipl_boot_barrier();
        // The server accepts now; its answer waits, unread, until the request is given up.
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        VT_ASSERT_OK(VipDisconnect(vi.h()));
        VIP_VI_ATTRIBUTES ra{};
        VT_ASSERT_OK(VipConnectRequest(vi.h(), local.get(), remote.get(), kWaitMs, &ra));
        for (int i = 0; i < kKept; i++) {
            fill_send(link.d(i), {{buf.p() + 64 * i, buf.mh(), 8}}, true, (VIP_UINT32)i);
            VT_ASSERT_OK(VipPostSend(vi.h(), link.d(i), link.dmh()));
            ASSERT_EQ(wait_send(vi.h()), link.d(i));
        }
        ASSERT_TRUE(link.handshake(kDone));
    }
}

VT_INSTANTIATE_MP_LEVELS(MpLateAccept);

} // namespace
