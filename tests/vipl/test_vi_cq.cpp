// test_vi_cq.cpp - VI creation/attributes/states, completion queues, wait timeouts.
#include <thread>

#include "vipl_test_util.hpp"

using namespace vt;

namespace {

VIP_RELIABILITY_LEVEL best_level() { return supported_levels().back(); }

TEST(Vi, CreateQueryDestroy) {
    Ptag tag;
    for (VIP_RELIABILITY_LEVEL l : supported_levels()) {
        SCOPED_TRACE(level_name(l));
        VIP_VI_ATTRIBUTES want = vi_attr(l, tag.h(), true, rdma_read_supported(l));
        want.MaxTransferSize = std::min<VIP_ULONG>(4096, nic_attr().MaxTransferSize);
        Vi v(want);
        VT_ASSERT_OK(v.rc);
        VIP_VI_STATE st;
        VIP_VI_ATTRIBUTES got;
        VIP_BOOLEAN se = VIP_FALSE, re = VIP_FALSE;
        VT_ASSERT_OK(VipQueryVi(v.h(), &st, &got, &se, &re));
        EXPECT_EQ(st, VIP_STATE_IDLE);
        EXPECT_EQ(got.ReliabilityLevel, l);
        EXPECT_EQ(got.MaxTransferSize, want.MaxTransferSize);
        EXPECT_EQ(got.Ptag, tag.h());
        EXPECT_EQ(got.EnableRdmaWrite, VIP_TRUE);
        EXPECT_EQ(got.EnableRdmaRead, want.EnableRdmaRead);
        EXPECT_EQ(se, VIP_TRUE);
        EXPECT_EQ(re, VIP_TRUE);
    }
}

TEST(Vi, CreateRejectsBadAttributes) {
    Ptag tag;
    VIP_VI_HANDLE h = nullptr;
    VIP_VI_ATTRIBUTES a = vi_attr(best_level(), tag.h());

    for (VIP_RELIABILITY_LEVEL bad : {0, 3, 8, 0x10}) {
        a.ReliabilityLevel = (VIP_RELIABILITY_LEVEL)bad;
        VT_EXPECT_RC(VIP_INVALID_RELIABILITY_LEVEL, VipCreateVi(nic(), &a, nullptr, nullptr, &h)) << "level " << bad;
    }
    for (VIP_RELIABILITY_LEVEL l :
         {VIP_SERVICE_UNRELIABLE, VIP_SERVICE_RELIABLE_DELIVERY, VIP_SERVICE_RELIABLE_RECEPTION}) {
        if (nic_attr().ReliabilityLevelSupport & l) continue;
        a.ReliabilityLevel = l;
        VT_EXPECT_RC(VIP_INVALID_RELIABILITY_LEVEL, VipCreateVi(nic(), &a, nullptr, nullptr, &h))
            << "unsupported level " << level_name(l);
    }
    a = vi_attr(best_level(), tag.h());
    a.MaxTransferSize = nic_attr().MaxTransferSize + 1;
    VT_EXPECT_RC(VIP_INVALID_MTU, VipCreateVi(nic(), &a, nullptr, nullptr, &h));

    a = vi_attr(best_level(), tag.h());
    static int qos_blob;
    a.QoS = &qos_blob;
    VT_EXPECT_RC(VIP_INVALID_QOS, VipCreateVi(nic(), &a, nullptr, nullptr, &h));

    VIP_PROTECTION_HANDLE dead = nullptr;
    VT_ASSERT_OK(VipCreatePtag(nic(), &dead));
    VT_ASSERT_OK(VipDestroyPtag(nic(), dead));
    a = vi_attr(best_level(), dead);
    VT_EXPECT_RC(VIP_INVALID_PTAG, VipCreateVi(nic(), &a, nullptr, nullptr, &h));

    for (VIP_RELIABILITY_LEVEL l : supported_levels()) {
        if (rdma_read_supported(l)) continue;
        a = vi_attr(l, tag.h(), false, true);
        VT_EXPECT_RC(VIP_INVALID_RDMAREAD, VipCreateVi(nic(), &a, nullptr, nullptr, &h))
            << "RDMA read on " << level_name(l);
    }
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipCreateVi(nic(), nullptr, nullptr, nullptr, &h));
}

TEST(Vi, SetAttributesWhileIdle) {
    Ptag tag, tag2;
    Vi v(vi_attr(best_level(), tag.h()));
    VT_ASSERT_OK(v.rc);
    VIP_VI_ATTRIBUTES a = vi_attr(best_level(), tag2.h(), true, false);
    a.MaxTransferSize = std::min<VIP_ULONG>(1024, nic_attr().MaxTransferSize);
    VT_ASSERT_OK(VipSetViAttributes(v.h(), &a));
    VIP_VI_STATE st;
    VIP_VI_ATTRIBUTES got;
    VIP_BOOLEAN se, re;
    VT_ASSERT_OK(VipQueryVi(v.h(), &st, &got, &se, &re));
    EXPECT_EQ(got.MaxTransferSize, a.MaxTransferSize);
    EXPECT_EQ(got.Ptag, tag2.h());
    EXPECT_EQ(got.EnableRdmaWrite, VIP_TRUE);

    VIP_VI_ATTRIBUTES bad = a;
    bad.MaxTransferSize = nic_attr().MaxTransferSize + 1;
    VT_EXPECT_RC(VIP_INVALID_MTU, VipSetViAttributes(v.h(), &bad));
    bad = a;
    bad.ReliabilityLevel = 0x40;
    VT_EXPECT_RC(VIP_INVALID_RELIABILITY_LEVEL, VipSetViAttributes(v.h(), &bad));
    VT_ASSERT_OK(VipQueryVi(v.h(), &st, &got, &se, &re));
    EXPECT_EQ(got.MaxTransferSize, a.MaxTransferSize) << "a rejected change must not stick";
    a.Ptag = tag.h(); // release tag2
    VT_ASSERT_OK(VipSetViAttributes(v.h(), &a));
}

TEST(Vi, DestroyWithPostedDescriptorsIsInvalidState) {
    Ptag tag;
    Descs ds(1, 1, tag.h());
    Mem buf(256, tag.h());
    VT_ASSERT_OK(buf.rc);
    VIP_VI_HANDLE vi = nullptr;
    VIP_VI_ATTRIBUTES at = vi_attr(best_level(), tag.h());
    VT_ASSERT_OK(VipCreateVi(nic(), &at, nullptr, nullptr, &vi));
    fill_recv(ds.at(0), {{buf.p(), buf.mh(), 256}});
    VT_ASSERT_OK(VipPostRecv(vi, ds.at(0), ds.mh()));
    VIP_VI_STATE st;
    VIP_VI_ATTRIBUTES got;
    VIP_BOOLEAN se, re;
    VT_ASSERT_OK(VipQueryVi(vi, &st, &got, &se, &re));
    EXPECT_EQ(st, VIP_STATE_IDLE) << "receives may be posted in the idle state";
    EXPECT_EQ(re, VIP_FALSE);
    EXPECT_EQ(se, VIP_TRUE);
    VIP_RETURN rc = VipDestroyVi(vi);
    EXPECT_EQ(rc, VIP_INVALID_STATE) << "VipDestroyVi with a receive still posted returned " << rc_str(rc);
    if (rc == VIP_SUCCESS) return;
    // Disconnecting an idle VI flushes what is posted, after which it can go.
    VipDisconnect(vi);
    VIP_DESCRIPTOR *d = wait_recv(vi, 500, &rc);
    EXPECT_EQ(d, ds.at(0)) << "a receive posted on an idle VI is not flushed by VipDisconnect "
                              "("
                           << rc_str(rc) << "), so the VI can never be destroyed";
    VT_EXPECT_OK(VipDestroyVi(vi));
}

TEST(Vi, DisconnectFlushesPostedDescriptors) {
    Ptag tag;
    Descs ds(2, 1, tag.h());
    Mem buf(256, tag.h());
    Vi a(vi_attr(best_level(), tag.h())), b(vi_attr(best_level(), tag.h()));
    VT_ASSERT_OK(a.rc);
    VT_ASSERT_OK(b.rc);
    fill_recv(ds.at(0), {{buf.p(), buf.mh(), 256}});
    VT_ASSERT_OK(VipPostRecv(a.h(), ds.at(0), ds.mh()));
    ASSERT_TRUE(connect_loopback(a.h(), b.h()));
    VT_EXPECT_RC(VIP_INVALID_STATE, VipDestroyVi(b.h())) << "b is connected";
    VT_ASSERT_OK(VipDisconnect(a.h()));
    EXPECT_EQ(vi_state(a.h()), VIP_STATE_IDLE);
    VIP_RETURN rc;
    VIP_DESCRIPTOR *d = wait_recv(a.h(), kWaitMs, &rc);
    ASSERT_EQ(d, ds.at(0)) << "the posted receive must complete on disconnect: " << rc_str(rc);
    EXPECT_TRUE(status_has(d->CS.Status, VIP_STATUS_DESC_FLUSHED_ERROR));
}

TEST(Cq, CreateDestroyRules) {
    VIP_CQ_HANDLE cq = nullptr;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipCreateCQ(nic(), 0, &cq));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipCreateCQ(nic(), 8, nullptr));
    VIP_RETURN rc = VipCreateCQ(nic(), nic_attr().MaxCQEntries + 1, &cq);
    EXPECT_TRUE(rc == VIP_INVALID_PARAMETER || rc == VIP_ERROR_RESOURCE)
        << "a CQ over MaxCQEntries must fail, got " << rc_str(rc);
    if (rc == VIP_SUCCESS) VipDestroyCQ(cq);

    VT_ASSERT_OK(VipCreateCQ(nic(), 16, &cq));
    Ptag tag;
    {
        Vi v(vi_attr(best_level(), tag.h()), nullptr, cq);
        VT_ASSERT_OK(v.rc);
        VT_EXPECT_RC(VIP_INVALID_STATE, VipDestroyCQ(cq)) << "a VI is bound to the CQ";
    }
    VT_EXPECT_OK(VipDestroyCQ(cq));
}

TEST(Cq, ResizeKeepsEntriesAndRejectsTooSmall) {
    Ptag tag;
    VIP_CQ_HANDLE cq = nullptr;
    VT_ASSERT_OK(VipCreateCQ(nic(), 4, &cq));
    {
        Vi a(vi_attr(best_level(), tag.h()), cq, nullptr), b(vi_attr(best_level(), tag.h()));
        VT_ASSERT_OK(a.rc);
        VT_ASSERT_OK(b.rc);
        ASSERT_TRUE(connect_loopback(a.h(), b.h()));
        Descs ds(6, 1, tag.h());
        for (int i = 0; i < 3; i++) {
            fill_recv(ds.at(3 + i), {});
            VT_ASSERT_OK(VipPostRecv(b.h(), ds.at(3 + i), ds.mh()));
        }
        for (int i = 0; i < 3; i++) {
            fill_send(ds.at(i), {});
            VT_ASSERT_OK(VipPostSend(a.h(), ds.at(i), ds.mh()));
        }
        for (int i = 0; i < 3; i++) ASSERT_EQ(wait_recv(b.h()), ds.at(3 + i));
        // Three send completions are now (or soon) in the CQ; let them all land.
        VIP_VI_HANDLE vi;
        VIP_BOOLEAN rq;
        VT_ASSERT_OK(VipCQWait(cq, kWaitMs, &vi, &rq));
        // Let the other two completions land: a provider marks a send descriptor
        // DONE as it queues its CQ entry (verbs: as the CQ poll above took it).
        ASSERT_TRUE(poll_until([&] { return status_done(ds.at(0)) && status_done(ds.at(1)) && status_done(ds.at(2)); }))
            << "the three sends never completed";
        VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipResizeCQ(cq, 0));
        VIP_RETURN rc = VipResizeCQ(cq, 1);
        EXPECT_TRUE(rc == VIP_INVALID_PARAMETER || rc == VIP_ERROR_RESOURCE)
            << "shrinking below the entries present must fail, got " << rc_str(rc);
        VT_ASSERT_OK(VipResizeCQ(cq, 64));
        int entries = 1;
        auto t0 = Clock::now();
        while (entries < 3 && elapsed_ms(t0) < (long)kWaitMs) {
            rc = VipCQWait(cq, 100, &vi, &rq);
            if (rc == VIP_SUCCESS) {
                EXPECT_EQ(vi, a.h());
                EXPECT_EQ(rq, VIP_FALSE);
                entries++;
            }
        }
        EXPECT_EQ(entries, 3) << "resizing lost CQ entries";
        for (int i = 0; i < 3; i++) {
            VIP_DESCRIPTOR *d = nullptr;
            VT_ASSERT_OK(VipSendDone(a.h(), &d));
            EXPECT_EQ(d, ds.at(i));
        }
    }
    VT_EXPECT_OK(VipDestroyCQ(cq));
}

TEST(Cq, EntriesNameTheViAndQueue) {
    Ptag tag;
    VIP_CQ_HANDLE cq = nullptr;
    VT_ASSERT_OK(VipCreateCQ(nic(), 32, &cq));
    {
        // a: both queues on the CQ; b: only its receive queue.
        Vi a(vi_attr(best_level(), tag.h()), cq, cq), b(vi_attr(best_level(), tag.h()), nullptr, cq);
        VT_ASSERT_OK(a.rc);
        VT_ASSERT_OK(b.rc);
        ASSERT_TRUE(connect_loopback(a.h(), b.h()));
        Mem buf(64, tag.h());
        Descs ds(4, 1, tag.h());
        VIP_VI_HANDLE vi = nullptr;
        VIP_BOOLEAN rq = 7;
        VT_EXPECT_RC(VIP_NOT_DONE, VipCQDone(cq, &vi, &rq));

        fill_recv(ds.at(0), {{buf.p(), buf.mh(), 64}});
        VT_ASSERT_OK(VipPostRecv(b.h(), ds.at(0), ds.mh()));
        fill_send(ds.at(1), {{buf.p(), buf.mh(), 16}});
        VT_ASSERT_OK(VipPostSend(a.h(), ds.at(1), ds.mh()));

        bool saw_send = false, saw_recv = false;
        for (int i = 0; i < 2; i++) {
            VT_ASSERT_OK(VipCQWait(cq, kWaitMs, &vi, &rq));
            if (vi == a.h() && rq == VIP_FALSE) saw_send = true;
            else if (vi == b.h() && rq == VIP_TRUE) saw_recv = true;
            else ADD_FAILURE() << "unexpected CQ entry vi=" << vi << " recv=" << rq;
        }
        EXPECT_TRUE(saw_send);
        EXPECT_TRUE(saw_recv);
        VT_EXPECT_RC(VIP_NOT_DONE, VipCQDone(cq, &vi, &rq));
        VIP_DESCRIPTOR *d = nullptr;
        VT_ASSERT_OK(VipSendDone(a.h(), &d)) << "the CQ entry does not dequeue the descriptor";
        EXPECT_EQ(d, ds.at(1));
        VT_ASSERT_OK(VipRecvDone(b.h(), &d));
        EXPECT_EQ(d, ds.at(0));
        EXPECT_EQ(d->CS.Length, 16u);

        // b's send queue is not on the CQ: its completion must not appear there.
        fill_recv(ds.at(2), {{buf.p(), buf.mh(), 64}});
        VT_ASSERT_OK(VipPostRecv(a.h(), ds.at(2), ds.mh()));
        fill_send(ds.at(3), {{buf.p(), buf.mh(), 8}});
        VT_ASSERT_OK(VipPostSend(b.h(), ds.at(3), ds.mh()));
        EXPECT_EQ(wait_send(b.h()), ds.at(3));
        VT_ASSERT_OK(VipCQWait(cq, kWaitMs, &vi, &rq));
        EXPECT_EQ(vi, a.h());
        EXPECT_EQ(rq, VIP_TRUE);
        VT_EXPECT_RC(VIP_NOT_DONE, VipCQDone(cq, &vi, &rq)) << "b's send leaked into the CQ";
        EXPECT_EQ(wait_recv(a.h()), ds.at(2));
    }
    VT_EXPECT_OK(VipDestroyCQ(cq));
}

TEST(Wait, TimeoutsOnEmptyQueuesAndCq) {
    Ptag tag;
    VIP_CQ_HANDLE cq = nullptr;
    VT_ASSERT_OK(VipCreateCQ(nic(), 8, &cq));
    {
        Vi a(vi_attr(best_level(), tag.h()), nullptr, cq), b(vi_attr(best_level(), tag.h()));
        VT_ASSERT_OK(a.rc);
        VT_ASSERT_OK(b.rc);
        ASSERT_TRUE(connect_loopback(a.h(), b.h()));
        VIP_DESCRIPTOR *d = nullptr;
        VT_EXPECT_RC(VIP_NOT_DONE, VipSendDone(b.h(), &d));
        VT_EXPECT_RC(VIP_NOT_DONE, VipRecvDone(b.h(), &d));
        for (VIP_ULONG ms : {0ul, 60ul}) {
            auto t0 = Clock::now();
            VT_EXPECT_RC(VIP_TIMEOUT, VipRecvWait(b.h(), ms, &d));
            long e = elapsed_ms(t0);
            EXPECT_GE(e, (long)ms - 5) << "VipRecvWait returned early";
            EXPECT_LT(e, (long)ms + 1000) << "VipRecvWait overslept";
            t0 = Clock::now();
            VT_EXPECT_RC(VIP_TIMEOUT, VipSendWait(b.h(), ms, &d));
            e = elapsed_ms(t0);
            EXPECT_GE(e, (long)ms - 5);
            EXPECT_LT(e, (long)ms + 1000);
            VIP_VI_HANDLE vi;
            VIP_BOOLEAN rq;
            t0 = Clock::now();
            VT_EXPECT_RC(VIP_TIMEOUT, VipCQWait(cq, ms, &vi, &rq));
            e = elapsed_ms(t0);
            EXPECT_GE(e, (long)ms - 5);
            EXPECT_LT(e, (long)ms + 1000);
        }
    }
    VT_EXPECT_OK(VipDestroyCQ(cq));
}

TEST(Wait, RecvWaitWakesWhenDataArrives) {
    // The sender runs on a second thread of this process: that needs a NIC that
    // allows concurrent use from several threads (nicfw does, verbs does not
    // yet; the two-process suite checks the same wake-up across processes).
    if (!nic_attr().ThreadSafe) GTEST_SKIP() << "NIC is not thread safe (VipQueryNic ThreadSafe = FALSE)";
    Ptag tag;
    Vi a(vi_attr(best_level(), tag.h())), b(vi_attr(best_level(), tag.h()));
    VT_ASSERT_OK(a.rc);
    VT_ASSERT_OK(b.rc);
    ASSERT_TRUE(connect_loopback(a.h(), b.h()));
    Mem src(64, tag.h()), dst(64, tag.h());
    Descs ds(2, 1, tag.h());
    fill_pattern(src.p(), 64, 42);
    fill_recv(ds.at(0), {{dst.p(), dst.mh(), 64}});
    VT_ASSERT_OK(VipPostRecv(b.h(), ds.at(0), ds.mh()));
    std::thread sender([&] {
        // The pause is the scenario: the receiver must already be blocked in
        // the wait when the data is sent (no state shows that a thread sleeps).
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        fill_send(ds.at(1), {{src.p(), src.mh(), 64}});
        EXPECT_EQ(VipPostSend(a.h(), ds.at(1), ds.mh()), VIP_SUCCESS);
        EXPECT_EQ(wait_send(a.h()), ds.at(1));
    });
    auto t0 = Clock::now();
    VIP_DESCRIPTOR *d = wait_recv(b.h(), VIP_INFINITE);
    long e = elapsed_ms(t0);
    sender.join();
    ASSERT_EQ(d, ds.at(0));
    EXPECT_GE(e, 40) << "woke before the data was sent";
    EXPECT_LT(e, 3000);
    EXPECT_EQ(check_pattern(dst.p(), 64, 42), -1);
}

} // namespace
