// packet_check_test - what the receive side accepts from the wire
// (nicfw/src/packet_check.hpp), pinned: the cases fuzz_wire_packet found or
// guards, so that a change to the checks that lets them through fails here in
// every build, not only in a fuzzing run.
#include <gtest/gtest.h>

#include "packet_check.hpp"

using namespace nicfw;

namespace {
PacketHeader header(uint16_t nslots, uint32_t length, uint8_t flags = 0, Op op = Op::Send) {
    PacketHeader h{};
    h.nslots = nslots;
    h.length = length;
    h.flags = flags;
    h.op = op;
    return h;
}
constexpr uint64_t kMaxPayload = 262080; // the default 1 MiB FIFO's
} // namespace

// Found by fuzz_wire_packet: a packet flagged kFlagStamp whose payload fills its
// last slot exactly passed the old check (header + length <= nslots * 64), and
// the receive side then read the 8-byte stamp past the packet: out of the
// packet's slots (the next packet, or past the ring's end).
TEST(PacketCheck, StampMustLieInsideThePacket) {
    EXPECT_FALSE(packet_fits(header(1, 32, kFlagStamp), kMaxPayload));
    EXPECT_FALSE(packet_fits(header(2, 96 - 4, kFlagStamp), kMaxPayload));
    EXPECT_TRUE(packet_fits(header(2, 96 - 8, kFlagStamp), kMaxPayload));
    EXPECT_TRUE(packet_fits(header(1, 32), kMaxPayload)); // without the stamp it fits exactly
}

// What a sender writes always fits (tx.cpp reserves payload + stamp bytes).
TEST(PacketCheck, HonestPacketsFit) {
    for (uint32_t len : {0u, 1u, 16u, 31u, 32u, 33u, 1000u, 65536u + 16u})
        for (uint8_t flags : {uint8_t(0), kFlagStamp, uint8_t(kFlagStamp | kFlagImm | kFlagAckReq)}) {
            const uint64_t bytes = kHeaderBytes + len + ((flags & kFlagStamp) ? 8 : 0);
            const auto nslots = static_cast<uint16_t>((bytes + kSlotBytes - 1) / kSlotBytes);
            EXPECT_TRUE(packet_fits(header(nslots, len, flags), kMaxPayload)) << len << " flags " << int(flags);
        }
}

TEST(PacketCheck, OversizeOrSlotlessPacketsAreRejected) {
    EXPECT_FALSE(packet_fits(header(0, 0), kMaxPayload));
    // Enough slots, but more than the SRAM staging buffer holds.
    EXPECT_FALSE(packet_fits(header(65535, kMaxPayload + 9), kMaxPayload));
    EXPECT_TRUE(packet_fits(header(65535, kMaxPayload + 8), kMaxPayload));
    EXPECT_FALSE(packet_fits(header(1, 0xffffffffu), kMaxPayload));
}

// The receive side checks and uses one private copy: a sender rewriting the
// header in the shared FIFO after the check changes nothing the receiver uses.
TEST(PacketCheck, SnapshotIsPrivate) {
    PacketHeader shared = header(1, 16);
    const PacketHeader copy = snapshot_header(&shared);
    ASSERT_TRUE(packet_fits(copy, kMaxPayload));
    shared.length = 0xffffffffu;
    shared.nslots = 65535;
    EXPECT_EQ(copy.length, 16u);
    EXPECT_EQ(copy.nslots, 1u);
}
