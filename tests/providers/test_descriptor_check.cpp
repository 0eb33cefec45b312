// The VI descriptor rules of vipl/providers/common/descriptor_check.hpp: every
// status bit they can produce, the order in which they are checked, and the
// edges of the registered-range check.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "descriptor_check.hpp"

namespace vc = vipl::common;

namespace {

struct FakeRegion {
    uintptr_t base;
    size_t len;
    int ptag;
};

// A protection table: handles -> regions, and the VI's protection tag.
struct Table {
    std::map<VIP_MEM_HANDLE, FakeRegion> regions;
    int vi_ptag = 1;
    auto lookup() {
        return [this](VIP_MEM_HANDLE h) -> const FakeRegion * {
            auto it = regions.find(h);
            return it != regions.end() && it->second.ptag == vi_ptag ? &it->second : nullptr;
        };
    }
};

constexpr VIP_MEM_HANDLE kDescMh = 10, kBufMh = 20, kOtherTagMh = 30;

class DescriptorCheck : public ::testing::Test {
protected:
    void SetUp() override {
        std::memset(desc_mem, 0, sizeof desc_mem);
        d = reinterpret_cast<VIP_DESCRIPTOR *>(desc_mem);
        table.regions[kDescMh] = {uintptr_t(desc_mem), sizeof desc_mem, 1};
        table.regions[kBufMh] = {uintptr_t(buf), sizeof buf, 1};
        table.regions[kOtherTagMh] = {uintptr_t(buf), sizeof buf, 2};
        rules.max_seg_count = 4;
        rules.max_data_segments = 4;
        rules.max_transfer = 1024;
        rules.reliable = true;
    }
    // A send of n data segments of `each` bytes (after an address segment for RDMA).
    void make_send(uint16_t control, uint32_t n, uint32_t each) {
        d->CS.Control = control;
        const uint32_t first = vc::first_data_segment(control);
        d->CS.SegCount = uint16_t(first + n);
        d->CS.Length = n * each;
        for (uint32_t i = 0; i < n; i++) {
            VIP_DATA_SEGMENT &s = seg()[first + i].Local;
            s.Data.Address = buf + i * each;
            s.Handle = kBufMh;
            s.Length = each;
        }
    }
    // The segments after the control segment (VIP_DESCRIPTOR declares only two).
    VIP_DESCRIPTOR_SEGMENT *seg() {
        return reinterpret_cast<VIP_DESCRIPTOR_SEGMENT *>(desc_mem + sizeof(VIP_CONTROL_SEGMENT));
    }
    uint32_t send() { return vc::check_send(d, kDescMh, rules, table.lookup(), vc::NoSegmentSink{}, &total); }
    uint32_t recv() { return vc::check_recv(d, kDescMh, rules, table.lookup(), vc::NoSegmentSink{}, &total); }

    alignas(64) unsigned char desc_mem[sizeof(VIP_CONTROL_SEGMENT) + 8 * sizeof(VIP_DESCRIPTOR_SEGMENT)];
    unsigned char buf[4096];
    VIP_DESCRIPTOR *d = nullptr;
    Table table;
    vc::DescriptorRules rules;
    uint64_t total = 0;
};

} // namespace

TEST(OpStatus, FromControlField) {
    EXPECT_EQ(vc::op_status(VIP_CONTROL_OP_SENDRECV), uint32_t(VIP_STATUS_OP_SEND));
    EXPECT_EQ(vc::op_status(VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE), uint32_t(VIP_STATUS_OP_RDMA_WRITE));
    EXPECT_EQ(vc::op_status(VIP_CONTROL_OP_RDMAREAD | VIP_CONTROL_QFENCE), uint32_t(VIP_STATUS_OP_RDMA_READ));
    EXPECT_EQ(vc::op_status(VIP_CONTROL_OP_RESERVED), uint32_t(VIP_STATUS_OP_SEND));
}

TEST(RangeCovers, Edges) {
    EXPECT_TRUE(vc::range_covers(100, 50, 100, 50));        // exactly the region
    EXPECT_TRUE(vc::range_covers(100, 50, 149, 1));         // the last byte
    EXPECT_TRUE(vc::range_covers(100, 50, 150, 0));         // empty, at the end
    EXPECT_FALSE(vc::range_covers(100, 50, 149, 2));        // one byte past the end
    EXPECT_FALSE(vc::range_covers(100, 50, 99, 1));         // one byte before
    EXPECT_FALSE(vc::range_covers(100, 50, 100, 51));       // longer than the region
    EXPECT_FALSE(vc::range_covers(100, 50, 120, SIZE_MAX)); // would wrap around
    EXPECT_FALSE(vc::range_covers(100, 50, UINTPTR_MAX, 2));
}

TEST_F(DescriptorCheck, ValidSendGivesItsLengthAndItsSegments) {
    make_send(VIP_CONTROL_OP_SENDRECV, 3, 100);
    seg()[1].Local.Length = 0; // an empty segment needs no registration
    seg()[1].Local.Handle = 999;
    d->CS.Length = 200;
    int seen = 0;
    auto sink = [&](const FakeRegion &r, const VIP_DATA_SEGMENT &s) {
        EXPECT_EQ(r.base, uintptr_t(buf));
        EXPECT_NE(s.Length, 0u);
        seen++;
    };
    EXPECT_EQ(vc::check_send(d, kDescMh, rules, table.lookup(), sink, &total), 0u);
    EXPECT_EQ(total, 200u);
    EXPECT_EQ(seen, 2);
}

TEST_F(DescriptorCheck, RdmaWriteAndReadWithAddressSegment) {
    make_send(VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE, 2, 64);
    EXPECT_EQ(send(), 0u);
    EXPECT_EQ(total, 128u);
    make_send(VIP_CONTROL_OP_RDMAREAD, 1, 64);
    EXPECT_EQ(send(), 0u);
    make_send(VIP_CONTROL_OP_RDMAWRITE, 0, 0); // a zero-byte RDMA write: the address segment only
    EXPECT_EQ(send(), 0u);
}

TEST_F(DescriptorCheck, DescriptorNotRegisteredIsProtection) {
    make_send(VIP_CONTROL_OP_SENDRECV, 1, 8);
    EXPECT_EQ(vc::check_send(d, 77, rules, table.lookup()), uint32_t(VIP_STATUS_PROTECTION_ERROR));
    // registered, but under another protection tag
    table.regions[kDescMh].ptag = 2;
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_PROTECTION_ERROR));
}

TEST_F(DescriptorCheck, ControlSegmentPartlyOutsideIsProtection) {
    make_send(VIP_CONTROL_OP_SENDRECV, 1, 8);
    table.regions[kDescMh].len = sizeof(VIP_CONTROL_SEGMENT) - 1;
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_PROTECTION_ERROR));
}

TEST_F(DescriptorCheck, SegmentsOutsideTheDescriptorRegionAreProtection) {
    make_send(VIP_CONTROL_OP_SENDRECV, 2, 8);
    table.regions[kDescMh].len = vc::descriptor_bytes(2) - 1; // the last segment sticks out
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_PROTECTION_ERROR));
    table.regions[kDescMh].len = vc::descriptor_bytes(2);
    EXPECT_EQ(send(), 0u);
}

TEST_F(DescriptorCheck, ReservedOpcodeOrControlBitsAreFormat) {
    make_send(VIP_CONTROL_OP_RESERVED, 1, 8);
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_FORMAT_ERROR));
    make_send(VIP_CONTROL_OP_SENDRECV | 0x0010, 1, 8);
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_FORMAT_ERROR));
    make_send(VIP_CONTROL_OP_SENDRECV | 0x8000, 1, 8);
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_FORMAT_ERROR));
}

TEST_F(DescriptorCheck, SegmentCountLimits) {
    make_send(VIP_CONTROL_OP_RDMAWRITE, 0, 0);
    d->CS.SegCount = 0; // an RDMA descriptor without its address segment
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_FORMAT_ERROR));
    make_send(VIP_CONTROL_OP_SENDRECV, 4, 8);
    EXPECT_EQ(send(), 0u);
    make_send(VIP_CONTROL_OP_SENDRECV, 5, 8); // over max_seg_count
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_FORMAT_ERROR));
    make_send(VIP_CONTROL_OP_RDMAWRITE, 4, 8); // SegCount 5 > max_seg_count 4
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_FORMAT_ERROR));
    // A device limit on data segments only (verbs: max_sge), the address segment not counted.
    rules.max_seg_count = 5;
    rules.max_data_segments = 4;
    EXPECT_EQ(send(), 0u);
    make_send(VIP_CONTROL_OP_SENDRECV, 5, 8);
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_FORMAT_ERROR));
}

TEST_F(DescriptorCheck, RdmaReadRules) {
    make_send(VIP_CONTROL_OP_RDMAREAD | VIP_CONTROL_IMMEDIATE, 1, 8);
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_FORMAT_ERROR));
    make_send(VIP_CONTROL_OP_RDMAREAD, 1, 8);
    rules.reliable = false;
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_FORMAT_ERROR));
    make_send(VIP_CONTROL_OP_RDMAWRITE, 1, 8); // RDMA write is fine on an unreliable VI
    EXPECT_EQ(send(), 0u);
}

TEST_F(DescriptorCheck, DataSegmentProtection) {
    make_send(VIP_CONTROL_OP_SENDRECV, 2, 8);
    seg()[1].Local.Handle = 12345; // unknown handle
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_PROTECTION_ERROR));
    make_send(VIP_CONTROL_OP_SENDRECV, 2, 8);
    seg()[1].Local.Handle = kOtherTagMh; // another protection tag
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_PROTECTION_ERROR));
    make_send(VIP_CONTROL_OP_SENDRECV, 1, 8);
    seg()[0].Local.Data.Address = buf + sizeof buf - 4; // runs past the region's end
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_PROTECTION_ERROR));
    make_send(VIP_CONTROL_OP_RDMAWRITE, 1, 8);
    seg()[0].Remote.Handle = 12345; // the remote handle is the target's business
    EXPECT_EQ(send(), 0u);
}

TEST_F(DescriptorCheck, LengthMustMatchTheSegments) {
    make_send(VIP_CONTROL_OP_SENDRECV, 2, 8);
    d->CS.Length = 15;
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_FORMAT_ERROR));
    d->CS.Length = 17;
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_FORMAT_ERROR));
}

TEST_F(DescriptorCheck, TransferLimitIsLength) {
    make_send(VIP_CONTROL_OP_SENDRECV, 2, 512); // exactly max_transfer
    EXPECT_EQ(send(), 0u);
    make_send(VIP_CONTROL_OP_SENDRECV, 3, 512);
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_LENGTH_ERROR));
}

TEST_F(DescriptorCheck, FirstFailureDecides) {
    // Format (reserved bits) is found before a bad data segment.
    make_send(VIP_CONTROL_OP_SENDRECV | 0x0100, 1, 8);
    seg()[0].Local.Handle = 12345;
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_FORMAT_ERROR));
    // A bad data segment is found before a wrong Length and a too long transfer.
    make_send(VIP_CONTROL_OP_SENDRECV, 3, 512);
    seg()[2].Local.Handle = 12345;
    d->CS.Length = 1;
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_PROTECTION_ERROR));
    // An unregistered descriptor is protection, whatever it holds.
    make_send(VIP_CONTROL_OP_RESERVED, 1, 8);
    table.regions.erase(kDescMh);
    EXPECT_EQ(send(), uint32_t(VIP_STATUS_PROTECTION_ERROR));
}

TEST_F(DescriptorCheck, PhasesForACopiedDescriptor) {
    // A firmware that copies the control segment and the segments first checks its copies.
    make_send(VIP_CONTROL_OP_RDMAWRITE, 2, 8);
    VIP_CONTROL_SEGMENT cs = d->CS;
    VIP_DESCRIPTOR_SEGMENT copy[3];
    std::memcpy(copy, seg(), sizeof copy);
    EXPECT_EQ(vc::check_send_control(cs, rules), 0u);
    uint64_t sum = 0;
    EXPECT_EQ(vc::check_data_segments(&copy[1], 2, table.lookup(), vc::NoSegmentSink{}, &sum), 0u);
    EXPECT_EQ(sum, 16u);
}

TEST_F(DescriptorCheck, ValidReceiveGivesItsCapacity) {
    make_send(VIP_CONTROL_OP_SENDRECV, 3, 100);
    d->CS.Length = 0; // a receive's Length is written at completion
    EXPECT_EQ(recv(), 0u);
    EXPECT_EQ(total, 300u);
    d->CS.SegCount = 0; // a receive for zero-byte messages
    EXPECT_EQ(recv(), 0u);
    EXPECT_EQ(total, 0u);
}

TEST_F(DescriptorCheck, ReceiveErrors) {
    make_send(VIP_CONTROL_OP_SENDRECV, 1, 8);
    EXPECT_EQ(vc::check_recv(d, 77, rules, table.lookup()), uint32_t(VIP_STATUS_PROTECTION_ERROR));
    d->CS.Control = 0x0020;
    EXPECT_EQ(recv(), uint32_t(VIP_STATUS_FORMAT_ERROR));
    make_send(VIP_CONTROL_OP_SENDRECV, 5, 8);
    EXPECT_EQ(recv(), uint32_t(VIP_STATUS_FORMAT_ERROR));
    make_send(VIP_CONTROL_OP_SENDRECV, 4, 8);
    table.regions[kDescMh].len = vc::descriptor_bytes(3);
    EXPECT_EQ(recv(), uint32_t(VIP_STATUS_PROTECTION_ERROR));
    table.regions[kDescMh].len = sizeof desc_mem;
    seg()[3].Local.Handle = kOtherTagMh;
    EXPECT_EQ(recv(), uint32_t(VIP_STATUS_PROTECTION_ERROR));
}

TEST(ReceiveFits, MessageAgainstCapacity) {
    EXPECT_EQ(vc::receive_fits(100, 100), 0u);
    EXPECT_EQ(vc::receive_fits(0, 0), 0u);
    EXPECT_EQ(vc::receive_fits(101, 100), uint32_t(VIP_STATUS_LENGTH_ERROR));
}
