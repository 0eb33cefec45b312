// tx_fast_test.cpp - the send side's common case (ViImpl::post_send ->
// Firmware::send_alone, docs/nicfw.md "The direct send") against the general
// path it stands in for, through vipl.h on two VIs of one process connected to
// each other.  Run once per firmware mode and once with direct sends off
// (VIPL_NICFW_DIRECT_SEND=0: every send rings the doorbell), with the same
// expectations:
//  * a full send queue answers VIP_ERROR_RESOURCE and keeps nothing; one
//    reaped descriptor makes room again, and every message arrives in order;
//  * a VI not connected (never, or no more after VipDisconnect) refuses a send
//    with VIP_INVALID_STATE: what connecting fixed is forgotten;
//  * a send on a VI that broke completes as flushed;
//  * the shapes the fast transmit leaves to the firmware's queue (two
//    segments, reliable reception) arrive whole;
//  * a second thread posting to the VI between the first thread's sends;
//  * sends the fast transmit declines on a check (segments that do not add
//    up to Length, a segment outside registered memory) complete with the
//    general path's status, between good sends that arrive.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <thread>

#include "nicfw_vipl_util.hpp"
#include "vipl.h"

using namespace nt;

namespace {

constexpr uint32_t kQueue = 4096; // the provider's work queue depth (nicfw kMaxQueue)
constexpr uint32_t kLen = 16;

class TxFast : public ::testing::Test {
public:
    void SetUp() override {
        NT_ASSERT_OK(VipOpenNic("nicfw0", &nic));
        NT_ASSERT_OK(VipCreatePtag(nic, &tag));
    }
    void TearDown() override {
        destroy_vis({a, b});
        mem.reset();
        VipDestroyPtag(nic, tag);
        VipCloseNic(nic);
    }
    // a sends to b, both at `level`; descriptors and buffers in one region.
    void make(VIP_RELIABILITY_LEVEL level) {
        mem = std::make_unique<Region>(nic, tag, size_t(kSlots) * (64 + kLen));
        NT_ASSERT_OK(mem->rc);
        VIP_VI_ATTRIBUTES at = vi_attr(tag, level);
        NT_ASSERT_OK(VipCreateVi(nic, &at, nullptr, nullptr, &a));
        NT_ASSERT_OK(VipCreateVi(nic, &at, nullptr, nullptr, &b));
    }
    void connect(VIP_RELIABILITY_LEVEL level) {
        ASSERT_NO_FATAL_FAILURE(make(level));
        ASSERT_TRUE(connect_loopback(nic, a, nic, b));
    }
    VIP_DESCRIPTOR *desc(uint32_t i) const { return reinterpret_cast<VIP_DESCRIPTOR *>(mem->p() + i * 64); }
    uint8_t *buf(uint32_t i) const { return mem->p() + size_t(kSlots) * 64 + i * kLen; }
    // Slot i as a send of kLen pattern bytes (seed) in `segs` segments.
    VIP_DESCRIPTOR *send_desc(uint32_t i, uint32_t seed, uint32_t segs = 1) {
        VIP_DESCRIPTOR *d = desc(i);
        std::memset(d, 0, 64);
        fill(buf(i), kLen, seed);
        d->CS.Control = VIP_CONTROL_OP_SENDRECV;
        d->CS.SegCount = segs;
        d->CS.Length = kLen;
        const uint32_t part = kLen / segs;
        for (uint32_t s = 0; s < segs; ++s) {
            d->DS[s].Local.Data.Address = buf(i) + s * part;
            d->DS[s].Local.Handle = mem->mh();
            d->DS[s].Local.Length = s + 1 == segs ? kLen - s * part : part;
        }
        return d;
    }
    VIP_DESCRIPTOR *recv_desc(uint32_t i) {
        VIP_DESCRIPTOR *d = desc(i);
        std::memset(d, 0, 64);
        std::memset(buf(i), 0, kLen);
        d->CS.Control = VIP_CONTROL_OP_SENDRECV;
        d->CS.SegCount = 1;
        d->CS.Length = kLen;
        d->DS[0].Local.Data.Address = buf(i);
        d->DS[0].Local.Handle = mem->mh();
        d->DS[0].Local.Length = kLen;
        return d;
    }
    // The send in slot i completes without error; the receive in slot r
    // holds the message of `seed`.
    void sent(uint32_t i) {
        VIP_DESCRIPTOR *d = nullptr;
        NT_ASSERT_OK(VipSendWait(a, kWaitMs, &d));
        EXPECT_EQ(d, desc(i));
        EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u) << "send " << i;
    }
    void received(uint32_t r, uint32_t seed) {
        VIP_DESCRIPTOR *d = nullptr;
        NT_ASSERT_OK(VipRecvWait(b, kWaitMs, &d));
        ASSERT_EQ(d, desc(r));
        EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u) << "receive " << r;
        EXPECT_EQ(d->CS.Length, kLen);
        EXPECT_TRUE(check(buf(r), kLen, seed)) << "receive " << r << " (message " << seed << ")";
    }

    // Four messages of one and two segments, alternating, in order.
    void mixed_shapes() {
        for (uint32_t i = 0; i < 4; ++i) NT_ASSERT_OK(VipPostRecv(b, recv_desc(kRecv0 + i), mem->mh()));
        for (uint32_t i = 0; i < 4; ++i) NT_ASSERT_OK(VipPostSend(a, send_desc(i, 10 + i, 1 + i % 2), mem->mh()));
        for (uint32_t i = 0; i < 4; ++i) ASSERT_NO_FATAL_FAILURE(sent(i));
        for (uint32_t i = 0; i < 4; ++i) ASSERT_NO_FATAL_FAILURE(received(kRecv0 + i, 10 + i));
    }

    // Slots: kQueue + 1 sends, then kQueue + 1 receives.
    static constexpr uint32_t kSlots = 2 * (kQueue + 1);
    static constexpr uint32_t kRecv0 = kQueue + 1;
    VIP_NIC_HANDLE nic = nullptr;
    VIP_PROTECTION_HANDLE tag = nullptr;
    std::unique_ptr<Region> mem;
    VIP_VI_HANDLE a = nullptr, b = nullptr;
};

TEST_F(TxFast, FullSendQueueRefusesAndKeepsNothing) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_RELIABLE_DELIVERY));
    for (uint32_t i = 0; i < kQueue; ++i) NT_ASSERT_OK(VipPostRecv(b, recv_desc(kRecv0 + i), mem->mh()));
    for (uint32_t i = 0; i < kQueue; ++i) NT_ASSERT_OK(VipPostSend(a, send_desc(i, i), mem->mh())) << "send " << i;
    // Nothing reaped: the queue is full, the next send is refused and not posted.
    VIP_DESCRIPTOR *extra = send_desc(kQueue, kQueue);
    NT_EXPECT_RC(VIP_ERROR_RESOURCE, VipPostSend(a, extra, mem->mh()));
    NT_EXPECT_RC(VIP_ERROR_RESOURCE, VipPostSend(a, extra, mem->mh())); // still not marked posted
    ASSERT_NO_FATAL_FAILURE(sent(0));
    ASSERT_NO_FATAL_FAILURE(received(kRecv0, 0));
    NT_ASSERT_OK(VipPostRecv(b, recv_desc(kRecv0 + kQueue), mem->mh()));
    NT_ASSERT_OK(VipPostSend(a, extra, mem->mh())); // one reaped: room again
    for (uint32_t i = 1; i <= kQueue; ++i) ASSERT_NO_FATAL_FAILURE(sent(i));
    for (uint32_t i = 1; i <= kQueue; ++i) ASSERT_NO_FATAL_FAILURE(received(kRecv0 + i, i));
    EXPECT_EQ(vi_state(a), VIP_STATE_CONNECTED);
}

TEST_F(TxFast, NotConnectedBeforeAndAfter) {
    ASSERT_NO_FATAL_FAILURE(make(VIP_SERVICE_RELIABLE_DELIVERY));
    NT_EXPECT_RC(VIP_INVALID_STATE, VipPostSend(a, send_desc(0, 0), mem->mh()));
    ASSERT_TRUE(connect_loopback(nic, a, nic, b));
    NT_ASSERT_OK(VipPostRecv(b, recv_desc(kRecv0), mem->mh()));
    NT_ASSERT_OK(VipPostSend(a, send_desc(0, 5), mem->mh()));
    ASSERT_NO_FATAL_FAILURE(sent(0));
    ASSERT_NO_FATAL_FAILURE(received(kRecv0, 5));
    NT_ASSERT_OK(VipDisconnect(a));
    NT_EXPECT_RC(VIP_INVALID_STATE, VipPostSend(a, send_desc(1, 6), mem->mh()));
}

TEST_F(TxFast, SendOnABrokenViIsFlushed) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_RELIABLE_DELIVERY));
    // No receive posted: a reliable VI breaks (at b, which tells a).
    NT_ASSERT_OK(VipPostSend(a, send_desc(0, 1), mem->mh()));
    VIP_DESCRIPTOR *d = nullptr;
    NT_ASSERT_OK(VipSendWait(a, kWaitMs, &d));
    for (int i = 0; i < 100000 && vi_state(a) != VIP_STATE_ERROR; ++i) VipRecvDone(b, &d);
    ASSERT_EQ(vi_state(a), VIP_STATE_ERROR);
    NT_ASSERT_OK(VipPostSend(a, send_desc(1, 2), mem->mh()));
    NT_ASSERT_OK(VipSendWait(a, kWaitMs, &d));
    EXPECT_EQ(d, desc(1));
    EXPECT_TRUE(d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR) << std::hex << d->CS.Status;
}

// One and two segments alternating: the second shape is the firmware queue's.
TEST_F(TxFast, OneAndTwoSegmentsArriveWhole) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_RELIABLE_DELIVERY));
    ASSERT_NO_FATAL_FAILURE(mixed_shapes());
}

// On an unreliable VI (a bad descriptor does not break it) a send whose
// segments do not add up to its Length, and one whose segment lies outside
// registered memory, fail the fast transmit's checks: the transmit queue's
// path gives them the spec's status (FORMAT, PROTECTION), and the good sends
// around them arrive, in order, the queue empty again after each.
TEST_F(TxFast, DeclinedChecksGetTheGeneralStatus) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_UNRELIABLE));
    for (uint32_t i = 0; i < 3; ++i) NT_ASSERT_OK(VipPostRecv(b, recv_desc(kRecv0 + i), mem->mh()));
    NT_ASSERT_OK(VipPostSend(a, send_desc(0, 20), mem->mh()));
    VIP_DESCRIPTOR *bad_len = send_desc(1, 21);
    bad_len->CS.Length = kLen + 1;
    NT_ASSERT_OK(VipPostSend(a, bad_len, mem->mh()));
    NT_ASSERT_OK(VipPostSend(a, send_desc(2, 22), mem->mh()));
    VIP_DESCRIPTOR *bad_seg = send_desc(3, 23);
    bad_seg->DS[0].Local.Data.Address = mem->p() + size_t(kSlots) * (64 + kLen); // just past the region
    NT_ASSERT_OK(VipPostSend(a, bad_seg, mem->mh()));
    NT_ASSERT_OK(VipPostSend(a, send_desc(4, 24), mem->mh()));
    const uint32_t want[5] = {0, VIP_STATUS_FORMAT_ERROR, 0, VIP_STATUS_PROTECTION_ERROR, 0};
    for (uint32_t i = 0; i < 5; ++i) {
        VIP_DESCRIPTOR *d = nullptr;
        NT_ASSERT_OK(VipSendWait(a, kWaitMs, &d));
        ASSERT_EQ(d, desc(i));
        EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, want[i]) << "send " << i << std::hex << " " << d->CS.Status;
    }
    ASSERT_NO_FATAL_FAILURE(received(kRecv0, 20));
    ASSERT_NO_FATAL_FAILURE(received(kRecv0 + 1, 22));
    ASSERT_NO_FATAL_FAILURE(received(kRecv0 + 2, 24));
    EXPECT_EQ(vi_state(a), VIP_STATE_CONNECTED);
}

// More 4 KiB sends than the 1 MiB loopback FIFO holds, then short ones: the
// long sends are not the fast transmit's shape and wait on the VI's transmit
// queue for room, and the short ones, which the fast transmit would take,
// must queue behind them instead of overtaking.  Every send completes
// without error and every message arrives whole, in posting order.
TEST_F(TxFast, ShortSendsQueueBehindSendsWaitingForTheFifo) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_RELIABLE_DELIVERY));
    constexpr uint32_t kBig = 4096, kBigSends = 320, kSmallSends = 4, kSends = kBigSends + kSmallSends;
    Buffers bufs(nic, tag, 2 * kSends, kBig);
    NT_ASSERT_OK(bufs.rc());
    const auto len_of = [&](uint32_t i) { return i < kBigSends ? kBig : kLen; };
    for (uint32_t i = 0; i < kSends; ++i) NT_ASSERT_OK(VipPostRecv(b, bufs.recv(kSends + i), bufs.mh()));
    for (uint32_t i = 0; i < kSends; ++i) {
        fill(bufs.data(i), len_of(i), 100 + i);
        NT_ASSERT_OK(VipPostSend(a, bufs.send(i, len_of(i)), bufs.mh())) << "send " << i;
    }
    for (uint32_t i = 0; i < kSends; ++i) {
        VIP_DESCRIPTOR *d = nullptr;
        NT_ASSERT_OK(VipSendWait(a, kWaitMs, &d));
        ASSERT_EQ(d, bufs.desc(i));
        EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u) << "send " << i;
    }
    for (uint32_t i = 0; i < kSends; ++i) {
        VIP_DESCRIPTOR *d = nullptr;
        NT_ASSERT_OK(VipRecvWait(b, kWaitMs, &d));
        ASSERT_EQ(d, bufs.desc(kSends + i));
        EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u) << "receive " << i;
        ASSERT_EQ(d->CS.Length, len_of(i)) << "receive " << i;
        EXPECT_TRUE(check(bufs.data(kSends + i), len_of(i), 100 + i)) << "message " << i;
    }
    EXPECT_EQ(vi_state(a), VIP_STATE_CONNECTED);
}

// Reliable reception: every send waits for the target's Ack (no fast transmit).
TEST_F(TxFast, ReliableReceptionArrivesWhole) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_RELIABLE_RECEPTION));
    ASSERT_NO_FATAL_FAILURE(mixed_shapes());
}

// A second thread posts between the first thread's sends (it shares the
// firmware's stepping: from then on the first thread's sends take the locked
// path); every message arrives, in posting order.
TEST_F(TxFast, SecondThreadPostsBetween) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_RELIABLE_DELIVERY));
    for (uint32_t i = 0; i < 3; ++i) NT_ASSERT_OK(VipPostRecv(b, recv_desc(kRecv0 + i), mem->mh()));
    NT_ASSERT_OK(VipPostSend(a, send_desc(0, 20), mem->mh()));
    VIP_RETURN rc = VIP_ERROR_RESOURCE;
    std::thread t([&] { rc = VipPostSend(a, send_desc(1, 21), mem->mh()); });
    t.join();
    NT_EXPECT_RC(VIP_SUCCESS, rc);
    NT_ASSERT_OK(VipPostSend(a, send_desc(2, 22), mem->mh()));
    for (uint32_t i = 0; i < 3; ++i) ASSERT_NO_FATAL_FAILURE(sent(i));
    for (uint32_t i = 0; i < 3; ++i) ASSERT_NO_FATAL_FAILURE(received(kRecv0 + i, 20 + i));
}

} // namespace
