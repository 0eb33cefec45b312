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

#include "config.hpp"
#include "dma.hpp"
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

// A bulk request (bulk.cpp) as it arrived: the RDMA extension (RDMA write and
// read only), the initiator's BulkExt, and its segment list, which points into
// the caller's copy of the payload.
struct BulkRequest {
    RdmaExt x{};
    BulkExt b{};
    const BulkSeg *segs = nullptr;
};

// Parses the `length` payload bytes at p (the SRAM copy of a packet that
// passed packet_fits) as a bulk request and checks every field of the
// initiator's part before the target uses any: the size is exactly the header
// and nseg segments, at most kMaxSegments + 1 of them; the pid is a process;
// the bytes are at most kMaxTransfer and exactly the sum of the segments; no
// segment wraps the address space (nor its offset in a shared-memory
// segment); a plain-memory segment names no shared-memory segment; padding is
// zero (what tx_bulk writes).  What the segments may touch is the target's
// own check (protection table, receive descriptor) and the copy engine's
// (the initiator's process and its shared-memory segment's bounds).
inline bool parse_bulk_request(uint64_t length, const unsigned char *p, bool rdma, BulkRequest *q) {
    const size_t head = (rdma ? sizeof(RdmaExt) : 0) + sizeof(BulkExt);
    if (length < head) return false;
    if (rdma) std::memcpy(&q->x, p, sizeof q->x);
    std::memcpy(&q->b, p + head - sizeof(BulkExt), sizeof q->b);
    const BulkExt &b = q->b;
    if (b.nseg > kMaxSegments + 1 || length != head + uint64_t(b.nseg) * sizeof(BulkSeg)) return false;
    if (b.pid == 0 || b.pad != 0 || b.length > kMaxTransfer) return false;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < b.nseg; ++i) {
        BulkSeg s;
        std::memcpy(&s, p + head + size_t(i) * sizeof(BulkSeg), sizeof s);
        if (s.pad != 0 || s.addr + s.len < s.addr) return false;
        if (s.shm_id ? (s.shm_fd < 0 || s.shm_off + s.len < s.shm_off) : (s.shm_off != 0 || s.shm_fd != -1))
            return false;
        sum += s.len;
    }
    if (sum != b.length) return false;
    q->segs = reinterpret_cast<const BulkSeg *>(p + head);
    return true;
}

} // namespace nicfw
