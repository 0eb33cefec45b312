// test_data_loopback.cpp - every data-transfer operation between two VIs of one NIC:
// send/receive with gather/scatter and all sizes, immediate data, in-order
// completion, RDMA write, RDMA write with immediate, RDMA read.
#include <thread>

#include "loopback_fixture.hpp"

using namespace vt;

namespace {

using Data = LoopbackTest;

std::vector<size_t> test_sizes() {
    std::vector<size_t> s = {0, 1, 7, 64, 1000, 4096, 65537};
    size_t max = max_transfer();
    std::vector<size_t> out;
    for (size_t x : s)
        if (x < max) out.push_back(x);
    out.push_back(max);
    return out;
}

TEST_P(Data, SendRecvAllSizesAndSegmentCounts) {
    connect_default();
    size_t max = max_transfer();
    Mem src(max, tag->h()), dst(max + 64, tag->h());
    VT_ASSERT_OK(src.rc);
    VT_ASSERT_OK(dst.rc);
    uint32_t seed = 1;
    for (size_t size : test_sizes()) {
        for (size_t nseg : {size_t(0), size_t(1), size_t(2), size_t(3), max_segs()}) {
            if (nseg == 0 && size != 0) continue;
            SCOPED_TRACE(::testing::Message() << "size " << size << " segments " << nseg);
            seed++;
            fill_pattern(src.p(), size, seed);
            std::memset(dst.p(), 0xEE, size + 64);
            // Receive capacity: exactly the size, split over the same number of segments
            // (plus 64 spare bytes in the last one so a bigger buffer is exercised too).
            auto rsegs = split(dst.p(), dst.mh(), size, nseg);
            if (!rsegs.empty()) rsegs.back().len += 64;
            fill_recv(d(0), rsegs);
            VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
            fill_send(d(1), split(src.p(), src.mh(), size, nseg));
            VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
            VIP_RETURN rc;
            VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
            ASSERT_EQ(s, d(1)) << "send did not complete: " << rc_str(rc);
            ASSERT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_SEND, 0));
            VIP_DESCRIPTOR *r = wait_recv(b->h(), kWaitMs, &rc);
            ASSERT_EQ(r, d(0)) << "receive did not complete: " << rc_str(rc);
            EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0));
            EXPECT_EQ(r->CS.Length, size) << "received length";
            EXPECT_EQ(check_pattern(dst.p(), size, seed), -1) << "data corrupted";
            EXPECT_EQ(dst.p()[size], 0xEE) << "wrote past the message";
            if (HasFatalFailure() || HasNonfatalFailure()) return;
        }
    }
}

TEST_P(Data, ImmediateDataRidesInTheControlSegment) {
    connect_default();
    Mem src(64, tag->h()), dst(64, tag->h());
    fill_pattern(src.p(), 16, 9);
    for (int i = 0; i < 3; i++) {
        fill_recv(d(i), {{dst.p(), dst.mh(), 64}});
        VT_ASSERT_OK(VipPostRecv(b->h(), d(i), dmh()));
    }
    fill_send(d(10), {{src.p(), src.mh(), 16}}, true, 0xC0FFEE01u);
    fill_send(d(11), {}, true, 0xFFFFFFFFu); // immediate only, no data
    fill_send(d(12), {{src.p(), src.mh(), 4}}, false, 0x12345678u);
    for (int i = 10; i < 13; i++) VT_ASSERT_OK(VipPostSend(a->h(), d(i), dmh()));
    VIP_DESCRIPTOR *r = wait_recv(b->h());
    ASSERT_EQ(r, d(0));
    EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0, true));
    EXPECT_EQ(r->CS.ImmediateData, 0xC0FFEE01u);
    EXPECT_EQ(r->CS.Length, 16u);
    r = wait_recv(b->h());
    ASSERT_EQ(r, d(1));
    EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0, true));
    EXPECT_EQ(r->CS.ImmediateData, 0xFFFFFFFFu);
    EXPECT_EQ(r->CS.Length, 0u);
    r = wait_recv(b->h());
    ASSERT_EQ(r, d(2));
    EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0, false))
        << "no IMMEDIATE bit without VIP_CONTROL_IMMEDIATE";
    for (int i = 10; i < 13; i++) ASSERT_EQ(wait_send(a->h()), d(i));
}

TEST_P(Data, DescriptorsCompleteInPostingOrder) {
    connect_default();
    constexpr int n = 24;
    Mem src(n * 8, tag->h()), dst(n * 8, tag->h());
    for (int i = 0; i < n; i++) {
        fill_recv(d(i), {{dst.p() + 8 * i, dst.mh(), 8}});
        VT_ASSERT_OK(VipPostRecv(b->h(), d(i), dmh()));
    }
    for (int i = 0; i < n; i++) {
        std::memcpy(src.p() + 8 * i, &i, sizeof i);
        fill_send(d(32 + i), {{src.p() + 8 * i, src.mh(), 8}}, true, (VIP_UINT32)i);
        VT_ASSERT_OK(VipPostSend(a->h(), d(32 + i), dmh()));
    }
    for (int i = 0; i < n; i++) {
        VIP_DESCRIPTOR *r = wait_recv(b->h());
        ASSERT_EQ(r, d(i)) << "receive queue completed out of order at " << i;
        EXPECT_EQ(r->CS.ImmediateData, (VIP_UINT32)i) << "messages matched out of order";
        int got;
        std::memcpy(&got, dst.p() + 8 * i, sizeof got);
        EXPECT_EQ(got, i);
    }
    for (int i = 0; i < n; i++) ASSERT_EQ(wait_send(a->h()), d(32 + i)) << "send queue completed out of order at " << i;
}

TEST_P(Data, DonePollingReturnsNotDoneThenTheDescriptor) {
    connect_default();
    Mem buf(32, tag->h());
    VIP_DESCRIPTOR *r = nullptr;
    VT_EXPECT_RC(VIP_NOT_DONE, VipRecvDone(b->h(), &r));
    fill_recv(d(0), {{buf.p(), buf.mh(), 32}});
    VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
    VT_EXPECT_RC(VIP_NOT_DONE, VipRecvDone(b->h(), &r)) << "nothing was sent yet";
    fill_send(d(1), {{buf.p(), buf.mh(), 32}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
    auto t0 = Clock::now();
    VIP_RETURN rc;
    while ((rc = VipRecvDone(b->h(), &r)) == VIP_NOT_DONE && elapsed_ms(t0) < (long)kWaitMs) std::this_thread::yield();
    VT_ASSERT_OK(rc);
    EXPECT_EQ(r, d(0));
    t0 = Clock::now();
    while ((rc = VipSendDone(a->h(), &r)) == VIP_NOT_DONE && elapsed_ms(t0) < (long)kWaitMs) std::this_thread::yield();
    VT_ASSERT_OK(rc);
    EXPECT_EQ(r, d(1));
    VT_EXPECT_RC(VIP_NOT_DONE, VipSendDone(a->h(), &r)) << "a descriptor completed twice";
}

// Sends a 0-byte message a->b and waits for it: in reliable modes it arrives after
// everything posted before it on a, so RDMA data is in place.
void fence_with_send(LoopbackTest &t, VIP_VI_HANDLE a, VIP_VI_HANDLE b, VIP_DESCRIPTOR *rd, VIP_DESCRIPTOR *sd,
                     VIP_MEM_HANDLE mh) {
    fill_recv(rd, {});
    ASSERT_EQ(VipPostRecv(b, rd, mh), VIP_SUCCESS);
    fill_send(sd, {});
    ASSERT_EQ(VipPostSend(a, sd, mh), VIP_SUCCESS);
    ASSERT_EQ(wait_recv(b), rd);
    ASSERT_EQ(wait_send(a), sd);
}

TEST_P(Data, RdmaWriteGathersIntoRemoteMemory) {
    connect_default();
    Mem src(8192, tag->h()), target(16384, tag->h(), true, false);
    for (size_t nseg : {size_t(1), size_t(3), max_segs() - 1}) {
        SCOPED_TRACE(::testing::Message() << "data segments " << nseg);
        std::memset(target.p(), 0, target.size());
        fill_pattern(src.p(), 5000, (uint32_t)nseg);
        // Guard receive: an RDMA write must not consume it.
        fill_recv(d(0), {});
        VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
        fill_rdma(d(1), VIP_CONTROL_OP_RDMAWRITE, target.p() + 100, target.mh(), split(src.p(), src.mh(), 5000, nseg));
        VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
        ASSERT_EQ(s, d(1)) << rc_str(rc);
        EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_WRITE, 0));
        // The guard receive now matches the fence message instead.
        fill_send(d(2), {});
        VT_ASSERT_OK(VipPostSend(a->h(), d(2), dmh()));
        VIP_DESCRIPTOR *r = wait_recv(b->h());
        ASSERT_EQ(r, d(0));
        EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0))
            << "the guard receive was consumed by the RDMA write";
        ASSERT_EQ(wait_send(a->h()), d(2));
        EXPECT_EQ(check_pattern(target.p() + 100, 5000, (uint32_t)nseg), -1);
        EXPECT_EQ(target.p()[99], 0);
        EXPECT_EQ(target.p()[5100], 0);
    }
}

TEST_P(Data, RdmaWriteWithImmediateConsumesOneReceive) {
    connect_default();
    Mem src(4096, tag->h()), target(4096, tag->h(), true, false), rbuf(64, tag->h());
    fill_pattern(src.p(), 3000, 77);
    std::memset(rbuf.p(), 0xAB, 64);
    fill_recv(d(0), {{rbuf.p(), rbuf.mh(), 64}});
    VT_ASSERT_OK(VipPostRecv(b->h(), d(0), dmh()));
    fill_rdma(d(1), VIP_CONTROL_OP_RDMAWRITE, target.p(), target.mh(), {{src.p(), src.mh(), 3000}}, true, 0xA5A5F00Du);
    VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
    VIP_RETURN rc;
    VIP_DESCRIPTOR *r = wait_recv(b->h(), kWaitMs, &rc);
    ASSERT_EQ(r, d(0)) << rc_str(rc);
    EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_REMOTE_RDMA_WRITE, 0, true));
    EXPECT_EQ(r->CS.ImmediateData, 0xA5A5F00Du);
    EXPECT_EQ(check_pattern(target.p(), 3000, 77), -1) << "the data must be in place when the immediate completes";
    EXPECT_EQ(rbuf.p()[0], 0xAB) << "RDMA data must not land in the receive buffers";
    VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
    ASSERT_EQ(s, d(1)) << rc_str(rc);
    EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_WRITE, 0));
}

TEST_P(Data, RdmaReadScattersRemoteMemory) {
    if (!rdma_read_supported(level())) GTEST_SKIP() << "RDMA read not supported at " << level_name(level());
    connect_default();
    Mem remote(8192, tag->h(), false, true), local(8192, tag->h());
    fill_pattern(remote.p(), 8192, 31);
    std::memset(local.p(), 0, 8192);
    fill_rdma(d(1), VIP_CONTROL_OP_RDMAREAD, remote.p() + 8, remote.mh(), split(local.p(), local.mh(), 6000, 3));
    VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
    VIP_RETURN rc;
    VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
    ASSERT_EQ(s, d(1)) << rc_str(rc);
    EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_READ, 0));
    std::vector<uint8_t> expect(8192);
    fill_pattern(expect.data(), 8192, 31);
    EXPECT_EQ(std::memcmp(local.p(), expect.data() + 8, 6000), 0) << "read data differs";
    EXPECT_EQ(local.p()[6000], 0) << "read past the requested length";
}

TEST_P(Data, MaxTransferSizeRdmaWrite) {
    connect_default();
    size_t max = max_transfer();
    Mem src(max, tag->h()), target(max, tag->h(), true, false);
    fill_pattern(src.p(), max, 5);
    fill_rdma(d(1), VIP_CONTROL_OP_RDMAWRITE, target.p(), target.mh(), {{src.p(), src.mh(), (VIP_UINT32)max}});
    VT_ASSERT_OK(VipPostSend(a->h(), d(1), dmh()));
    VIP_RETURN rc;
    VIP_DESCRIPTOR *s = wait_send(a->h(), kWaitMs, &rc);
    ASSERT_EQ(s, d(1)) << rc_str(rc);
    EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_WRITE, 0));
    fence_with_send(*this, a->h(), b->h(), d(2), d(3), dmh());
    EXPECT_EQ(check_pattern(target.p(), max, 5), -1);
}

VT_INSTANTIATE_LEVELS(Data);

} // namespace
