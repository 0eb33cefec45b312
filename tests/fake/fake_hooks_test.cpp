// fake_hooks_test.cpp - the fake provider's fault hooks (fake_hooks.h): each
// fault observed as the VI Architecture says the VI's reliability level makes
// of it, deterministically (the fake completes everything at post time, so
// "not yet delivered" is VipRecvDone == VIP_NOT_DONE, not a timeout).  Also:
// several fake NICs of one process connected to each other.
//
// Runs with VIPL_PROVIDER=fake (the ctest entry sets it); the NIC under test is
// fake0, opened by the suite's main (tests/vipl/vipl_test_main.cpp).
#include <cstring>
#include <thread>

#include "fake_hooks.h"
#include "loopback_fixture.hpp"

using namespace vt;

namespace {

vipl_fake_stats stats() {
    vipl_fake_stats s;
    vipl_fake_get_stats(&s);
    return s;
}

class Faults : public LoopbackTest {
protected:
    void SetUp() override {
        LoopbackTest::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        ASSERT_TRUE(provider_is_fake()) << "run with VIPL_PROVIDER=fake";
        vipl_fake_faults_clear();
        vipl_fake_reset_stats();
        connect_default();
    }
    void TearDown() override {
        vipl_fake_faults_clear();
        vipl_fake_release_held();
        LoopbackTest::TearDown();
    }
    // Posts receive i of 64 bytes into buf + 64 * i.
    void post_recv(size_t i, Mem &buf) {
        fill_recv(d(i), {{buf.p() + 64 * i, buf.mh(), 64}});
        ASSERT_EQ(VipPostRecv(b->h(), d(i), dmh()), VIP_SUCCESS);
    }
    // Sends 16 bytes with immediate data imm from descriptor i.
    void send_imm(size_t i, Mem &src, VIP_UINT32 imm) {
        fill_send(d(i), {{src.p(), src.mh(), 16}}, true, imm);
        ASSERT_EQ(VipPostSend(a->h(), d(i), dmh()), VIP_SUCCESS);
    }
    VIP_DESCRIPTOR *recv_now() {
        VIP_DESCRIPTOR *r = nullptr;
        return VipRecvDone(b->h(), &r) == VIP_SUCCESS ? r : nullptr;
    }
    // Both ends broke: ERROR, the posted receive flushed, a connection error
    // reported on each side.
    void expect_broken(size_t mark, VIP_ERROR_CODE sender_code) {
        EXPECT_EQ(vi_state(a->h()), VIP_STATE_ERROR);
        EXPECT_EQ(vi_state(b->h()), VIP_STATE_ERROR);
        VIP_DESCRIPTOR *r = recv_now();
        ASSERT_EQ(r, d(0));
        EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, VIP_STATUS_DESC_FLUSHED_ERROR));
        // Each end is told (the callbacks run on the provider's agent thread).
        EXPECT_TRUE(wait_error_on(mark, VIP_ERROR_CONN_LOST, b->h(), kWaitMs)) << "the receiver was not told";
        EXPECT_TRUE(wait_error_on(mark, sender_code, a->h(), kWaitMs)) << "the sender was not told";
        EXPECT_EQ(stats().connections_broken, 1u);
    }
};

TEST_P(Faults, DropIsLostOnUnreliableAndBreaksAReliableConnection) {
    Mem src(64, tag->h()), dst(256, tag->h());
    post_recv(0, dst);
    post_recv(1, dst);
    const size_t mark = error_mark();
    ASSERT_EQ(vipl_fake_fault_next(a->h(), VIPL_FAKE_DROP, 1, 0), VIP_SUCCESS);
    send_imm(10, src, 1);
    EXPECT_EQ(stats().dropped, 1u);
    if (reliable()) {
        VIP_DESCRIPTOR *s = wait_send(a->h());
        ASSERT_EQ(s, d(10));
        if (level() == VIP_SERVICE_RELIABLE_RECEPTION) {
            EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_SEND, VIP_STATUS_TRANSPORT_ERROR));
        }
        expect_broken(mark, VIP_ERROR_RDMA_TRANSPORT);
        EXPECT_EQ(recv_now(), d(1)) << "every posted receive is flushed";
        return;
    }
    EXPECT_EQ(recv_now(), nullptr) << "a dropped message was delivered";
    EXPECT_EQ(vi_state(b->h()), VIP_STATE_CONNECTED);
    send_imm(11, src, 2);
    VIP_DESCRIPTOR *r = recv_now();
    ASSERT_EQ(r, d(0));
    EXPECT_EQ(r->CS.ImmediateData, 2u) << "the next message takes the receive the lost one never reached";
    EXPECT_EQ(recv_now(), nullptr);
    EXPECT_EQ(wait_send(a->h()), d(10));
    EXPECT_EQ(wait_send(a->h()), d(11));
    fill_send(d(12), {{src.p(), src.mh(), 16}}, true, 3); // reclaims receive 1
    ASSERT_EQ(VipPostSend(a->h(), d(12), dmh()), VIP_SUCCESS);
    EXPECT_EQ(recv_now(), d(1));
    EXPECT_EQ(wait_send(a->h()), d(12));
}

TEST_P(Faults, DuplicateIsDeliveredOnceAtEveryLevel) {
    Mem src(64, tag->h()), dst(256, tag->h());
    post_recv(0, dst);
    post_recv(1, dst);
    ASSERT_EQ(vipl_fake_fault_next(a->h(), VIPL_FAKE_DUPLICATE, 1, 0), VIP_SUCCESS);
    send_imm(10, src, 7);
    VIP_DESCRIPTOR *r = recv_now();
    ASSERT_EQ(r, d(0));
    EXPECT_EQ(r->CS.ImmediateData, 7u);
    EXPECT_EQ(recv_now(), nullptr) << "the second copy was delivered (at most once)";
    EXPECT_EQ(stats().duplicates_discarded, 1u);
    EXPECT_EQ(vi_state(b->h()), VIP_STATE_CONNECTED);
    EXPECT_EQ(wait_send(a->h()), d(10));
    send_imm(11, src, 8);
    EXPECT_EQ(recv_now(), d(1));
    EXPECT_EQ(wait_send(a->h()), d(11));
}

TEST_P(Faults, ReorderIsVisibleOnlyOnUnreliable) {
    Mem src(64, tag->h()), dst(256, tag->h());
    post_recv(0, dst);
    post_recv(1, dst);
    ASSERT_EQ(vipl_fake_fault_next(a->h(), VIPL_FAKE_REORDER, 1, 0), VIP_SUCCESS);
    send_imm(10, src, 1);
    send_imm(11, src, 2);
    VIP_DESCRIPTOR *r0 = recv_now(), *r1 = recv_now();
    ASSERT_EQ(r0, d(0));
    ASSERT_EQ(r1, d(1));
    EXPECT_EQ(stats().reordered, 1u);
    if (reliable()) {
        EXPECT_EQ(r0->CS.ImmediateData, 1u) << "a reliable VI delivers in order";
        EXPECT_EQ(r1->CS.ImmediateData, 2u);
    } else {
        EXPECT_EQ(r0->CS.ImmediateData, 2u) << "the held message was not overtaken";
        EXPECT_EQ(r1->CS.ImmediateData, 1u);
    }
    EXPECT_EQ(wait_send(a->h()), d(10));
    EXPECT_EQ(wait_send(a->h()), d(11));
}

TEST_P(Faults, DelayHoldsAMessageForNPosts) {
    Mem src(64, tag->h()), dst(256, tag->h());
    post_recv(0, dst);
    post_recv(1, dst);
    ASSERT_EQ(vipl_fake_fault_next(a->h(), VIPL_FAKE_DELAY, 1, 2), VIP_SUCCESS);
    send_imm(10, src, 1); // held for the next two posts
    EXPECT_EQ(recv_now(), nullptr) << "delivered before its delay";
    EXPECT_EQ(stats().delayed, 1u);
    send_imm(11, src, 2); // post 1 of 2
    if (reliable()) {
        EXPECT_EQ(recv_now(), nullptr) << "a reliable VI's later message must wait behind the delayed one";
    } else {
        VIP_DESCRIPTOR *r = recv_now();
        ASSERT_EQ(r, d(0)) << "an unreliable VI's later message overtakes the delayed one";
        EXPECT_EQ(r->CS.ImmediateData, 2u);
    }
    post_recv(2, dst); // post 2 of 2: the delayed message (and any behind it) arrives
    std::vector<VIP_UINT32> got;
    while (VIP_DESCRIPTOR *r = recv_now()) got.push_back(r->CS.ImmediateData);
    if (reliable()) EXPECT_EQ(got, (std::vector<VIP_UINT32>{1, 2}));
    else EXPECT_EQ(got, (std::vector<VIP_UINT32>{1}));
    EXPECT_EQ(wait_send(a->h()), d(10));
    EXPECT_EQ(wait_send(a->h()), d(11));
    // Receive 2 is still posted: a last message reclaims it.
    send_imm(12, src, 3);
    EXPECT_EQ(recv_now(), d(2));
    EXPECT_EQ(wait_send(a->h()), d(12));
}

// Reliable Reception completes a send once the data is placed; the other
// levels once it is on the wire.  A delay makes the difference visible.
TEST_P(Faults, ReliableReceptionCompletesTheSendAtDelivery) {
    Mem src(64, tag->h()), dst(256, tag->h());
    post_recv(0, dst);
    ASSERT_EQ(vipl_fake_fault_next(a->h(), VIPL_FAKE_DELAY, 1, 1), VIP_SUCCESS);
    send_imm(10, src, 1);
    VIP_DESCRIPTOR *s = nullptr;
    if (level() == VIP_SERVICE_RELIABLE_RECEPTION) {
        EXPECT_EQ(VipSendDone(a->h(), &s), VIP_NOT_DONE) << "completed before the data was placed";
    } else {
        ASSERT_EQ(VipSendDone(a->h(), &s), VIP_SUCCESS) << "not complete once on the wire";
        EXPECT_EQ(s, d(10));
    }
    EXPECT_EQ(recv_now(), nullptr);
    post_recv(1, dst); // the one post of the delay: the message arrives
    EXPECT_EQ(recv_now(), d(0));
    if (level() == VIP_SERVICE_RELIABLE_RECEPTION) {
        ASSERT_EQ(VipSendDone(a->h(), &s), VIP_SUCCESS);
        EXPECT_EQ(s, d(10));
    }
    EXPECT_TRUE(status_is(d(10)->CS.Status, VIP_STATUS_OP_SEND, 0));
    send_imm(11, src, 2); // reclaims receive 1
    EXPECT_EQ(recv_now(), d(1));
    EXPECT_EQ(wait_send(a->h()), d(11));
}

// An RDMA write is a message too: dropped on an unreliable VI, the target
// memory is untouched and the VI stays up.
TEST_P(Faults, DroppedRdmaWriteLeavesTheTargetUntouched) {
    if (reliable()) GTEST_SKIP() << "the reliable case is DropIsLost...: the connection breaks";
    Mem src(64, tag->h()), target(64, tag->h(), true);
    fill_pattern(src.p(), 64, 3);
    ASSERT_EQ(vipl_fake_fault_next(a->h(), VIPL_FAKE_DROP, 1, 0), VIP_SUCCESS);
    fill_rdma(d(10), VIP_CONTROL_OP_RDMAWRITE, target.p(), target.mh(), {{src.p(), src.mh(), 64}});
    ASSERT_EQ(VipPostSend(a->h(), d(10), dmh()), VIP_SUCCESS);
    EXPECT_EQ(wait_send(a->h()), d(10));
    for (int i = 0; i < 64; i++) ASSERT_EQ(target.p()[i], 0) << "a dropped RDMA write landed at " << i;
    fill_rdma(d(11), VIP_CONTROL_OP_RDMAWRITE, target.p(), target.mh(), {{src.p(), src.mh(), 64}});
    ASSERT_EQ(VipPostSend(a->h(), d(11), dmh()), VIP_SUCCESS);
    EXPECT_EQ(wait_send(a->h()), d(11));
    EXPECT_EQ(check_pattern(target.p(), 64, 3), -1) << "the next RDMA write did not land";
    EXPECT_EQ(vi_state(a->h()), VIP_STATE_CONNECTED);
}

TEST_P(Faults, CorruptionIsDetectedAndNeverDelivered) {
    Mem src(64, tag->h()), dst(256, tag->h());
    fill_pattern(src.p(), 16, 99);
    post_recv(0, dst);
    const size_t mark = error_mark();
    ASSERT_EQ(vipl_fake_fault_next(a->h(), VIPL_FAKE_CORRUPT, 1, 0), VIP_SUCCESS);
    send_imm(10, src, 1);
    EXPECT_EQ(stats().checksum_failures, 1u);
    EXPECT_EQ(stats().delivered, 0u);
    if (reliable()) {
        ASSERT_EQ(wait_send(a->h()), d(10));
        // The target detects it; the sender hears of the broken connection.
        EXPECT_EQ(vi_state(a->h()), VIP_STATE_ERROR);
        EXPECT_EQ(vi_state(b->h()), VIP_STATE_ERROR);
        EXPECT_TRUE(status_has(recv_now()->CS.Status, VIP_STATUS_DESC_FLUSHED_ERROR));
        EXPECT_TRUE(wait_error_on(mark, VIP_ERROR_RDMA_TRANSPORT, b->h(), kWaitMs));
        EXPECT_TRUE(wait_error_on(mark, VIP_ERROR_CONN_LOST, a->h(), kWaitMs));
        return;
    }
    EXPECT_EQ(recv_now(), nullptr) << "a corrupted message was delivered";
    for (int i = 0; i < 16; i++)
        ASSERT_EQ(dst.p()[i], 0) << "bytes of the corrupted message reached the buffer at " << i;
    send_imm(11, src, 2);
    VIP_DESCRIPTOR *r = recv_now();
    ASSERT_EQ(r, d(0));
    EXPECT_EQ(r->CS.ImmediateData, 2u);
    EXPECT_EQ(check_pattern(dst.p(), 16, 99), -1);
    EXPECT_EQ(wait_send(a->h()), d(10));
    EXPECT_EQ(wait_send(a->h()), d(11));
}

TEST_P(Faults, BreakConnectionFlushesBothEndsAndEndsTheirWaits) {
    Mem dst(256, tag->h());
    post_recv(0, dst);
    const size_t mark = error_mark();
    ASSERT_EQ(vipl_fake_break_connection(a->h()), VIP_SUCCESS);
    expect_broken(mark, VIP_ERROR_CONN_LOST);
    VIP_DESCRIPTOR *r = nullptr;
    EXPECT_EQ(VipRecvWait(b->h(), VIP_INFINITE, &r), VIP_INVALID_STATE)
        << "a wait on the broken VI's empty queue must end";
    EXPECT_EQ(vipl_fake_break_connection(a->h()), VIP_INVALID_STATE) << "not connected any more";
}

// A random rule with a seed: the same seed drops the same messages.
TEST_P(Faults, RandomDropsRepeatWithTheSeed) {
    if (reliable()) GTEST_SKIP() << "one drop breaks a reliable connection";
    Mem src(64, tag->h()), dst(64 * 40, tag->h());
    auto run = [&](uint64_t seed) {
        vipl_fake_faults_clear();
        EXPECT_EQ(vipl_fake_fault_random(a->h(), VIPL_FAKE_DROP, 0.3, seed, 0), VIP_SUCCESS);
        for (size_t i = 0; i < 20; i++) post_recv(i, dst);
        for (VIP_UINT32 i = 0; i < 20; i++) {
            send_imm(20 + i, src, i);
            EXPECT_EQ(wait_send(a->h()), d(20 + i));
        }
        vipl_fake_faults_clear();
        std::vector<VIP_UINT32> got;
        while (VIP_DESCRIPTOR *r = recv_now()) got.push_back(r->CS.ImmediateData);
        // Reclaim the receives the dropped messages never reached.
        for (size_t k = got.size(); k < 20; k++) {
            send_imm(40, src, 999);
            EXPECT_EQ(wait_send(a->h()), d(40));
            EXPECT_NE(recv_now(), nullptr);
        }
        return got;
    };
    const auto first = run(42), again = run(42), other = run(7);
    EXPECT_EQ(first, again) << "the same seed must drop the same messages";
    EXPECT_NE(first, other) << "another seed drops others (20 messages at p = 0.3)";
    EXPECT_LT(first.size(), 20u);
    EXPECT_GT(first.size(), 0u);
}

TEST(FakeHooks, RefuseWhatIsNotAFakeVi) {
    if (!provider_is_fake()) GTEST_SKIP() << "run with VIPL_PROVIDER=fake";
    EXPECT_EQ(vipl_fake_fault_next(reinterpret_cast<VIP_VI_HANDLE>(0x1234), VIPL_FAKE_DROP, 1, 0),
              VIP_INVALID_PARAMETER);
    EXPECT_EQ(vipl_fake_fault_next(nullptr, VIPL_FAKE_DROP, 0, 0), VIP_INVALID_PARAMETER) << "count 0";
    EXPECT_EQ(vipl_fake_fault_next(nullptr, VIPL_FAKE_DELAY, 1, 0), VIP_INVALID_PARAMETER) << "delay 0";
    EXPECT_EQ(vipl_fake_fault_random(nullptr, VIPL_FAKE_DROP, 1.5, 1, 0), VIP_INVALID_PARAMETER);
    EXPECT_EQ(vipl_fake_break_connection(nullptr), VIP_INVALID_PARAMETER);
}

// ---- several NICs of one process -------------------------------------------------
TEST(FakeNics, TwoNicsConnectThroughTheSwitchboard) {
    if (!provider_is_fake()) GTEST_SKIP() << "run with VIPL_PROVIDER=fake";
    VIP_NIC_HANDLE n1 = nullptr, n2 = nullptr;
    VT_ASSERT_OK(VipOpenNic("fake1", &n1));
    VT_ASSERT_OK(VipOpenNic("fake2", &n2));
    VIP_NIC_ATTRIBUTES a1, a2;
    VT_ASSERT_OK(VipQueryNic(n1, &a1));
    VT_ASSERT_OK(VipQueryNic(n2, &a2));
    EXPECT_STREQ(a1.Name, "fake1");
    EXPECT_STREQ(a2.Name, "fake2");
    ASSERT_EQ(a1.NicAddressLen, 2);
    EXPECT_NE(std::memcmp(a1.LocalNicAddress, a2.LocalNicAddress, 2), 0) << "two NICs, one address";
    {
        Ptag t1(n1), t2(n2);
        VIP_VI_ATTRIBUTES at1 = vi_attr(VIP_SERVICE_RELIABLE_DELIVERY, t1.h(), true);
        VIP_VI_ATTRIBUTES at2 = vi_attr(VIP_SERVICE_RELIABLE_DELIVERY, t2.h(), true);
        VIP_VI_HANDLE v1 = nullptr, v2 = nullptr;
        VT_ASSERT_OK(VipCreateVi(n1, &at1, nullptr, nullptr, &v1));
        VT_ASSERT_OK(VipCreateVi(n2, &at2, nullptr, nullptr, &v2));
        // The name service knows the other NICs of the process as "fakeN".
        NetAddr to2, to1;
        VT_ASSERT_OK(VipNSGetHostByName(n1, const_cast<char *>("fake2"), to2.get(), 0));
        VT_ASSERT_OK(VipNSGetHostByName(n2, const_cast<char *>("fake1"), to1.get(), 0));
        EXPECT_EQ(to2.host(), std::vector<uint8_t>(a2.LocalNicAddress, a2.LocalNicAddress + 2));
        to2.set_disc("two");
        to1.set_disc("one");
        NetAddr me1(a1.LocalNicAddress, 2, "one"), me2(a2.LocalNicAddress, 2, "two");
        // Client/server: the server waits on another thread.
        std::thread server([&] {
            NetAddr remote;
            VIP_VI_ATTRIBUTES ra{};
            VIP_CONN_HANDLE c = nullptr;
            EXPECT_EQ(VipConnectWait(n2, me2.get(), kWaitMs, remote.get(), &ra, &c), VIP_SUCCESS);
            EXPECT_EQ(remote.host(), std::vector<uint8_t>(a1.LocalNicAddress, a1.LocalNicAddress + 2));
            EXPECT_EQ(VipConnectAccept(c, v2), VIP_SUCCESS);
        });
        VIP_VI_ATTRIBUTES ra{};
        VT_EXPECT_OK(VipConnectRequest(v1, me1.get(), to2.get(), kWaitMs, &ra));
        server.join();
        EXPECT_EQ(vi_state(v1), VIP_STATE_CONNECTED);
        EXPECT_EQ(vi_state(v2), VIP_STATE_CONNECTED);
        {
            Mem src(64, t1.h(), false, false, n1), dst(64, t2.h(), false, false, n2);
            Descs ds1(1, 1, t1.h(), n1), ds2(1, 1, t2.h(), n2);
            fill_pattern(src.p(), 64, 5);
            fill_recv(ds2.at(0), {{dst.p(), dst.mh(), 64}});
            VT_ASSERT_OK(VipPostRecv(v2, ds2.at(0), ds2.mh()));
            fill_send(ds1.at(0), {{src.p(), src.mh(), 64}});
            VT_ASSERT_OK(VipPostSend(v1, ds1.at(0), ds1.mh()));
            EXPECT_EQ(wait_recv(v2), ds2.at(0));
            EXPECT_EQ(wait_send(v1), ds1.at(0));
            EXPECT_EQ(check_pattern(dst.p(), 64, 5), -1);
        }
        VT_EXPECT_OK(VipDisconnect(v1));
        EXPECT_EQ(vi_state(v2), VIP_STATE_ERROR) << "the peer learns of the disconnect";
        VT_EXPECT_OK(VipDisconnect(v2));
        VT_EXPECT_OK(VipDestroyVi(v1));
        VT_EXPECT_OK(VipDestroyVi(v2));
    }
    VT_EXPECT_OK(VipCloseNic(n1));
    VT_EXPECT_OK(VipCloseNic(n2));
}

TEST(FakeNics, TheSameNameOpensTheSameNic) {
    if (!provider_is_fake()) GTEST_SKIP() << "run with VIPL_PROVIDER=fake";
    VIP_NIC_HANDLE h = nullptr;
    VT_ASSERT_OK(VipOpenNic("fake0", &h));
    VIP_NIC_ATTRIBUTES at;
    VT_ASSERT_OK(VipQueryNic(h, &at));
    EXPECT_STREQ(at.Name, nic_attr().Name);
    EXPECT_EQ(std::memcmp(at.LocalNicAddress, nic_attr().LocalNicAddress, 2), 0);
    VT_EXPECT_OK(VipCloseNic(h));
}

VT_INSTANTIATE_LEVELS(Faults);

} // namespace
