// bulk_mp_test.cpp - nicfw's single-copy bulk path (docs/nicfw.md, "Data
// path") between two processes under vipl-run, through vipl.h only:
//
//   * data integrity across the crossovers VIPL_NICFW_DMA_MIN (plain memory) and
//     VIPL_NICFW_DMA_MIN_SHM (VipxAllocMem memory): 1 byte below, at, 1 above,
//     and 1 MiB, unaligned offsets, gather/scatter lists of several
//     segments, for send/receive, RDMA write (with immediate) and RDMA read, from
//     plain memory (cross-memory attach) and from VipxAllocMem memory (mapped
//     shared memory), at every reliability level;
//   * every protection check of the NIC that owns the target memory, over the
//     one-sided path (the initiator's NIC reading the target's published table)
//     and then the bulk or staged path the refusal falls back to: bad memory handle, out of bounds, wrong ptag, RDMA disabled on
//     the region, RDMA disabled on the VI (RDMA write and read), and the receive
//     descriptor's checks for a bulk send.
//
// CMake runs it once per firmware mode and doorbell kind.
#include <algorithm>
#include <cstdlib>
#include <memory>

#include "mp_fixture.hpp"
#include "nicfw_buf.hpp"

using namespace vt;

namespace {

// The crossovers when CMake does not set them.
uint32_t dma_min() { return vt::dma_min(16384u); }
uint32_t dma_min_shm() { return vt::dma_min_shm(16384u, 16384u); }

struct Shape {
    size_t size, off, nseg;
};
// Sizes around the crossover of this kind of memory, each at an unaligned
// offset with several segments.
std::vector<Shape> shapes(bool shm) {
    const size_t m = shm ? dma_min_shm() : dma_min();
    std::vector<Shape> v;
    for (size_t size : {m - 1, m, m + 1, size_t(1) << 20})
        for (auto [off, nseg] : {std::pair<size_t, size_t>{0, 1}, {1, 3}, {7, 17}}) v.push_back({size, off, nseg});
    return v;
}
constexpr size_t kBufLen = (1u << 20) + 4096;

using Bulk = MpTest;

TEST_P(Bulk, SendRecvAcrossTheCrossover) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr()));
    uint32_t seed = 0;
    for (bool shm : {false, true}) {
        Buf buf(kBufLen, link.ptag(), shm);
        VT_ASSERT_OK(buf.rc);
        for (const Shape &s : shapes(shm)) {
            SCOPED_TRACE(::testing::Message() << (shm ? "shm" : "heap") << " size " << s.size << " offset " << s.off
                                              << " segments " << s.nseg);
            ++seed;
            if (is_server()) { // receiver
                std::memset(buf.p(), 0xEE, s.off + s.size + 64);
                auto segs = split(buf.p() + s.off, buf.mh(), s.size, s.nseg);
                segs.back().len += 64; // a larger receive than the message
                fill_recv(link.d(0), segs);
                VT_ASSERT_OK(VipPostRecv(link.data(), link.d(0), link.dmh()));
                ASSERT_TRUE(link.handshake(kReady));
                VIP_RETURN rc;
                VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs, &rc);
                ASSERT_EQ(r, link.d(0)) << rc_str(rc);
                EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0));
                EXPECT_EQ(r->CS.Length, s.size);
                EXPECT_EQ(check_pattern(buf.p() + s.off, s.size, seed), -1) << "data corrupted";
                EXPECT_EQ(buf.p()[s.off + s.size], 0xEE) << "wrote past the message";
                if (s.off) EXPECT_EQ(buf.p()[s.off - 1], 0xEE) << "wrote before the message";
            } else {
                fill_pattern(buf.p() + s.off, s.size, seed);
                ASSERT_TRUE(link.handshake(kReady));
                fill_send(link.d(1), split(buf.p() + s.off, buf.mh(), s.size, s.nseg));
                VT_ASSERT_OK(VipPostSend(link.data(), link.d(1), link.dmh()));
                VIP_RETURN rc;
                VIP_DESCRIPTOR *d = wait_send(link.data(), kWaitMs, &rc);
                ASSERT_EQ(d, link.d(1)) << rc_str(rc);
                EXPECT_TRUE(status_is(d->CS.Status, VIP_STATUS_OP_SEND, 0));
            }
            ASSERT_TRUE(link.handshake(kDone));
        }
    }
}

TEST_P(Bulk, RdmaWriteAcrossTheCrossover) {
    Link link;
    ASSERT_TRUE(link.open(name(), attr(true)));
    uint32_t seed = 100;
    for (bool shm : {false, true}) {
        Buf buf(kBufLen, link.ptag(), shm, true, false);
        VT_ASSERT_OK(buf.rc);
        CtlMsg info{};
        info.addr = uintptr_t(buf.p());
        info.mh = buf.mh();
        if (is_server()) ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
        else ASSERT_TRUE(link.handshake(kInfo, &info));
        for (const Shape &s : shapes(shm)) {
            SCOPED_TRACE(::testing::Message() << (shm ? "shm" : "heap") << " size " << s.size << " offset " << s.off
                                              << " segments " << s.nseg);
            ++seed;
            const size_t roff = (s.off * 5) % 13; // remote offset, unaligned too
            if (is_server()) {                    // target: the immediate's receive says the data is in place
                std::memset(buf.p(), 0xEE, roff + s.size + 64);
                fill_recv(link.d(0), {});
                VT_ASSERT_OK(VipPostRecv(link.data(), link.d(0), link.dmh()));
                ASSERT_TRUE(link.handshake(kReady));
                VIP_RETURN rc;
                VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs, &rc);
                ASSERT_EQ(r, link.d(0)) << rc_str(rc);
                EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_REMOTE_RDMA_WRITE, 0, true));
                EXPECT_EQ(r->CS.ImmediateData, seed);
                EXPECT_EQ(check_pattern(buf.p() + roff, s.size, seed), -1) << "data corrupted";
                EXPECT_EQ(buf.p()[roff + s.size], 0xEE) << "wrote past the region written";
            } else {
                fill_pattern(buf.p() + s.off, s.size, seed);
                ASSERT_TRUE(link.handshake(kReady));
                fill_rdma(link.d(1), VIP_CONTROL_OP_RDMAWRITE, (void *)(uintptr_t)(info.addr + roff), info.mh,
                          split(buf.p() + s.off, buf.mh(), s.size, s.nseg), true, seed);
                VT_ASSERT_OK(VipPostSend(link.data(), link.d(1), link.dmh()));
                VIP_RETURN rc;
                VIP_DESCRIPTOR *d = wait_send(link.data(), kWaitMs, &rc);
                ASSERT_EQ(d, link.d(1)) << rc_str(rc);
                EXPECT_TRUE(status_is(d->CS.Status, VIP_STATUS_OP_RDMA_WRITE, 0));
            }
            ASSERT_TRUE(link.handshake(kDone));
        }
    }
}

TEST_P(Bulk, RdmaReadAcrossTheCrossover) {
    if (!rdma_read_supported(level())) GTEST_SKIP() << "RDMA read not supported at " << level_name(level());
    Link link;
    ASSERT_TRUE(link.open(name(), attr(true, true)));
    uint32_t seed = 200;
    for (bool shm : {false, true}) {
        Buf buf(kBufLen, link.ptag(), shm, false, true);
        VT_ASSERT_OK(buf.rc);
        CtlMsg info{};
        info.addr = uintptr_t(buf.p());
        info.mh = buf.mh();
        if (is_server()) ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
        else ASSERT_TRUE(link.handshake(kInfo, &info));
        for (const Shape &s : shapes(shm)) {
            SCOPED_TRACE(::testing::Message() << (shm ? "shm" : "heap") << " size " << s.size << " offset " << s.off
                                              << " segments " << s.nseg);
            ++seed;
            const size_t roff = (s.off * 5) % 13;
            if (is_server()) { // target: holds the data
                fill_pattern(buf.p() + roff, s.size, seed);
                ASSERT_TRUE(link.handshake(kReady));
            } else {
                std::memset(buf.p(), 0xEE, s.off + s.size + 64);
                ASSERT_TRUE(link.handshake(kReady));
                fill_rdma(link.d(1), VIP_CONTROL_OP_RDMAREAD, (void *)(uintptr_t)(info.addr + roff), info.mh,
                          split(buf.p() + s.off, buf.mh(), s.size, s.nseg));
                VT_ASSERT_OK(VipPostSend(link.data(), link.d(1), link.dmh()));
                VIP_RETURN rc;
                VIP_DESCRIPTOR *d = wait_send(link.data(), kWaitMs, &rc);
                ASSERT_EQ(d, link.d(1)) << rc_str(rc);
                EXPECT_TRUE(status_is(d->CS.Status, VIP_STATUS_OP_RDMA_READ, 0));
                EXPECT_EQ(check_pattern(buf.p() + s.off, s.size, seed), -1) << "data corrupted";
                EXPECT_EQ(buf.p()[s.off + s.size], 0xEE) << "wrote past the local buffer";
            }
            ASSERT_TRUE(link.handshake(kDone));
        }
    }
}

VT_INSTANTIATE_MP_LEVELS(Bulk);

// ---------------------------------------------------------------- protection
enum class Check { BadHandle, OutOfBounds, WrongPtag, RegionDisabled, ViDisabled };
struct ProtCase {
    VIP_UINT16 op; // VIP_CONTROL_OP_RDMAWRITE or VIP_CONTROL_OP_RDMAREAD
    Check check;
    bool shm;
    bool small = false; // 64 bytes instead of a bulk size (both try the one-sided path first)
};
const char *check_name(Check c) {
    switch (c) {
    case Check::BadHandle: return "BadHandle";
    case Check::OutOfBounds: return "OutOfBounds";
    case Check::WrongPtag: return "WrongPtag";
    case Check::RegionDisabled: return "RegionDisabled";
    case Check::ViDisabled: return "ViDisabled";
    }
    return "?";
}

// Reliable reception: the initiator's descriptor reports the target's verdict.
// The initiator's NIC checks the target's published table first (one-sided
// RDMA, onesided.cpp) and must refuse exactly as the target's firmware does:
// a wrongly accepted transfer would write (or read) the protected memory.
class BulkProtection : public ::testing::TestWithParam<ProtCase> {
protected:
    void SetUp() override {
        static unsigned started = 0;
        serial_ = ++started;
        vipl_boot_barrier();
        if (vipl_boot_size() != 2) GTEST_SKIP() << "needs vipl-run -n 2";
    }
    void TearDown() override { vipl_boot_barrier(); }
    std::string name() const { return "bulkprot#" + std::to_string(serial_); }
    unsigned serial_ = 0;
};

TEST_P(BulkProtection, TargetRefusesOverTheBulkPath) {
    const ProtCase c = GetParam();
    const bool write = c.op == VIP_CONTROL_OP_RDMAWRITE;
    const size_t len = c.small ? 64 : std::max<size_t>(dma_min(), 32768); // staged or on the bulk path
    Link link;
    // The target's VI enables RDMA unless that is the check under test.
    const bool vi_rdma = !(is_server() && c.check == Check::ViDisabled);
    ASSERT_TRUE(link.open(name(), vi_attr(VIP_SERVICE_RELIABLE_RECEPTION, nullptr, vi_rdma, vi_rdma)));
    if (is_server()) { // target
        Ptag other;
        const bool region_rdma = c.check != Check::RegionDisabled;
        Buf t(2 * len, c.check == Check::WrongPtag ? other.h() : link.ptag(), c.shm, region_rdma, region_rdma);
        VT_ASSERT_OK(t.rc);
        fill_pattern(t.p(), 2 * len, 5);
        CtlMsg info{};
        info.addr = uintptr_t(t.p());
        info.mh = t.mh();
        info.len = uint32_t(2 * len);
        ASSERT_TRUE(link.handshake(kInfo, nullptr, &info));
        CtlMsg res;
        ASSERT_TRUE(link.handshake(kResult, &res));
        EXPECT_EQ(check_pattern(t.p(), 2 * len, 5), -1) << "protected memory was written";
        EXPECT_EQ(wait_state_change(link.data(), VIP_STATE_CONNECTED, 5000), VIP_STATE_ERROR)
            << "a protection failure breaks a reliable connection";
    } else { // initiator
        Buf local(len, link.ptag(), c.shm);
        VT_ASSERT_OK(local.rc);
        fill_pattern(local.p(), len, 9);
        CtlMsg info;
        ASSERT_TRUE(link.handshake(kInfo, &info));
        uint64_t raddr = info.addr;
        VIP_MEM_HANDLE rmh = info.mh;
        if (c.check == Check::BadHandle) rmh ^= 0x00ff0000u; // another generation: a stale handle
        if (c.check == Check::OutOfBounds) raddr += info.len - len / 2;
        fill_rdma(link.d(0), c.op, (void *)(uintptr_t)raddr, rmh, split(local.p(), local.mh(), len, 2));
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(0), link.dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *d = wait_send(link.data(), kWaitMs, &rc);
        CtlMsg res{};
        ASSERT_EQ(d, link.d(0)) << rc_str(rc);
        EXPECT_TRUE(status_is(d->CS.Status, write ? VIP_STATUS_OP_RDMA_WRITE : VIP_STATUS_OP_RDMA_READ,
                              VIP_STATUS_RDMA_PROT_ERROR));
        if (!write) EXPECT_EQ(check_pattern(local.p(), len, 9), -1) << "a refused read placed data";
        ASSERT_TRUE(link.handshake(kResult, nullptr, &res));
    }
}

std::vector<ProtCase> prot_cases() {
    std::vector<ProtCase> v;
    for (VIP_UINT16 op : {VIP_CONTROL_OP_RDMAWRITE, VIP_CONTROL_OP_RDMAREAD})
        for (Check c :
             {Check::BadHandle, Check::OutOfBounds, Check::WrongPtag, Check::RegionDisabled, Check::ViDisabled})
            for (bool shm : {false, true})
                for (bool small : {false, true}) v.push_back({op, c, shm, small});
    return v;
}
INSTANTIATE_TEST_SUITE_P(Checks, BulkProtection, ::testing::ValuesIn(prot_cases()), [](const auto &i) {
    return std::string(i.param.op == VIP_CONTROL_OP_RDMAWRITE ? "Write" : "Read") + check_name(i.param.check) +
        (i.param.shm ? "Shm" : "Heap") + (i.param.small ? "64B" : "");
});

// A bulk send checks the receive descriptor as a staged one does: a segment
// outside registered memory (bad handle) and a receive too short for the message.
class BulkRecvCheck : public BulkProtection {};
TEST_P(BulkRecvCheck, ReceiverRefusesOverTheBulkPath) {
    const bool bad_handle = GetParam().check == Check::BadHandle;
    const size_t len = std::max<size_t>(dma_min(), 32768);
    Link link;
    ASSERT_TRUE(link.open(name(), vi_attr(VIP_SERVICE_RELIABLE_RECEPTION, nullptr, false, false)));
    Buf buf(len, link.ptag(), GetParam().shm);
    VT_ASSERT_OK(buf.rc);
    if (is_server()) {
        std::memset(buf.p(), 0xEE, len);
        fill_recv(link.d(0),
                  {{buf.p(), bad_handle ? buf.mh() ^ 0x00ff0000u : buf.mh(), VIP_UINT32(bad_handle ? len : len / 2)}});
        VT_ASSERT_OK(VipPostRecv(link.data(), link.d(0), link.dmh()));
        ASSERT_TRUE(link.handshake(kReady));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *r = wait_recv(link.data(), kWaitMs, &rc);
        ASSERT_EQ(r, link.d(0)) << rc_str(rc);
        EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE,
                              bad_handle ? VIP_STATUS_PROTECTION_ERROR : VIP_STATUS_LENGTH_ERROR));
        EXPECT_EQ(buf.p()[0], 0xEE) << "a refused receive placed data";
        ASSERT_TRUE(link.handshake(kResult));
    } else {
        fill_pattern(buf.p(), len, 3);
        ASSERT_TRUE(link.handshake(kReady));
        fill_send(link.d(1), {{buf.p(), buf.mh(), VIP_UINT32(len)}});
        VT_ASSERT_OK(VipPostSend(link.data(), link.d(1), link.dmh()));
        VIP_RETURN rc;
        VIP_DESCRIPTOR *d = wait_send(link.data(), kWaitMs, &rc);
        ASSERT_EQ(d, link.d(1)) << rc_str(rc);
        EXPECT_TRUE(status_is(d->CS.Status, VIP_STATUS_OP_SEND, VIP_STATUS_REMOTE_DESC_ERROR));
        ASSERT_TRUE(link.handshake(kResult));
    }
}
INSTANTIATE_TEST_SUITE_P(Checks, BulkRecvCheck,
                         ::testing::Values(ProtCase{0, Check::BadHandle, false}, ProtCase{0, Check::BadHandle, true},
                                           ProtCase{0, Check::OutOfBounds, false},
                                           ProtCase{0, Check::OutOfBounds, true}),
                         [](const auto &i) {
                             return std::string(i.param.check == Check::BadHandle ? "BadHandle" : "TooShort") +
                                 (i.param.shm ? "Shm" : "Heap");
                         });

} // namespace
