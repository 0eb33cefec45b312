// rx_fast_test.cpp - the receive side's fast path (Firmware::rx_fast, docs/nicfw.md
// "The fast receive") against the general path it stands in for, through vipl.h
// on two VIs of one process connected to each other:
//  * the bytes, the length and the immediate data of messages around every
//    crossover the received send passes (the short copy's widths; the staged
//    / pull crossover at VIPL_NICFW_DMA_MIN, 1 byte below, at, above), into
//    receive buffers at unaligned addresses, with nothing written past them;
//  * a receive of two segments (not the fast shape) still scattered right;
//  * a one-segment receive that fails a check completes with the status the
//    general path gives it (LENGTH, PROTECTION for each of the descriptor's
//    and the segment's checks, FORMAT), on an unreliable VI that keeps its
//    connection (the next message arrives) and on a reliable one that breaks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "nicfw_vipl_util.hpp"
#include "vipl.h"

using namespace nt;

namespace {

constexpr uint32_t kDmaMin = 4096; // the staged / pull crossover these tests set
constexpr uint32_t kBuf = 3 * kDmaMin;

class RxFast : public ::testing::Test {
public:
    void SetUp() override {
        setenv("VIPL_NICFW_DMA_MIN", "4096", 1);
        NT_ASSERT_OK(VipOpenNic("nicfw0", &nic));
        NT_ASSERT_OK(VipCreatePtag(nic, &tag));
    }
    void TearDown() override {
        destroy_vis({a, b});
        mem.reset();
        other.reset();
        if (other_tag) VipDestroyPtag(nic, other_tag);
        VipDestroyPtag(nic, tag);
        VipCloseNic(nic);
        unsetenv("VIPL_NICFW_DMA_MIN");
    }
    // a sends to b; both VIs at `level`, on one ptag, with one region of
    // descriptors and buffers.
    void connect(VIP_RELIABILITY_LEVEL level) {
        mem = std::make_unique<Region>(nic, tag, 16 * 64 + 4 * kBuf);
        NT_ASSERT_OK(mem->rc);
        VIP_VI_ATTRIBUTES at = vi_attr(tag, level);
        NT_ASSERT_OK(VipCreateVi(nic, &at, nullptr, nullptr, &a));
        NT_ASSERT_OK(VipCreateVi(nic, &at, nullptr, nullptr, &b));
        ASSERT_TRUE(connect_loopback(nic, a, nic, b));
    }
    VIP_DESCRIPTOR *desc(int i) const { return reinterpret_cast<VIP_DESCRIPTOR *>(mem->p() + i * 64); }
    uint8_t *src() const { return mem->p() + 16 * 64; }            // the send buffer
    uint8_t *dst() const { return mem->p() + 16 * 64 + 2 * kBuf; } // receives land here (+ offsets)

    // A one-segment receive of `cap` bytes at dst() + off.
    VIP_DESCRIPTOR *recv1(int i, uint32_t off, uint32_t cap) {
        VIP_DESCRIPTOR *d = desc(i);
        std::memset(d, 0, 64);
        d->CS.Control = VIP_CONTROL_OP_SENDRECV;
        d->CS.SegCount = 1;
        d->CS.Length = cap;
        d->DS[0].Local.Data.Address = dst() + off;
        d->DS[0].Local.Handle = mem->mh();
        d->DS[0].Local.Length = cap;
        return d;
    }
    // Sends len pattern bytes from src(), with immediate data imm if asked.
    void send(int i, uint32_t len, uint32_t seed, bool with_imm, uint32_t imm = 0) {
        VIP_DESCRIPTOR *d = desc(i);
        std::memset(d, 0, 64);
        fill(src(), len, seed);
        d->CS.Control = VIP_CONTROL_OP_SENDRECV | (with_imm ? VIP_CONTROL_IMMEDIATE : 0);
        d->CS.SegCount = 1;
        d->CS.Length = len;
        d->CS.ImmediateData = imm;
        d->DS[0].Local.Data.Address = src();
        d->DS[0].Local.Handle = mem->mh();
        d->DS[0].Local.Length = len;
        NT_ASSERT_OK(VipPostSend(a, d, mem->mh()));
        VIP_DESCRIPTOR *done = nullptr;
        NT_ASSERT_OK(VipSendWait(a, kWaitMs, &done));
        EXPECT_EQ(done, d);
        if (send_must_succeed) { EXPECT_EQ(done->CS.Status & VIP_STATUS_ERROR_MASK, 0u) << "send of " << len; }
    }
    VIP_DESCRIPTOR *recv_wait() {
        VIP_DESCRIPTOR *d = nullptr;
        VIP_RETURN rc = VipRecvWait(b, kWaitMs, &d);
        EXPECT_EQ(Rc{VIP_SUCCESS}, Rc{rc}) << "VipRecvWait";
        return rc == VIP_SUCCESS ? d : nullptr;
    }
    // A message of len bytes into a good one-segment receive arrives whole.
    void good_message(uint32_t len, uint32_t seed) {
        VIP_DESCRIPTOR *r = recv1(1, 0, kBuf);
        NT_ASSERT_OK(VipPostRecv(b, r, mem->mh()));
        send(0, len, seed, false);
        VIP_DESCRIPTOR *d = recv_wait();
        ASSERT_EQ(d, r);
        EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u);
        EXPECT_EQ(d->CS.Length, len);
        EXPECT_TRUE(check(dst(), len, seed));
    }
    // One message into receive r (posted here), which must complete with
    // `want` error bits and Length 0, placing nothing.
    void refused(VIP_DESCRIPTOR *r, uint32_t len, uint32_t want, const char *what) {
        std::memset(dst(), 0xEE, kBuf);
        NT_ASSERT_OK(VipPostRecv(b, r, mem->mh()));
        send(0, len, 77, true, 0x5a5a);
        VIP_DESCRIPTOR *d = recv_wait();
        ASSERT_EQ(d, r) << what;
        EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, want) << what;
        EXPECT_TRUE(d->CS.Status & VIP_STATUS_OP_RECEIVE) << what;
        EXPECT_EQ(d->CS.Length, 0u) << what;
        for (uint32_t i = 0; i < kBuf; ++i)
            if (dst()[i] != 0xEE) {
                ADD_FAILURE() << what << ": byte " << i << " of the receive area written";
                break;
            }
    }

    VIP_NIC_HANDLE nic = nullptr;
    VIP_PROTECTION_HANDLE tag = nullptr, other_tag = nullptr;
    std::unique_ptr<Region> mem, other;
    VIP_VI_HANDLE a = nullptr, b = nullptr;
    // A send whose receive breaks a reliable connection may complete with an
    // error (with the transport on it completes only when acknowledged).
    bool send_must_succeed = true;
};

// Sizes at each width of the short copy (0..33 bytes) and at the staged / pull
// crossover, into buffers at every alignment mod 8, with and without immediate
// data; the bytes after the message are untouched.
void sizes_across_crossovers(RxFast &t) {
    const uint32_t sizes[] = {0,  1,  2,  3,  4,  5,  7,    8,           9,       15,         16,
                              17, 31, 32, 33, 64, 65, 1000, kDmaMin - 1, kDmaMin, kDmaMin + 1};
    uint32_t seed = 1;
    for (uint32_t len : sizes) {
        for (uint32_t off : {0u, 1u, 3u, 7u}) {
            const bool imm = (seed & 1) != 0;
            std::memset(t.dst(), 0xEE, kBuf);
            VIP_DESCRIPTOR *r = t.recv1(1, off, kDmaMin + 8);
            NT_ASSERT_OK(VipPostRecv(t.b, r, t.mem->mh()));
            t.send(0, len, seed, imm, 0xC0DE0000u + seed);
            VIP_DESCRIPTOR *d = t.recv_wait();
            ASSERT_EQ(d, r);
            EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u) << len << " bytes at +" << off;
            EXPECT_EQ(d->CS.Length, len) << len << " bytes at +" << off;
            EXPECT_EQ((d->CS.Status & VIP_STATUS_IMMEDIATE) != 0, imm) << len;
            if (imm) { EXPECT_EQ(d->CS.ImmediateData, 0xC0DE0000u + seed) << len; }
            EXPECT_TRUE(check(t.dst() + off, len, seed)) << len << " bytes at +" << off << " corrupted";
            for (uint32_t i = 0; i < off; ++i) EXPECT_EQ(t.dst()[i], 0xEE) << "byte before the buffer, " << len;
            for (uint32_t i = off + len; i < off + len + 64; ++i)
                EXPECT_EQ(t.dst()[i], 0xEE) << "byte " << i - off << " after a message of " << len;
            ++seed;
        }
    }
}

TEST_F(RxFast, SizesAcrossCrossoversUnreliable) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_UNRELIABLE));
    sizes_across_crossovers(*this);
}

TEST_F(RxFast, SizesAcrossCrossoversReliableDelivery) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_RELIABLE_DELIVERY));
    sizes_across_crossovers(*this);
}

TEST_F(RxFast, SizesAcrossCrossoversReliableReception) { // every send asks for an Ack: the general path
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_RELIABLE_RECEPTION));
    sizes_across_crossovers(*this);
}

// Two segments: not the fast shape; the general path scatters them.
TEST_F(RxFast, TwoSegmentReceiveIsScatteredInOrder) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_RELIABLE_DELIVERY));
    uint32_t seed = 100;
    for (uint32_t len : {1u, 5u, 10u, 11u, 16u, 100u, kDmaMin - 1, kDmaMin, kDmaMin + 1}) {
        std::memset(dst(), 0xEE, kBuf);
        VIP_DESCRIPTOR *r = recv1(1, 0, 10);
        r->CS.SegCount = 2;
        r->CS.Length = 10 + kDmaMin + 8;
        r->DS[1].Local.Data.Address = dst() + 1000 + 3; // apart from the first, unaligned
        r->DS[1].Local.Handle = mem->mh();
        r->DS[1].Local.Length = kDmaMin + 8;
        NT_ASSERT_OK(VipPostRecv(b, r, mem->mh()));
        send(0, len, seed, false);
        VIP_DESCRIPTOR *d = recv_wait();
        ASSERT_EQ(d, r);
        EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u) << len;
        EXPECT_EQ(d->CS.Length, len);
        // The message's first 10 bytes in segment 0, the rest in segment 1.
        std::vector<uint8_t> want(len), got(len);
        fill(want.data(), len, seed);
        const uint32_t first = len < 10 ? len : 10;
        std::memcpy(got.data(), dst(), first);
        std::memcpy(got.data() + first, dst() + 1003, len - first);
        EXPECT_EQ(got, want) << len << " bytes over two segments";
        EXPECT_EQ(dst()[first], 0xEE) << "segment 0 written past the message";
        EXPECT_EQ(dst()[1003 + (len - first)], 0xEE) << "segment 1 written past the message";
        ++seed;
    }
}

// A one-segment receive that fails each check completes with the general
// path's status; the unreliable VI stays connected and the next message
// (through the fast path again) arrives.
TEST_F(RxFast, FailedChecksCompleteWithTheGeneralStatusUnreliable) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_UNRELIABLE));
    NT_ASSERT_OK(VipCreatePtag(nic, &other_tag));
    other = std::make_unique<Region>(nic, other_tag, 4096);
    NT_ASSERT_OK(other->rc);
    Region loose(nic, tag, 4096); // same ptag, a different region
    NT_ASSERT_OK(loose.rc);
    uint32_t seed = 500;

    refused(recv1(1, 0, 15), 16, VIP_STATUS_LENGTH_ERROR, "message 1 byte longer than the receive");
    good_message(16, seed++);
    refused(recv1(1, 0, 0), 1, VIP_STATUS_LENGTH_ERROR, "empty segment, 1-byte message");
    good_message(1, seed++);
    {
        VIP_DESCRIPTOR *r = recv1(1, 0, 64);
        r->DS[0].Local.Handle = 0x7fff; // names no region
        refused(r, 16, VIP_STATUS_PROTECTION_ERROR, "segment handle of no region");
    }
    good_message(17, seed++);
    {
        VIP_DESCRIPTOR *r = recv1(1, 0, 64);
        r->DS[0].Local.Handle = other->mh(); // a region of another ptag (the address is in ours)
        refused(r, 16, VIP_STATUS_PROTECTION_ERROR, "segment in another ptag's region");
    }
    good_message(8, seed++);
    {
        VIP_DESCRIPTOR *r = recv1(1, 0, 64);
        r->DS[0].Local.Handle = loose.mh(); // our ptag, but the address is not in that region
        refused(r, 16, VIP_STATUS_PROTECTION_ERROR, "segment outside the region its handle names");
    }
    good_message(32, seed++);
    {
        // The segment runs 1 byte past the end of the region.
        VIP_DESCRIPTOR *r = recv1(1, 0, 64);
        r->DS[0].Local.Data.Address = loose.p() + 4096 - 63;
        r->DS[0].Local.Handle = loose.mh();
        refused(r, 16, VIP_STATUS_PROTECTION_ERROR, "segment 1 byte past its region");
    }
    good_message(33, seed++);
    {
        VIP_DESCRIPTOR *r = recv1(1, 0, 64);
        r->CS.Control |= 0x0100; // a reserved control bit
        refused(r, 16, VIP_STATUS_FORMAT_ERROR, "reserved control bit");
    }
    good_message(4, seed++);
    {
        // The descriptor itself posted under a handle that does not hold it.
        VIP_DESCRIPTOR *r = recv1(1, 0, 64);
        std::memset(dst(), 0xEE, kBuf);
        NT_ASSERT_OK(VipPostRecv(b, r, loose.mh()));
        send(0, 16, 9, false);
        VIP_DESCRIPTOR *d = recv_wait();
        ASSERT_EQ(d, r);
        EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, uint32_t(VIP_STATUS_PROTECTION_ERROR));
        EXPECT_EQ(dst()[0], 0xEE) << "data placed through an unregistered descriptor";
    }
    good_message(16, seed++);
    EXPECT_EQ(vi_state(b), VIP_STATE_CONNECTED);
}

// On a reliable VI the same refusal breaks the connection (VI spec: a
// descriptor error at reliable delivery is fatal to the VI).
TEST_F(RxFast, FailedCheckBreaksAReliableVi) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_RELIABLE_DELIVERY));
    good_message(16, 1);
    send_must_succeed = false;
    refused(recv1(1, 0, 15), 16, VIP_STATUS_LENGTH_ERROR, "message longer than the receive");
    EXPECT_EQ(vi_state(b), VIP_STATE_ERROR);
}

// No receive posted: the general path's answer for each level (unreliable:
// the message is lost, the VI stays up; reliable: the VI breaks).
TEST_F(RxFast, NoReceivePosted) {
    ASSERT_NO_FATAL_FAILURE(connect(VIP_SERVICE_UNRELIABLE));
    send(0, 16, 3, false);
    VIP_DESCRIPTOR *d = nullptr;
    // Give the firmware the packet (it drops it), then a good message still arrives.
    for (int i = 0; i < 100; ++i) EXPECT_EQ(Rc{VIP_NOT_DONE}, Rc{VipRecvDone(b, &d)});
    good_message(16, 4);
    EXPECT_EQ(vi_state(b), VIP_STATE_CONNECTED);
}

} // namespace
