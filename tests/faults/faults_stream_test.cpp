// faults_stream_test.cpp - data over a faulty nicfw wire (VIPL_NICFW_FAULTS, set by
// CMake: drop, duplicate, reorder and corrupt), two processes under vipl-run,
// through vipl.h only.  What the VI Architecture promises under faults:
//
//   * reliable delivery and reliable reception: every message, every RDMA write
//     and every RDMA read arrives exactly once, in order, intact (each payload
//     carries its sequence number and a pattern derived from it);
//   * unreliable: a message may be lost, but what arrives is intact, never
//     twice, and in order.
//
// With VIPL_NICFW_DMA_MIN set low, some transfers take the single-copy bulk
// path, whose requests and answers must survive loss as well.
#include <cstdlib>
#include <cstring>
#include <set>

#include "mp_fixture.hpp"

using namespace vt;

namespace {

constexpr uint32_t kW = 16; // transfers in flight per batch
// Messages / writes / reads per test (FAULTS_TEST_MSGS; CMake lowers it where a
// variant is slow, e.g. thread mode on a loaded 2-core machine).
const uint32_t kMsgs = [] {
    const char *v = std::getenv("FAULTS_TEST_MSGS");
    const unsigned long n = v && *v ? std::strtoul(v, nullptr, 10) : 1200;
    return uint32_t(n >= 16 && n <= 100000 ? n : 1200);
}();
constexpr uint32_t kBig = 96 * 1024; // a bulk-path size (when VIPL_NICFW_DMA_MIN allows)

bool bulk_on() {
    const char *v = std::getenv("VIPL_NICFW_DMA_MIN");
    return v && *v && std::strtoul(v, nullptr, 10) > 0 && std::strtoul(v, nullptr, 10) <= kBig;
}
// Size of transfer i: small and medium staged sizes, now and then a large one.
// (Unreliable VIs stay staged: an unreliable bulk request has no retransmission.)
uint32_t size_of(uint32_t i, bool rel = true) {
    if (rel && bulk_on() && i % 40 == 7) return kBig;
    if (i % 25 == 3) return 20000;
    return 8 + (i * 37) % 3000;
}
uint32_t max_size() { return bulk_on() ? kBig : 20000; }

// Payload: sequence number, length, then a pattern seeded by the sequence number.
void fill_msg(uint8_t *p, uint32_t seq, uint32_t len) {
    std::memcpy(p, &seq, 4);
    std::memcpy(p + 4, &len, 4);
    fill_pattern(p + 8, len - 8, seq * 2654435761u + 1);
}
// The sequence number of an intact message, or -1.
long check_msg(const uint8_t *p, uint32_t got_len) {
    uint32_t seq, len;
    std::memcpy(&seq, p, 4);
    std::memcpy(&len, p + 4, 4);
    if (len != got_len || len < 8) return -1;
    if (check_pattern(p + 8, len - 8, seq * 2654435761u + 1) != -1) return -1;
    return seq;
}

// Declared after the test's descriptors and buffers: disconnects the data VI
// and reaps what the flush completed before they are freed (the Link's own
// teardown comes later, when the descriptors would be gone).
struct ReapAtScopeExit {
    VIP_VI_HANDLE vi;
    ~ReapAtScopeExit() {
        VipDisconnect(vi);
        VIP_DESCRIPTOR *d;
        while (VipSendDone(vi, &d) == VIP_SUCCESS) {}
        while (VipRecvDone(vi, &d) == VIP_SUCCESS) {}
    }
};

using Faults = MpTest;

// Sends in batches of kW; the receiver keeps kW receives posted, reaps a batch,
// reposts, and says ready.  Unreliable: the sender ends a batch with a control
// message, and the receiver takes what arrived.
TEST_P(Faults, SendRecvEveryMessageOnceInOrder) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr()));
    const bool rel = level() != VIP_SERVICE_UNRELIABLE;
    const uint32_t slot = rel ? max_size() : 20000;
    Mem buf(kW * slot, link.ptag());
    Descs descs(kW, 4, link.ptag());
    ReapAtScopeExit reap{link.data()};
    BarrierAtScopeExit sync;
    if (is_server()) { // receiver
        for (uint32_t k = 0; k < kW; ++k) {
            fill_recv(descs.at(k), {{buf.p() + k * slot, buf.mh(), slot}});
            VT_ASSERT_OK(VipPostRecv(link.data(), descs.at(k), descs.mh()));
        }
        uint32_t next = 0, delivered = 0;
        long last = -1;
        for (uint32_t b = 0; b * kW < kMsgs; ++b) {
            ASSERT_TRUE(link.handshake(kReady));
            const uint32_t n = std::min(kW, kMsgs - b * kW);
            auto take = [&](VIP_DESCRIPTOR *r) {
                const uint32_t k = static_cast<uint32_t>(
                    (reinterpret_cast<uintptr_t>(r) - reinterpret_cast<uintptr_t>(descs.at(0))) /
                    (reinterpret_cast<uintptr_t>(descs.at(1)) - reinterpret_cast<uintptr_t>(descs.at(0))));
                ASSERT_LT(k, kW);
                ASSERT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0)) << status_str(r->CS.Status);
                const long seq = check_msg(buf.p() + k * slot, r->CS.Length);
                ASSERT_GE(seq, 0) << "corrupt message delivered (length " << r->CS.Length << ")";
                if (rel) ASSERT_EQ(uint32_t(seq), next) << "lost, duplicated or out of order";
                else ASSERT_GT(seq, last) << "duplicated or out of order";
                last = seq;
                ++next;
                ++delivered;
                fill_recv(r, {{buf.p() + k * slot, buf.mh(), slot}});
                VT_ASSERT_OK(VipPostRecv(link.data(), r, descs.mh()));
            };
            if (rel) {
                for (uint32_t i = 0; i < n; ++i) {
                    VIP_RETURN rc;
                    VIP_DESCRIPTOR *r = wait_recv(link.data(), 20000, &rc);
                    ASSERT_NE(r, nullptr) << "message " << next << ": " << rc_str(rc);
                    take(r);
                    if (HasFatalFailure()) return;
                }
            } else {
                CtlMsg m;
                ASSERT_TRUE(link.recv_ctl(&m, 20000)); // the batch was sent
                // Packets a delay or reorder holds arrive a little later.
                for (int quiet = 0; quiet < 200;) {
                    VIP_DESCRIPTOR *r = nullptr;
                    if (VipRecvDone(link.data(), &r) == VIP_SUCCESS) {
                        take(r);
                        if (HasFatalFailure()) return;
                        quiet = 0;
                    } else {
                        ++quiet;
                        usleep(100);
                    }
                }
            }
        }
        if (rel) {
            EXPECT_EQ(delivered, kMsgs);
        } else {
            EXPECT_GT(delivered, kMsgs / 2) << "an unreliable VI lost most messages";
        }
        std::printf("[%s] %u of %u messages delivered\n", level_name(level()), delivered, kMsgs);
    } else { // sender
        for (uint32_t b = 0; b * kW < kMsgs; ++b) {
            ASSERT_TRUE(link.handshake(kReady));
            const uint32_t n = std::min(kW, kMsgs - b * kW);
            for (uint32_t i = 0; i < n; ++i) {
                const uint32_t seq = b * kW + i, len = size_of(seq, rel);
                fill_msg(buf.p() + i * slot, seq, len);
                fill_send(descs.at(i), {{buf.p() + i * slot, buf.mh(), len}});
                VT_ASSERT_OK(VipPostSend(link.data(), descs.at(i), descs.mh()));
            }
            for (uint32_t i = 0; i < n; ++i) {
                VIP_RETURN rc;
                VIP_DESCRIPTOR *d = wait_send(link.data(), 20000, &rc);
                ASSERT_EQ(d, descs.at(i)) << rc_str(rc);
                ASSERT_TRUE(status_is(d->CS.Status, VIP_STATUS_OP_SEND, 0)) << status_str(d->CS.Status);
            }
            if (!rel) { ASSERT_TRUE(link.send_ctl(CtlMsg{kInfo, b, 0, 0, 0, {}})); }
        }
    }
}

// RDMA writes with immediate into distinct places of the target's region: the
// immediates arrive exactly once and in order, and every byte is in place.
TEST_P(Faults, RdmaWriteEveryByteOnceInOrder) {
    if (level() == VIP_SERVICE_UNRELIABLE) GTEST_SKIP() << "reliable levels only";
    Link link;
    ASSERT_TRUE(link.open(name(), attr(true)));
    std::vector<uint64_t> off(kMsgs + 1, 0);
    for (uint32_t i = 0; i < kMsgs; ++i) off[i + 1] = off[i] + size_of(i);
    Descs descs(kW, 4, link.ptag());
    ReapAtScopeExit reap{link.data()};
    BarrierAtScopeExit sync;
    if (is_server()) { // target
        Exposed ex(link, off[kMsgs], true, false);
        std::memset(ex.mem.p(), 0, off[kMsgs]);
        for (uint32_t k = 0; k < kW; ++k) {
            fill_recv(descs.at(k), {});
            VT_ASSERT_OK(VipPostRecv(link.data(), descs.at(k), descs.mh()));
        }
        CtlMsg info = ex.info();
        ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
        for (uint32_t b = 0; b * kW < kMsgs; ++b) {
            ASSERT_TRUE(link.handshake(kReady));
            const uint32_t n = std::min(kW, kMsgs - b * kW);
            for (uint32_t i = 0; i < n; ++i) {
                VIP_RETURN rc;
                VIP_DESCRIPTOR *r = wait_recv(link.data(), 20000, &rc);
                ASSERT_NE(r, nullptr) << rc_str(rc);
                ASSERT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_REMOTE_RDMA_WRITE, 0, true))
                    << status_str(r->CS.Status);
                ASSERT_EQ(r->CS.ImmediateData, b * kW + i) << "write lost, duplicated or out of order";
                fill_recv(r, {});
                VT_ASSERT_OK(VipPostRecv(link.data(), r, descs.mh()));
            }
        }
        for (uint32_t i = 0; i < kMsgs; ++i)
            ASSERT_EQ(check_msg(ex.mem.p() + off[i], size_of(i)), long(i)) << "write " << i << " not in place";
    } else { // initiator
        CtlMsg info;
        ASSERT_TRUE(link.handshake(kInfo, &info));
        Mem src(off[kMsgs], link.ptag());
        for (uint32_t i = 0; i < kMsgs; ++i) fill_msg(src.p() + off[i], i, size_of(i));
        for (uint32_t b = 0; b * kW < kMsgs; ++b) {
            ASSERT_TRUE(link.handshake(kReady));
            const uint32_t n = std::min(kW, kMsgs - b * kW);
            for (uint32_t i = 0; i < n; ++i) {
                const uint32_t seq = b * kW + i;
                fill_rdma(descs.at(i), VIP_CONTROL_OP_RDMAWRITE,
                          reinterpret_cast<const void *>(uintptr_t(info.addr + off[seq])), info.mh,
                          {{src.p() + off[seq], src.mh(), size_of(seq)}}, true, seq);
                VT_ASSERT_OK(VipPostSend(link.data(), descs.at(i), descs.mh()));
            }
            for (uint32_t i = 0; i < n; ++i) {
                VIP_RETURN rc;
                VIP_DESCRIPTOR *d = wait_send(link.data(), 20000, &rc);
                ASSERT_EQ(d, descs.at(i)) << rc_str(rc);
                ASSERT_TRUE(status_is(d->CS.Status, VIP_STATUS_OP_RDMA_WRITE, 0)) << status_str(d->CS.Status);
            }
        }
    }
}

// RDMA reads of the target's region, piece by piece: every piece arrives intact.
TEST_P(Faults, RdmaReadEveryByteIntact) {
    if (level() == VIP_SERVICE_UNRELIABLE) GTEST_SKIP() << "reliable levels only";
    Link link;
    ASSERT_TRUE(link.open(name(), attr(false, true)));
    std::vector<uint64_t> off(kMsgs + 1, 0);
    for (uint32_t i = 0; i < kMsgs; ++i) off[i + 1] = off[i] + size_of(i);
    Descs descs(kW, 4, link.ptag());
    ReapAtScopeExit reap{link.data()};
    BarrierAtScopeExit sync;
    if (is_server()) { // target: only serves
        Exposed ex(link, off[kMsgs], false, true);
        for (uint32_t i = 0; i < kMsgs; ++i) fill_msg(ex.mem.p() + off[i], i, size_of(i));
        CtlMsg info = ex.info();
        ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
        CtlMsg done; // the region stays until every read is done (slow under faults: no handshake timeout)
        ASSERT_TRUE(link.recv_ctl(&done, 120000));
        ASSERT_EQ(done.kind, uint32_t(kDone));
    } else {
        CtlMsg info;
        ASSERT_TRUE(link.handshake(kInfo, &info));
        Mem dst(off[kMsgs], link.ptag());
        std::memset(dst.p(), 0, off[kMsgs]);
        for (uint32_t b = 0; b * kW < kMsgs; ++b) {
            const uint32_t n = std::min(kW, kMsgs - b * kW);
            for (uint32_t i = 0; i < n; ++i) {
                const uint32_t seq = b * kW + i;
                fill_rdma(descs.at(i), VIP_CONTROL_OP_RDMAREAD,
                          reinterpret_cast<const void *>(uintptr_t(info.addr + off[seq])), info.mh,
                          {{dst.p() + off[seq], dst.mh(), size_of(seq)}});
                VT_ASSERT_OK(VipPostSend(link.data(), descs.at(i), descs.mh()));
            }
            for (uint32_t i = 0; i < n; ++i) {
                VIP_RETURN rc;
                VIP_DESCRIPTOR *d = wait_send(link.data(), 20000, &rc);
                ASSERT_EQ(d, descs.at(i)) << rc_str(rc);
                ASSERT_TRUE(status_is(d->CS.Status, VIP_STATUS_OP_RDMA_READ, 0)) << status_str(d->CS.Status);
                const uint32_t seq = b * kW + i;
                ASSERT_EQ(check_msg(dst.p() + off[seq], size_of(seq)), long(seq)) << "read " << seq << " corrupt";
            }
        }
        ASSERT_TRUE(link.send_ctl(CtlMsg{kDone, 0, 0, 0, 0, {}}));
    }
}

VT_INSTANTIATE_MP_LEVELS(Faults);

} // namespace
