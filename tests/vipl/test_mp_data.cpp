// test_mp_data.cpp - data transfer between partner ranks (run under `vipl-run -n 2`;
// rank r talks to rank r^1): send/receive with gather/scatter and every size,
// ordering, immediate data, RDMA write, RDMA write with immediate, RDMA read, and
// the error paths that need a second process (protection at the target, length).
#include <algorithm>
#include <chrono>
#include <thread>

#include "mp_fixture.hpp"

using namespace vt;

namespace {

using Mp = MpTest;

TEST_P(Mp, SendRecvSizesAndSegmentsBothDirections) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr()));
    size_t max = max_transfer();
    Mem src(max, link.ptag()), dst(max + 64, link.ptag());
    std::vector<size_t> sizes = {0, 1, 63, 4096, 65536 + 3};
    while (!sizes.empty() && sizes.back() >= max) sizes.pop_back();
    sizes.push_back(max);
    int i = 0;
    for (size_t size : sizes) {
        for (size_t nseg : {size_t(1), size_t(2), max_segs()}) {
            SCOPED_TRACE(::testing::Message() << "size " << size << " segments " << nseg);
            bool i_send = (i++ % 2 == 0) == is_server();
            uint32_t seed = (uint32_t)(size * 131 + nseg);
            if (i_send) {
                fill_pattern(src.p(), size, seed);
                ASSERT_TRUE(link.handshake(kReady)); // receiver has posted
                fill_send(link.d(1), split(src.p(), src.mh(), size, nseg));
                VT_ASSERT_OK(VipPostSend(link.data(), link.d(1), link.dmh()));
                VIP_RETURN rc;
                VIP_DESCRIPTOR *s = wait_send(link.data(), kWaitMs, &rc);
                ASSERT_EQ(s, link.d(1)) << rc_str(rc);
                EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_SEND, 0));
            } else {
                std::memset(dst.p(), 0xEE, size + 64);
                fill_recv(link.d(0), split(dst.p(), dst.mh(), size + 64, nseg));
                VT_ASSERT_OK(VipPostRecv(link.data(), link.d(0), link.dmh()));
                ASSERT_TRUE(link.handshake(kReady));
                VIP_RETURN rc;
                VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs, &rc);
                ASSERT_EQ(r, link.d(0)) << rc_str(rc);
                EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0));
                EXPECT_EQ(r->CS.Length, size);
                EXPECT_EQ(check_pattern(dst.p(), size, seed), -1) << "data corrupted";
                EXPECT_EQ(dst.p()[size], 0xEE) << "wrote past the message";
            }
        }
    }
}

TEST_P(Mp, PipelinedMessagesArriveInOrder) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr()));
    constexpr int n = 32;
    Mem buf(n * 64, link.ptag());
    if (is_server()) {
        for (int i = 0; i < n; i++) {
            fill_recv(link.d(i), {{buf.p() + 64 * i, buf.mh(), 64}});
            VT_ASSERT_OK(VipPostRecv(link.data(), link.d(i), link.dmh()));
        }
        ASSERT_TRUE(link.handshake(kReady));
        for (int i = 0; i < n; i++) {
            VIP_DESCRIPTOR *r = wait_recv(link.data());
            ASSERT_EQ(r, link.d(i)) << "receive " << i << " out of order";
            EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0, true));
            EXPECT_EQ(r->CS.ImmediateData, (VIP_UINT32)i);
            EXPECT_EQ(check_pattern(buf.p() + 64 * i, 40, i), -1);
        }
    } else {
        for (int i = 0; i < n; i++) fill_pattern(buf.p() + 64 * i, 40, i);
        ASSERT_TRUE(link.handshake(kReady));
        for (int i = 0; i < n; i++) {
            fill_send(link.d(i), {{buf.p() + 64 * i, buf.mh(), 40}}, true, (VIP_UINT32)i);
            VT_ASSERT_OK(VipPostSend(link.data(), link.d(i), link.dmh()));
        }
        for (int i = 0; i < n; i++) ASSERT_EQ(wait_send(link.data()), link.d(i)) << "send " << i << " out of order";
    }
}

TEST_P(Mp, ImmediateData) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr()));
    Mem buf(64, link.ptag());
    if (is_server()) {
        fill_recv(link.d(0), {{buf.p(), buf.mh(), 64}});
        fill_recv(link.d(1), {});
        VT_ASSERT_OK(VipPostRecv(link.data(), link.d(0), link.dmh()));
        VT_ASSERT_OK(VipPostRecv(link.data(), link.d(1), link.dmh()));
        ASSERT_TRUE(link.handshake(kReady));
        VIP_DESCRIPTOR *r = wait_recv(link.data());
        ASSERT_EQ(r, link.d(0));
        EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0, true));
        EXPECT_EQ(r->CS.ImmediateData, 0xDEADBEEFu);
        EXPECT_EQ(r->CS.Length, 12u);
        EXPECT_EQ(check_pattern(buf.p(), 12, 4), -1);
        r = wait_recv(link.data());
        ASSERT_EQ(r, link.d(1));
        EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0, true));
        EXPECT_EQ(r->CS.ImmediateData, 7u);
        EXPECT_EQ(r->CS.Length, 0u);
    } else {
        fill_pattern(buf.p(), 12, 4);
        ASSERT_TRUE(link.handshake(kReady));
        fill_send(link.d(0), {{buf.p(), buf.mh(), 12}}, true, 0xDEADBEEFu);
        fill_send(link.d(1), {}, true, 7u);
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(0), link.dmh()));
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(1), link.dmh()));
        ASSERT_EQ(wait_send(link.data()), link.d(0));
        ASSERT_EQ(wait_send(link.data()), link.d(1));
    }
}

TEST_P(Mp, RdmaWrite) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr(true)));
    if (is_server()) { // target
        Exposed t(link, 64 * 1024, true, false);
        fill_recv(link.d(0), {}); // fence receive; the RDMA write must not consume it
        VT_ASSERT_OK(VipPostRecv(link.data(), link.d(0), link.dmh()));
        CtlMsg info = t.info();
        ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs, &rc);
        ASSERT_EQ(r, link.d(0)) << rc_str(rc);
        EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0))
            << "the fence receive was consumed by the RDMA write";
        EXPECT_EQ(check_pattern(t.mem.p() + 1000, 50000, 17), -1) << "RDMA data wrong";
        EXPECT_EQ(t.mem.p()[999], 0);
        EXPECT_EQ(t.mem.p()[51000], 0);
        ASSERT_TRUE(link.handshake(kDone));
    } else {
        Mem src(50000, link.ptag());
        fill_pattern(src.p(), 50000, 17);
        CtlMsg info;
        ASSERT_TRUE(link.handshake(kInfo, &info));
        fill_rdma(link.d(0), VIP_CONTROL_OP_RDMAWRITE, (void *)(uintptr_t)(info.addr + 1000), info.mh,
                  split(src.p(), src.mh(), 50000, 3));
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(0), link.dmh()));
        fill_send(link.d(1), {});
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(1), link.dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *s = wait_send(link.data(), kWaitMs, &rc);
        ASSERT_EQ(s, link.d(0)) << rc_str(rc);
        EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_WRITE, 0));
        ASSERT_EQ(wait_send(link.data()), link.d(1));
        ASSERT_TRUE(link.handshake(kDone));
    }
}

TEST_P(Mp, RdmaWriteWithImmediate) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr(true)));
    if (is_server()) {
        Exposed t(link, 8192, true, false);
        Mem rbuf(64, link.ptag());
        fill_recv(link.d(0), {{rbuf.p(), rbuf.mh(), 64}});
        VT_ASSERT_OK(VipPostRecv(link.data(), link.d(0), link.dmh()));
        CtlMsg info = t.info();
        ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs, &rc);
        ASSERT_EQ(r, link.d(0)) << rc_str(rc);
        EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_REMOTE_RDMA_WRITE, 0, true));
        EXPECT_EQ(r->CS.ImmediateData, 0x600DF00Du);
        EXPECT_EQ(check_pattern(t.mem.p(), 8192, 23), -1);
        ASSERT_TRUE(link.handshake(kDone));
    } else {
        Mem src(8192, link.ptag());
        fill_pattern(src.p(), 8192, 23);
        CtlMsg info;
        ASSERT_TRUE(link.handshake(kInfo, &info));
        fill_rdma(link.d(0), VIP_CONTROL_OP_RDMAWRITE, (void *)(uintptr_t)info.addr, info.mh,
                  {{src.p(), src.mh(), 8192}}, true, 0x600DF00Du);
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(0), link.dmh()));
        VIP_DESCRIPTOR *s = wait_send(link.data());
        ASSERT_EQ(s, link.d(0));
        EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_WRITE, 0));
        ASSERT_TRUE(link.handshake(kDone));
    }
}

TEST_P(Mp, RdmaRead) {
    if (!rdma_read_supported(level())) GTEST_SKIP() << "RDMA read not supported at " << level_name(level());
    Link link;
    ASSERT_TRUE(link.open(name(), attr(true, true)));
    if (is_server()) {
        Exposed t(link, 32768, false, true);
        fill_pattern(t.mem.p(), 32768, 99);
        CtlMsg info = t.info();
        ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
        ASSERT_TRUE(link.handshake(kDone)); // keep the region until the read is over
    } else {
        Mem local(32768, link.ptag());
        CtlMsg info;
        ASSERT_TRUE(link.handshake(kInfo, &info));
        fill_rdma(link.d(0), VIP_CONTROL_OP_RDMAREAD, (void *)(uintptr_t)(info.addr + 512), info.mh,
                  split(local.p(), local.mh(), 20000, 2));
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(0), link.dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *s = wait_send(link.data(), kWaitMs, &rc);
        ASSERT_EQ(s, link.d(0)) << rc_str(rc);
        EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_READ, 0));
        std::vector<uint8_t> expect(32768);
        fill_pattern(expect.data(), 32768, 99);
        EXPECT_EQ(std::memcmp(local.p(), expect.data() + 512, 20000), 0) << "read data differs";
        EXPECT_EQ(local.p()[20000], 0);
        ASSERT_TRUE(link.handshake(kDone));
    }
}

TEST_P(Mp, RdmaWriteIntoRegionWithoutRdmaWrite) {
    if (level() == VIP_SERVICE_UNRELIABLE && !provider_is_nicfw())
        GTEST_SKIP() << "this provider drops unreliable RDMA protection violations silently";
    Link link;
    ASSERT_TRUE(link.open(name(), attr(true)));
    if (is_server()) {
        Exposed t(link, 4096, false, false);
        fill_pattern(t.mem.p(), 4096, 5);
        size_t mark = error_mark();
        CtlMsg info = t.info();
        ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
        CtlMsg res;
        ASSERT_TRUE(link.handshake(kResult, &res));
        EXPECT_EQ(check_pattern(t.mem.p(), 4096, 5), -1) << "protected memory was written";
        bool initiator_told = (res.value & VIP_STATUS_RDMA_PROT_ERROR) != 0;
        if (level() != VIP_SERVICE_RELIABLE_RECEPTION && !initiator_told) {
            EXPECT_TRUE(wait_error(mark, VIP_ERROR_RDMAW_PROT, 2000))
                << "neither the initiator's status nor the target's error callback reported it";
        }
        if (level() != VIP_SERVICE_UNRELIABLE) {
            EXPECT_EQ(wait_state_change(link.data(), VIP_STATE_CONNECTED, 2000), VIP_STATE_ERROR)
                << "the connection must break on a reliable VI";
        }
    } else {
        Mem src(256, link.ptag());
        CtlMsg info;
        ASSERT_TRUE(link.handshake(kInfo, &info));
        fill_rdma(link.d(0), VIP_CONTROL_OP_RDMAWRITE, (void *)(uintptr_t)info.addr, info.mh,
                  {{src.p(), src.mh(), 256}});
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(0), link.dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *s = wait_send(link.data(), kWaitMs, &rc);
        CtlMsg res{};
        res.value = s ? s->CS.Status : 0;
        EXPECT_NE(s, nullptr) << rc_str(rc);
        if (s && level() == VIP_SERVICE_RELIABLE_RECEPTION) {
            EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_WRITE, VIP_STATUS_RDMA_PROT_ERROR));
        }
        ASSERT_TRUE(link.handshake(kResult, nullptr, &res));
    }
}

TEST_P(Mp, RdmaReadFromRegionWithoutRdmaRead) {
    if (!rdma_read_supported(level())) GTEST_SKIP() << "RDMA read not supported at " << level_name(level());
    Link link;
    ASSERT_TRUE(link.open(name(), attr(true, true)));
    if (is_server()) {
        Exposed t(link, 4096, true, false); // write enabled, read not
        fill_pattern(t.mem.p(), 4096, 6);
        CtlMsg info = t.info();
        ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
        ASSERT_TRUE(link.handshake(kDone));
    } else {
        Mem local(4096, link.ptag());
        CtlMsg info;
        ASSERT_TRUE(link.handshake(kInfo, &info));
        fill_rdma(link.d(0), VIP_CONTROL_OP_RDMAREAD, (void *)(uintptr_t)info.addr, info.mh,
                  {{local.p(), local.mh(), 1024}});
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(0), link.dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *s = wait_send(link.data(), kWaitMs, &rc);
        EXPECT_EQ(s, link.d(0)) << rc_str(rc);
        if (s) {
            EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_RDMA_READ, VIP_STATUS_RDMA_PROT_ERROR));
            EXPECT_EQ(local.p()[0], 0) << "a refused RDMA read delivered data";
        }
        EXPECT_EQ(wait_state_change(link.data(), VIP_STATE_CONNECTED, 2000), VIP_STATE_ERROR);
        ASSERT_TRUE(link.handshake(kDone));
    }
}

TEST_P(Mp, MessageLongerThanPostedReceive) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr()));
    Mem buf(512, link.ptag());
    if (is_server()) {
        fill_recv(link.d(0), {{buf.p(), buf.mh(), 100}});
        VT_ASSERT_OK(VipPostRecv(link.data(), link.d(0), link.dmh()));
        ASSERT_TRUE(link.handshake(kReady));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs, &rc);
        ASSERT_EQ(r, link.d(0)) << rc_str(rc);
        EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, VIP_STATUS_LENGTH_ERROR));
        EXPECT_EQ(buf.p()[100], 0) << "wrote past the posted receive";
        if (level() != VIP_SERVICE_UNRELIABLE) {
            EXPECT_EQ(wait_state_change(link.data(), VIP_STATE_CONNECTED, 2000), VIP_STATE_ERROR);
        }
        ASSERT_TRUE(link.handshake(kDone));
    } else {
        fill_pattern(buf.p(), 300, 1);
        ASSERT_TRUE(link.handshake(kReady));
        fill_send(link.d(0), {{buf.p(), buf.mh(), 300}});
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(0), link.dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *s = wait_send(link.data(), kWaitMs, &rc);
        ASSERT_EQ(s, link.d(0)) << rc_str(rc);
        if (level() == VIP_SERVICE_RELIABLE_RECEPTION) {
            EXPECT_NE(s->CS.Status & VIP_STATUS_ERROR_MASK, 0u)
                << "reliable reception: the send must not succeed; got " << status_str(s->CS.Status);
        }
        ASSERT_TRUE(link.handshake(kDone));
    }
}

// More data than the receiver's NIC FIFO holds (nicfw: 1 MiB, a quarter kept
// for replies), posted back to back while the receiver is away: the sends the
// wire has no room for wait in the send queue (nicfw: the first ones go out at
// once by the direct send, the rest through the doorbell once one is queued) and
// go out as the receiver drains; every message arrives once, in order, intact,
// and every send completes in order.
TEST_P(Mp, MoreThanTheFifoHoldsWhileTheReceiverIsAway) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr()));
    // 800 x 2 KB overfills nicfw's FIFO; a NIC whose queues are shorter (the
    // verbs provider's) gets as many as its receive queue holds, a few left for
    // the link's own use.
    const VIP_ULONG depth = nic_attr().MaxDescriptorsPerQueue;
    const int n = int(std::min<VIP_ULONG>(800, depth > 32 ? depth - 16 : depth / 2));
    constexpr uint32_t len = 2048;
    Descs descs(size_t(n), 1, link.ptag());
    Mem buf(size_t(n) * len, link.ptag());
    if (is_server()) {
        for (int i = 0; i < n; i++) {
            fill_recv(descs.at(i), {{buf.p() + size_t(i) * len, buf.mh(), len}});
            VT_ASSERT_OK(VipPostRecv(link.data(), descs.at(i), descs.mh()));
        }
        ASSERT_TRUE(link.handshake(kReady));
        std::this_thread::sleep_for(std::chrono::milliseconds(300)); // away: no VIPL call
        for (int i = 0; i < n; i++) {
            VIP_RETURN rc;
            VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs, &rc);
            ASSERT_EQ(r, descs.at(i)) << "receive " << i << " out of order or missing: " << rc_str(rc);
            ASSERT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0)) << status_str(r->CS.Status);
            ASSERT_EQ(r->CS.Length, len);
            ASSERT_EQ(check_pattern(buf.p() + size_t(i) * len, len, uint32_t(i)), -1) << "message " << i;
        }
        ASSERT_TRUE(link.handshake(kDone));
    } else {
        for (int i = 0; i < n; i++) fill_pattern(buf.p() + size_t(i) * len, len, uint32_t(i));
        ASSERT_TRUE(link.handshake(kReady));
        for (int i = 0; i < n; i++) {
            fill_send(descs.at(i), {{buf.p() + size_t(i) * len, buf.mh(), len}});
            VT_ASSERT_OK(VipPostSend(link.data(), descs.at(i), descs.mh())) << "send " << i;
        }
        for (int i = 0; i < n; i++) {
            VIP_RETURN rc;
            VIP_DESCRIPTOR *s = wait_send(link.data(), kWaitMs, &rc);
            ASSERT_EQ(s, descs.at(i)) << "send " << i << " out of order or missing: " << rc_str(rc);
            ASSERT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_SEND, 0)) << status_str(s->CS.Status);
        }
        ASSERT_TRUE(link.handshake(kDone));
    }
}

VT_INSTANTIATE_MP_LEVELS(Mp);

} // namespace
