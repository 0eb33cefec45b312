// onesided_mp_test.cpp - one-sided RDMA on nicfw (docs/nicfw.md, "Data path"):
// the initiator's DMA engine checks an RDMA write or read against the target
// NIC's published protection table and moves the bytes itself.  Two processes
// under vipl-run, through vipl.h only:
//
//   * progress: RDMA writes and reads of 64 B, 4 KiB and 1 MiB complete while
//     the target spins in user code on a flag in its own memory, never calling
//     VIPL (the flag is set by the initiator's last write; bounded wait);
//   * ordering: an RDMA write is visible at the target once a send posted
//     after it on the VI has arrived, across both crossovers, unaligned, with
//     gather lists, from and into shared and heap memory; a write never
//     overtakes an earlier packet of its VI still on the wire;
//   * deregistration racing a writer: once VipDeregisterMem returns no write
//     lands (a guard pattern written after it stays intact), and the writer's
//     next RDMA is refused by the target;
//   * VipSetMemAttributes: a region whose RDMA write was turned off is refused.
//
// The protection checks themselves (handle, bounds, ptag, region and VI
// enables) are bulk_mp_test's BulkProtection suite, which takes the one-sided
// path first at every size it tries.  CMake runs this once per firmware mode,
// doorbell kind and VIPL_NICFW_ONESIDED setting.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "mp_fixture.hpp"
#include "nicfw_buf.hpp"

using namespace vt;

namespace {

// The crossovers when CMake does not set them.
uint32_t dma_min() { return vt::dma_min(65536u); }
uint32_t dma_min_shm() { return vt::dma_min_shm(65536u, 1024u); }
bool env_is(const char *var, const char *v) {
    const char *e = std::getenv(var);
    return e && std::strcmp(e, v) == 0;
}
// Whether the target's firmware runs while its host computes (its own thread,
// or the progress agent): then progress does not depend on the one-sided path.
bool target_firmware_runs() { return env_is("VIPL_NICFW_MODE", "thread") || env_is("VIPL_NICFW_PROGRESS", "1"); }
bool onesided_off() { return env_is("VIPL_NICFW_ONESIDED", "0"); }
// Whether an RDMA into this kind of target memory is done one-sided.
bool onesided_reaches(bool shm) { return !onesided_off() && (shm || !env_is("VIPL_NICFW_ONESIDED", "shm")); }

// Spins in user code, without a VIPL call, until the 8 bytes at p hold `want`
// or `ms` pass.
bool spin_for(const uint8_t *p, uint64_t want, long ms) {
    const auto t0 = Clock::now();
    for (;;) {
        if (__atomic_load_n(reinterpret_cast<const uint64_t *>(p), __ATOMIC_ACQUIRE) == want) return true;
        if (elapsed_ms(t0) > ms) return false;
        __builtin_ia32_pause();
    }
}
void spin_ms(long ms) {
    const auto t0 = Clock::now();
    while (elapsed_ms(t0) < ms) __builtin_ia32_pause();
}

CtlMsg info_of(const Buf &b, size_t len) {
    CtlMsg m{};
    m.addr = uintptr_t(b.p());
    m.mh = b.mh();
    m.len = uint32_t(len);
    return m;
}

// Posts one RDMA and waits for it; the descriptor's status.
VIP_UINT32 rdma(Link &link, size_t slot, VIP_UINT16 op, uint64_t raddr, VIP_MEM_HANDLE rmh,
                const std::vector<Seg> &local, bool imm = false, VIP_UINT32 imm_data = 0) {
    fill_rdma(link.d(slot), op, (void *)(uintptr_t)raddr, rmh, local, imm, imm_data);
    EXPECT_EQ(VipPostSend(link.data(), link.d(slot), link.dmh()), VIP_SUCCESS);
    VIP_RETURN rc;
    VIP_DESCRIPTOR *d = wait_send(link.data(), kWaitMs, &rc);
    EXPECT_EQ(d, link.d(slot)) << rc_str(rc);
    return d ? d->CS.Status : 0;
}

constexpr size_t kRegion = (1u << 20) + 8192;

using OneSided = MpTest;

TEST_P(OneSided, ProgressWhileTargetSpins) {
    if (onesided_off() && !target_firmware_runs())
        GTEST_SKIP() << "VIPL_NICFW_ONESIDED=0: the target's firmware must run for RDMA to progress";
    Link link;
    ASSERT_TRUE(link.open(name(), attr(true, true)));
    Buf buf(kRegion, link.ptag(), true, true, true);
    VT_ASSERT_OK(buf.rc);
    CtlMsg info = info_of(buf, kRegion);
    if (is_server()) ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
    else ASSERT_TRUE(link.handshake(kInfo, &info));
    const size_t flag = kRegion - 8; // the target spins on these 8 bytes
    uint32_t seed = 300;
    for (size_t size : {size_t(64), size_t(4096), size_t(1) << 20}) {
        for (bool read : {false, true}) {
            if (read && !rdma_read_supported(level())) continue;
            SCOPED_TRACE(::testing::Message() << (read ? "RDMA read of " : "RDMA write of ") << size << " bytes");
            ++seed;
            if (is_server()) { // target
                std::memset(buf.p(), 0xEE, size + 64);
                std::memset(buf.p() + flag, 0, 8);
                if (read) fill_pattern(buf.p(), size, seed);
                ASSERT_TRUE(link.handshake(kReady));
                // User code only from here until the initiator's flag write lands.
                const bool seen = spin_for(buf.p() + flag, seed, kWaitMs);
                EXPECT_TRUE(seen) << "the transfer did not complete while the target computed";
                if (!read) {
                    EXPECT_EQ(check_pattern(buf.p(), size, seed), -1) << "data corrupted";
                    EXPECT_EQ(buf.p()[size], 0xEE) << "wrote past the transfer";
                }
            } else { // initiator
                if (read) std::memset(buf.p(), 0xEE, size + 64);
                else fill_pattern(buf.p(), size, seed);
                const uint64_t f = seed;
                std::memcpy(buf.p() + flag, &f, 8);
                ASSERT_TRUE(link.handshake(kReady));
                const VIP_UINT16 op = read ? VIP_CONTROL_OP_RDMAREAD : VIP_CONTROL_OP_RDMAWRITE;
                EXPECT_TRUE(status_is(rdma(link, 0, op, info.addr, info.mh, {{buf.p(), buf.mh(), VIP_UINT32(size)}}),
                                      read ? VIP_STATUS_OP_RDMA_READ : VIP_STATUS_OP_RDMA_WRITE, 0));
                if (read) {
                    EXPECT_EQ(check_pattern(buf.p(), size, seed), -1) << "data corrupted";
                    EXPECT_EQ(buf.p()[size], 0xEE) << "wrote past the local buffer";
                }
                EXPECT_TRUE(status_is(
                    rdma(link, 1, VIP_CONTROL_OP_RDMAWRITE, info.addr + flag, info.mh, {{buf.p() + flag, buf.mh(), 8}}),
                    VIP_STATUS_OP_RDMA_WRITE, 0));
            }
            ASSERT_TRUE(link.handshake(kDone));
        }
    }
}

struct Shape {
    size_t size, off, nseg;
};
std::vector<Shape> shapes() {
    std::vector<Shape> v;
    for (size_t m : {size_t(dma_min_shm()), size_t(dma_min())})
        for (size_t size : {m - 1, m, m + 1})
            for (auto [off, nseg] : {std::pair<size_t, size_t>{0, 1}, {1, 3}, {7, 17}}) v.push_back({size, off, nseg});
    v.push_back({size_t(1) << 20, 3, 5});
    v.push_back({1, 0, 1});
    return v;
}

// The send after an RDMA write arrives only once the write's bytes are in place.
TEST_P(OneSided, WriteVisibleBeforeTheNextSend) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr(true)));
    uint32_t seed = 400;
    for (bool shm : {false, true}) {
        Buf buf(kRegion, link.ptag(), shm, true);
        VT_ASSERT_OK(buf.rc);
        CtlMsg info = info_of(buf, kRegion);
        if (is_server()) ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
        else ASSERT_TRUE(link.handshake(kInfo, &info));
        for (const Shape &s : shapes()) {
            SCOPED_TRACE(::testing::Message() << (shm ? "shm" : "heap") << " size " << s.size << " offset " << s.off
                                              << " segments " << s.nseg);
            ++seed;
            const size_t roff = (s.off * 5) % 13;
            if (is_server()) {
                std::memset(buf.p(), 0xEE, roff + s.size + 64);
                fill_recv(link.d(0), {});
                VT_ASSERT_OK(VipPostRecv(link.data(), link.d(0), link.dmh()));
                ASSERT_TRUE(link.handshake(kReady));
                VIP_RETURN rc;
                VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs, &rc);
                ASSERT_EQ(r, link.d(0)) << rc_str(rc);
                EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0));
                EXPECT_EQ(check_pattern(buf.p() + roff, s.size, seed), -1) << "the write was not in place";
                EXPECT_EQ(buf.p()[roff + s.size], 0xEE) << "wrote past the region written";
                if (roff) EXPECT_EQ(buf.p()[roff - 1], 0xEE) << "wrote before the region written";
            } else {
                fill_pattern(buf.p() + s.off, s.size, seed);
                ASSERT_TRUE(link.handshake(kReady));
                fill_rdma(link.d(1), VIP_CONTROL_OP_RDMAWRITE, (void *)(uintptr_t)(info.addr + roff), info.mh,
                          split(buf.p() + s.off, buf.mh(), s.size, s.nseg));
                VT_ASSERT_OK(VipPostSend(link.data(), link.d(1), link.dmh()));
                fill_send(link.d(2), {});
                VT_ASSERT_OK(VipPostSend(link.data(), link.d(2), link.dmh()));
                for (size_t i : {1, 2}) {
                    VIP_RETURN rc;
                    VIP_DESCRIPTOR *d = wait_send(link.data(), kWaitMs, &rc);
                    ASSERT_EQ(d, link.d(i)) << rc_str(rc);
                    EXPECT_TRUE(status_is(d->CS.Status, i == 1 ? VIP_STATUS_OP_RDMA_WRITE : VIP_STATUS_OP_SEND, 0));
                }
            }
            ASSERT_TRUE(link.handshake(kDone));
        }
    }
}

// A write with immediate data goes through the target's firmware; a plain write
// of the same bytes posted after it must not land first (the target computes
// meanwhile, so the first is still on the wire when the second is posted).
TEST_P(OneSided, WriteDoesNotOvertakeAnEarlierPacket) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr(true)));
    Buf buf(65536, link.ptag(), true, true);
    VT_ASSERT_OK(buf.rc);
    CtlMsg info = info_of(buf, 65536);
    if (is_server()) ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
    else ASSERT_TRUE(link.handshake(kInfo, &info));
    const size_t n = 4096;
    if (is_server()) {
        std::memset(buf.p(), 0xEE, n);
        fill_recv(link.d(0), {});
        fill_recv(link.d(1), {});
        VT_ASSERT_OK(VipPostRecv(link.data(), link.d(0), link.dmh()));
        VT_ASSERT_OK(VipPostRecv(link.data(), link.d(1), link.dmh()));
        ASSERT_TRUE(link.handshake(kReady));
        spin_ms(200); // computing: the first write waits on the wire
        for (size_t i : {0, 1}) {
            VIP_RETURN rc;
            VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs, &rc);
            ASSERT_EQ(r, link.d(i)) << rc_str(rc);
            EXPECT_TRUE(status_is(r->CS.Status, i ? VIP_STATUS_OP_RECEIVE : VIP_STATUS_OP_REMOTE_RDMA_WRITE, 0, !i));
        }
        EXPECT_EQ(check_pattern(buf.p(), n, 2), -1) << "an earlier write landed over a later one";
    } else {
        fill_pattern(buf.p() + 8192, n, 1);
        fill_pattern(buf.p() + 16384, n, 2);
        ASSERT_TRUE(link.handshake(kReady));
        fill_rdma(link.d(2), VIP_CONTROL_OP_RDMAWRITE, (void *)(uintptr_t)info.addr, info.mh,
                  {{buf.p() + 8192, buf.mh(), VIP_UINT32(n)}}, true, 7);
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(2), link.dmh()));
        fill_rdma(link.d(3), VIP_CONTROL_OP_RDMAWRITE, (void *)(uintptr_t)info.addr, info.mh,
                  {{buf.p() + 16384, buf.mh(), VIP_UINT32(n)}});
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(3), link.dmh()));
        fill_send(link.d(4), {});
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(4), link.dmh()));
        for (size_t i : {2, 3, 4}) {
            VIP_RETURN rc;
            VIP_DESCRIPTOR *d = wait_send(link.data(), kWaitMs, &rc);
            ASSERT_EQ(d, link.d(i)) << rc_str(rc);
            EXPECT_TRUE(status_is(d->CS.Status, i == 4 ? VIP_STATUS_OP_SEND : VIP_STATUS_OP_RDMA_WRITE, 0));
        }
    }
    ASSERT_TRUE(link.handshake(kDone));
}

VT_INSTANTIATE_MP_LEVELS(OneSided);

// ---------------------------------------------------------------- registration changes
class OneSidedRegion : public ::testing::TestWithParam<bool> { // shared memory or heap
protected:
    void SetUp() override {
        static unsigned started = 0;
        serial_ = ++started;
        vipl_boot_barrier();
        if (vipl_boot_size() != 2) GTEST_SKIP() << "needs vipl-run -n 2";
    }
    void TearDown() override { vipl_boot_barrier(); }
    std::string name(int round = 0) const {
        return "onesided#" + std::to_string(serial_) + "." + std::to_string(round);
    }
    unsigned serial_ = 0;
};

// A writer hammers a region with 256 KiB writes while the target deregisters
// it: after VipDeregisterMem returns, nothing may land.
TEST_P(OneSidedRegion, DeregistrationWaitsForTransfers) {
    const bool shm = GetParam();
    constexpr size_t kLen = 256 * 1024;
    for (int round = 0; round < 4; ++round) {
        SCOPED_TRACE(::testing::Message() << "round " << round);
        Link link;
        ASSERT_TRUE(link.open(name(round), vi_attr(VIP_SERVICE_RELIABLE_RECEPTION, nullptr, true, false)));
        Buf buf(kLen, link.ptag(), shm, true);
        VT_ASSERT_OK(buf.rc);
        CtlMsg info = info_of(buf, kLen);
        if (is_server()) ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
        else ASSERT_TRUE(link.handshake(kInfo, &info));
        if (is_server()) { // target
            std::memset(buf.p(), 0, kLen);
            ASSERT_TRUE(link.handshake(kReady));
            // Computing while the writes land; at least one must have (the last
            // byte of a write), then a little more, then deregistration.
            if (onesided_reaches(shm) || target_firmware_runs())
                EXPECT_TRUE(spin_for(buf.p() + kLen - 8, 0xABABABABABABABABull, kWaitMs)) << "no write landed";
            spin_ms(2 + 3 * round);
            VT_ASSERT_OK(buf.deregister());
            std::memset(buf.p(), 0x5A, kLen); // the guard: any later write shows
            spin_ms(100);
            for (size_t i = 0; i < kLen; ++i)
                if (buf.p()[i] != 0x5A) {
                    ADD_FAILURE() << "byte " << i << " written after VipDeregisterMem returned";
                    break;
                }
            // The writer's next RDMA reaches our firmware as a packet and is refused.
            EXPECT_EQ(wait_state_change(link.data(), VIP_STATE_CONNECTED, kWaitMs), VIP_STATE_ERROR);
        } else { // initiator
            std::memset(buf.p(), 0xAB, kLen);
            ASSERT_TRUE(link.handshake(kReady));
            VIP_UINT32 st = 0;
            int writes = 0;
            const auto t0 = Clock::now();
            while (elapsed_ms(t0) < 20000) {
                st = rdma(link, 0, VIP_CONTROL_OP_RDMAWRITE, info.addr, info.mh,
                          {{buf.p(), buf.mh(), VIP_UINT32(kLen)}});
                if (!st || (st & VIP_STATUS_ERROR_MASK)) break;
                ++writes;
            }
            EXPECT_TRUE(status_is(st, VIP_STATUS_OP_RDMA_WRITE, VIP_STATUS_RDMA_PROT_ERROR)) << status_str(st);
            if (onesided_reaches(shm) || target_firmware_runs()) EXPECT_GT(writes, 0);
        }
        ASSERT_TRUE(link.handshake(kDone));
    }
}

// VipSetMemAttributes turning RDMA write off: the next write is refused.
TEST_P(OneSidedRegion, AttributeChangeTakesEffect) {
    const bool shm = GetParam();
    constexpr size_t kLen = 8192;
    Link link;
    ASSERT_TRUE(link.open(name(), vi_attr(VIP_SERVICE_RELIABLE_RECEPTION, nullptr, true, false)));
    Buf buf(kLen, link.ptag(), shm, true);
    VT_ASSERT_OK(buf.rc);
    CtlMsg info = info_of(buf, kLen);
    if (is_server()) ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
    else ASSERT_TRUE(link.handshake(kInfo, &info));
    if (is_server()) {
        std::memset(buf.p(), 0, kLen);
        ASSERT_TRUE(link.handshake(kReady));
        ASSERT_TRUE(link.handshake(kResult)); // the first write is done
        EXPECT_EQ(check_pattern(buf.p(), 4096, 11), -1) << "the allowed write did not land";
        VIP_MEM_ATTRIBUTES a{link.ptag(), VIP_FALSE, VIP_FALSE};
        VT_ASSERT_OK(VipSetMemAttributes(nic(), buf.p(), buf.mh(), &a));
        std::memset(buf.p(), 0x5A, kLen);
        ASSERT_TRUE(link.handshake(kReady));
        EXPECT_EQ(wait_state_change(link.data(), VIP_STATE_CONNECTED, kWaitMs), VIP_STATE_ERROR);
        for (size_t i = 0; i < kLen; ++i)
            if (buf.p()[i] != 0x5A) {
                ADD_FAILURE() << "byte " << i << " written after RDMA write was turned off";
                break;
            }
    } else {
        fill_pattern(buf.p(), 4096, 11);
        ASSERT_TRUE(link.handshake(kReady));
        EXPECT_TRUE(status_is(rdma(link, 0, VIP_CONTROL_OP_RDMAWRITE, info.addr, info.mh, {{buf.p(), buf.mh(), 4096}}),
                              VIP_STATUS_OP_RDMA_WRITE, 0));
        ASSERT_TRUE(link.handshake(kResult));
        ASSERT_TRUE(link.handshake(kReady)); // the target turned RDMA write off
        EXPECT_TRUE(status_is(rdma(link, 1, VIP_CONTROL_OP_RDMAWRITE, info.addr, info.mh, {{buf.p(), buf.mh(), 4096}}),
                              VIP_STATUS_OP_RDMA_WRITE, VIP_STATUS_RDMA_PROT_ERROR));
    }
    ASSERT_TRUE(link.handshake(kDone));
}

INSTANTIATE_TEST_SUITE_P(Memory, OneSidedRegion, ::testing::Values(false, true),
                         [](const auto &i) { return std::string(i.param ? "Shm" : "Heap"); });

} // namespace
