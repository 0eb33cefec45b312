// test_notify_conn.cpp - one-shot notify handlers (VipSendNotify, VipRecvNotify,
// VipCQNotify run once, on a provider thread), the error callback, and the
// connection calls driven from one process (client/server with two threads).
#include <atomic>
#include <thread>

#include "loopback_fixture.hpp"

using namespace vt;

namespace {

struct DescNote {
    std::atomic<int> calls{0};
    VIP_PVOID ctx = nullptr;
    VIP_NIC_HANDLE nic = nullptr;
    VIP_VI_HANDLE vi = nullptr;
    VIP_DESCRIPTOR *desc = nullptr;
    std::thread::id thread;
};

void desc_handler(VIP_PVOID ctx, VIP_NIC_HANDLE n, VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d) {
    auto *note = static_cast<DescNote *>(ctx);
    note->ctx = ctx;
    note->nic = n;
    note->vi = vi;
    note->desc = d;
    note->thread = std::this_thread::get_id();
    note->calls.fetch_add(1, std::memory_order_release);
}

struct CqNote {
    std::atomic<int> calls{0};
    VIP_PVOID ctx = nullptr;
    VIP_NIC_HANDLE nic = nullptr;
    VIP_VI_HANDLE vi = nullptr;
    VIP_BOOLEAN recv = -1;
    std::thread::id thread;
};

void cq_handler(VIP_PVOID ctx, VIP_NIC_HANDLE n, VIP_VI_HANDLE vi, VIP_BOOLEAN recv) {
    auto *note = static_cast<CqNote *>(ctx);
    note->ctx = ctx;
    note->nic = n;
    note->vi = vi;
    note->recv = recv;
    note->thread = std::this_thread::get_id();
    note->calls.fetch_add(1, std::memory_order_release);
}

// Waits until calls >= n, never touching the queue (it belongs to the handler)
// nor driving progress (the handler runs on a provider thread).
template <class Note>
bool wait_calls(Note &note, int n, VIP_ULONG ms = kWaitMs) {
    return poll_until([&] { return note.calls.load(std::memory_order_acquire) >= n; }, ms, false);
}

using Notify = LoopbackTest;

TEST_P(Notify, RecvNotifyIsOneShotOnProviderThread) {
    connect_default();
    Mem src(64, tag->h()), dst(128, tag->h());
    fill_pattern(src.p(), 64, 21);
    fill_recv(d(0), {{dst.p(), dst.mh(), 64}});
    fill_recv(d(1), {{dst.p() + 64, dst.mh(), 64}});
    VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
    VT_ASSERT_OK(VipPostRecv(b->h(), d(1), dmh()));
    DescNote note;
    VT_ASSERT_OK(VipRecvNotify(b->h(), &note, desc_handler));
    EXPECT_EQ(note.calls.load(), 0) << "handler ran before anything arrived";
    fill_send(d(10), {{src.p(), src.mh(), 64}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(10), dmh()));
    ASSERT_TRUE(wait_calls(note, 1)) << "VipRecvNotify handler never ran";
    EXPECT_EQ(note.ctx, &note);
    EXPECT_EQ(note.nic, nic());
    EXPECT_EQ(note.vi, b->h());
    ASSERT_EQ(note.desc, d(0));
    EXPECT_TRUE(status_is(note.desc->CS.Status, VIP_STATUS_OP_RECEIVE, 0));
    EXPECT_NE(note.thread, std::this_thread::get_id()) << "handler must run on a provider thread";
    EXPECT_EQ(check_pattern(dst.p(), 64, 21), -1);
    ASSERT_EQ(wait_send(a->h()), d(10));

    // One-shot: the next message is left on the queue for the application.
    fill_send(d(11), {{src.p(), src.mh(), 64}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(11), dmh()));
    VIP_DESCRIPTOR *r = wait_recv(b->h());
    EXPECT_EQ(r, d(1)) << "the notified descriptor must have been removed from the queue";
    EXPECT_EQ(note.calls.load(), 1) << "a one-shot handler ran twice";
    ASSERT_EQ(wait_send(a->h()), d(11));
}

TEST_P(Notify, SendNotifyRunsOnceWithTheSendDescriptor) {
    connect_default();
    Mem buf(64, tag->h());
    fill_recv(d(0), {{buf.p(), buf.mh(), 64}});
    fill_recv(d(1), {{buf.p(), buf.mh(), 64}});
    VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
    VT_ASSERT_OK(VipPostRecv(b->h(), d(1), dmh()));
    DescNote note;
    VT_ASSERT_OK(VipSendNotify(a->h(), &note, desc_handler));
    fill_send(d(10), {{buf.p(), buf.mh(), 8}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(10), dmh()));
    ASSERT_TRUE(wait_calls(note, 1)) << "VipSendNotify handler never ran";
    EXPECT_EQ(note.vi, a->h());
    ASSERT_EQ(note.desc, d(10));
    EXPECT_TRUE(status_is(note.desc->CS.Status, VIP_STATUS_OP_SEND, 0));
    EXPECT_NE(note.thread, std::this_thread::get_id());
    fill_send(d(11), {{buf.p(), buf.mh(), 8}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(11), dmh()));
    EXPECT_EQ(wait_send(a->h()), d(11));
    EXPECT_EQ(note.calls.load(), 1);
    EXPECT_EQ(wait_recv(b->h()), d(0));
    EXPECT_EQ(wait_recv(b->h()), d(1));
}

TEST_P(Notify, NotifyCompletesAlreadyDoneDescriptor) {
    // A notify request on a queue that already holds a completed descriptor fires.
    connect_default();
    Mem buf(64, tag->h());
    fill_recv(d(0), {{buf.p(), buf.mh(), 64}});
    VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
    fill_send(d(10), {{buf.p(), buf.mh(), 8}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(10), dmh()));
    ASSERT_EQ(wait_send(a->h()), d(10));
    // The receive must be complete before the notify request.  Where the provider
    // publishes status at completion, watch d(0) itself; verbs completes it when
    // the queue is polled, which the notify request does.
    if (status_written_at_completion()) {
        ASSERT_TRUE(poll_until([&] { return status_done(d(0)); })) << "the receive never completed";
    }
    DescNote note;
    VT_ASSERT_OK(VipRecvNotify(b->h(), &note, desc_handler));
    ASSERT_TRUE(wait_calls(note, 1)) << "handler did not run for a descriptor already done";
    EXPECT_EQ(note.desc, d(0));
}

TEST_P(Notify, CqNotifyRemovesTheEntryNotTheDescriptor) {
    VIP_CQ_HANDLE cq = nullptr;
    VT_ASSERT_OK(VipCreateCQ(nic(), 16, &cq));
    {
        VIP_VI_ATTRIBUTES at = attr();
        connect(at, at, nullptr, nullptr, nullptr, cq);
        Mem buf(64, tag->h());
        fill_recv(d(0), {{buf.p(), buf.mh(), 64}});
        fill_recv(d(1), {{buf.p(), buf.mh(), 64}});
        VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
        VT_ASSERT_OK(VipPostRecv(b->h(), d(1), dmh()));
        CqNote note;
        VT_ASSERT_OK(VipCQNotify(cq, &note, cq_handler));
        fill_send(d(10), {{buf.p(), buf.mh(), 8}});
        VT_ASSERT_OK(VipPostSend(a->h(), d(10), dmh()));
        ASSERT_TRUE(wait_calls(note, 1)) << "VipCQNotify handler never ran";
        EXPECT_EQ(note.ctx, &note);
        EXPECT_EQ(note.nic, nic());
        EXPECT_EQ(note.vi, b->h());
        EXPECT_EQ(note.recv, VIP_TRUE);
        EXPECT_NE(note.thread, std::this_thread::get_id());
        VIP_VI_HANDLE vi;
        VIP_BOOLEAN rq;
        VT_EXPECT_RC(VIP_NOT_DONE, VipCQDone(cq, &vi, &rq)) << "the notified entry stayed in the CQ";
        VIP_DESCRIPTOR *r = nullptr;
        VT_ASSERT_OK(VipRecvDone(b->h(), &r)) << "the descriptor itself stays on the VI queue";
        EXPECT_EQ(r, d(0));
        ASSERT_EQ(wait_send(a->h()), d(10));

        fill_send(d(11), {{buf.p(), buf.mh(), 8}});
        VT_ASSERT_OK(VipPostSend(a->h(), d(11), dmh()));
        VT_ASSERT_OK(VipCQWait(cq, kWaitMs, &vi, &rq));
        EXPECT_EQ(vi, b->h());
        EXPECT_EQ(note.calls.load(), 1) << "a one-shot CQ handler ran twice";
        EXPECT_EQ(wait_recv(b->h()), d(1));
        ASSERT_EQ(wait_send(a->h()), d(11));
        a.reset();
        b.reset(); // unbind before the CQ goes
    }
    VT_EXPECT_OK(VipDestroyCQ(cq));
}

TEST_P(Notify, BadArgumentsAreRejected) {
    connect_default();
    DescNote note;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipRecvNotify(nullptr, &note, desc_handler));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipSendNotify(a->h(), &note, nullptr));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipCQNotify(nullptr, &note, cq_handler));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipErrorCallback(nullptr, nullptr, nullptr));
}

TEST_P(Notify, ErrorCallbackReportsAsyncErrors) {
    // An RDMA write into a region without RDMA write enabled is an asynchronous error
    // at the target on unreliable and reliable-delivery VIs (VIP_ERROR_RDMAW_PROT).
    if (level() == VIP_SERVICE_RELIABLE_RECEPTION)
        GTEST_SKIP() << "reliable reception reports this in the initiator's descriptor";
    if (level() == VIP_SERVICE_UNRELIABLE && !reports_unreliable_rdma_errors())
        GTEST_SKIP() << "this provider drops unreliable RDMA protection violations silently";
    connect_default();
    Mem target(4096, tag->h(), false), src(64, tag->h());
    size_t mark = error_mark();
    fill_rdma(d(1), VIP_CONTROL_OP_RDMAWRITE, target.p(), target.mh(), {{src.p(), src.mh(), 64}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
    VIP_DESCRIPTOR *s = wait_send(a->h());
    ASSERT_EQ(s, d(1));
    if (s->CS.Status & VIP_STATUS_RDMA_PROT_ERROR)
        GTEST_SKIP() << "provider reports the error to the initiator instead";
    ErrorRecord e{};
    ASSERT_TRUE(wait_error_on(mark, VIP_ERROR_RDMAW_PROT, b->h(), 2000, &e))
        << "no VIP_ERROR_RDMAW_PROT delivered to the error callback";
    EXPECT_EQ(e.vi, b->h());
    EXPECT_EQ(e.resource, VIP_RESOURCE_VI);
    EXPECT_NE(e.context, nullptr) << "the context given to VipErrorCallback";
}

VT_INSTANTIATE_LEVELS(Notify);

// ---- connection management inside one process -----------------------------------
using Conn = LoopbackTest;

TEST_P(Conn, ClientServerAcceptWithDiscriminator) {
    VIP_VI_ATTRIBUTES at = attr();
    Vi server(at), client(at);
    VT_ASSERT_OK(server.rc);
    VT_ASSERT_OK(client.rc);
    std::string disc = unique_disc("cs") + std::string(40, 'x'); // long discriminator
    NetAddr srv_addr = NetAddr::local(disc);
    NetAddr cli_addr = NetAddr::local(unique_disc("client"));
    std::atomic<int> server_rc{-1};
    VIP_VI_ATTRIBUTES seen_client{};
    NetAddr seen_remote;
    std::thread srv([&] {
        VIP_CONN_HANDLE conn = nullptr;
        VIP_RETURN rc = VipConnectWait(nic(), srv_addr.get(), kWaitMs, seen_remote.get(), &seen_client, &conn);
        if (rc == VIP_SUCCESS) rc = VipConnectAccept(conn, server.h());
        server_rc = rc;
    });
    VIP_VI_ATTRIBUTES remote{};
    VIP_RETURN rc = VIP_TIMEOUT;
    auto t0 = Clock::now();
    do { // the server thread may not be listening yet
        rc = VipConnectRequest(client.h(), cli_addr.get(), srv_addr.get(), 500, &remote);
    } while ((rc == VIP_TIMEOUT || rc == VIP_NO_MATCH) && elapsed_ms(t0) < (long)kWaitMs);
    srv.join();
    VT_ASSERT_OK(rc);
    ASSERT_EQ(server_rc.load(), VIP_SUCCESS) << rc_str((VIP_RETURN)server_rc.load());
    EXPECT_EQ(remote.ReliabilityLevel, at.ReliabilityLevel);
    EXPECT_EQ(remote.MaxTransferSize, at.MaxTransferSize);
    EXPECT_EQ(seen_client.ReliabilityLevel, at.ReliabilityLevel);
    EXPECT_EQ(seen_remote.host(), NetAddr::local("").host());
    EXPECT_EQ(vi_state(client.h()), VIP_STATE_CONNECTED);
    EXPECT_EQ(vi_state(server.h()), VIP_STATE_CONNECTED);
}

TEST_P(Conn, ConnectWaitTimesOut) {
    NetAddr addr = NetAddr::local(unique_disc("nobody"));
    NetAddr remote;
    VIP_VI_ATTRIBUTES ra;
    VIP_CONN_HANDLE conn = nullptr;
    auto t0 = Clock::now();
    VT_EXPECT_RC(VIP_TIMEOUT, VipConnectWait(nic(), addr.get(), 80, remote.get(), &ra, &conn));
    EXPECT_GE(elapsed_ms(t0), 75);
    EXPECT_LT(elapsed_ms(t0), 3000);
}

TEST_P(Conn, ConnectRequestToNobodyFails) {
    Vi v(attr());
    VT_ASSERT_OK(v.rc);
    NetAddr mine = NetAddr::local(unique_disc("c")), nobody = NetAddr::local(unique_disc("none"));
    VIP_VI_ATTRIBUTES ra;
    auto t0 = Clock::now();
    VIP_RETURN rc = VipConnectRequest(v.h(), mine.get(), nobody.get(), 100, &ra);
    EXPECT_TRUE(rc == VIP_TIMEOUT || rc == VIP_NO_MATCH) << rc_str(rc);
    EXPECT_LT(elapsed_ms(t0), 3000);
    EXPECT_EQ(vi_state(v.h()), VIP_STATE_IDLE) << "a failed request leaves the VI idle";
}

TEST_P(Conn, DiscriminatorLongerThanMaxIsRejected) {
    Vi v(attr());
    VT_ASSERT_OK(v.rc);
    NetAddr mine = NetAddr::local("x");
    NetAddr too_long = NetAddr::local("y");
    if (nic_attr().MaxDiscriminatorLen >= VIP_MAX_DISCRIMINATOR_LEN)
        too_long.get()->DiscriminatorLen = VIP_MAX_DISCRIMINATOR_LEN + 1;
    else too_long.set_disc(std::string(nic_attr().MaxDiscriminatorLen + 1, 'z'));
    VIP_VI_ATTRIBUTES ra;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectRequest(v.h(), mine.get(), too_long.get(), 100, &ra));
}

TEST_P(Conn, ConnectAlreadyConnectedViIsInvalidState) {
    connect_default();
    NetAddr mine = NetAddr::local(unique_disc("c")), other = NetAddr::local(unique_disc("d"));
    VIP_VI_ATTRIBUTES ra;
    VT_EXPECT_RC(VIP_INVALID_STATE, VipConnectRequest(a->h(), mine.get(), other.get(), 50, &ra));
    VT_EXPECT_RC(VIP_INVALID_STATE, VipConnectPeerRequest(a->h(), mine.get(), other.get(), 50));
}

VT_INSTANTIATE_LEVELS(Conn);

} // namespace
