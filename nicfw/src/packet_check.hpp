// packet_check.hpp - what the receive side checks about a packet taken off the
// wire before it uses any byte of it, as pure functions (rx.cpp calls them;
// tests/fuzz/fuzz_wire_packet.cpp feeds them arbitrary packets).
//
// The FIFO lives in memory every process of the job can write, so a sender
// (buggy, or hostile) may change a header while the receiver looks at it.  The
// receiver therefore takes one private copy of the header (snapshot_header),
// checks the copy, and uses only the copy: a field cannot change between its
// check and its use.  wire_header_sane() (wire.cpp) has already decided how far
// the consumer advances; packet_fits() decides whether the packet may be used.
#pragma once

#include <cstdint>
#include <cstring>

#include "wire.hpp"

namespace nicfw {

// The header at `h` (in the shared FIFO), copied once.
inline PacketHeader snapshot_header(const PacketHeader *h) {
    PacketHeader c;
    std::memcpy(&c, h, sizeof c);
    return c;
}

// Bytes after the header the receive side reads: the payload and, when the
// packet says it carries one, the 8-byte send-time stamp behind it.
inline uint64_t packet_read_bytes(const PacketHeader &h) {
    return uint64_t(h.length) + ((h.flags & kFlagStamp) ? 8u : 0u);
}

// Whether a (non-pad) packet may be used: everything the receive side reads
// lies inside the packet's own slots, and the payload fits the firmware's SRAM
// staging buffer (max_payload + 64 bytes; a packet never carries more than
// max_payload + 8).  A packet that fails is dropped unread.
inline bool packet_fits(const PacketHeader &h, uint64_t max_payload) {
    return h.nslots >= 1 && uint64_t(h.length) <= max_payload + 8 &&
           kHeaderBytes + packet_read_bytes(h) <= uint64_t(h.nslots) * kSlotBytes;
}

} // namespace nicfw
