// fuzz_wire_packet - the receive side's checks of a packet taken off the nicfw
// wire (nicfw/src/wire.cpp: wire_peek, wire_header_sane, wire_consume;
// nicfw/src/packet_check.hpp: snapshot_header, packet_fits), on arbitrary
// header bytes at an arbitrary place in a real FIFO.
//
// Input: where the consumer's head is (slot offset, lap), whether the header
// carries the matching publication tag, the 32 header bytes, then the bytes
// that follow it in the ring (payload).
//
// What must hold:
//   - the consumer reads nothing outside the slots the header claims (all the
//     rest of the ring is poisoned: ASan aborts on a read), and a packet that
//     is not published is not looked at beyond its tag;
//   - a header judged sane advances the head by at least one slot and never
//     past the ring's end (a pad fills it exactly): the consumer cannot loop
//     or skip into another packet;
//   - a packet judged usable (packet_fits on the private copy) has everything
//     the receive side reads (payload, stamp, RDMA extension header) inside
//     its own slots, and its payload fits the SRAM staging buffer (an
//     exact-size allocation here, copied into as rx.cpp does);
//   - a rejected packet is never read (its bytes stay poisoned).
#include <memory>

#include "fuzz_support.hpp"
#include "packet_check.hpp"
#include "wire.hpp"

using namespace nicfw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static Wire wire("", 1, 64 * 1024);                       // a private FIFO of 1024 slots
    static const size_t sram_bytes = wire.max_payload() + 64; // the firmware's sram_rx_
    static std::unique_ptr<unsigned char[]> sram(new unsigned char[sram_bytes]);
    const uint64_t cap = wire.ring_slots();
    auto *ring = reinterpret_cast<unsigned char *>(wire.slots(0));
    const size_t ring_bytes = cap * kSlotBytes;

    fuzz::Input in{data, size};
    const uint64_t off = in.take<uint16_t>() % cap;
    const uint64_t head = off + cap * (in.take<uint8_t>() % 4);
    const bool published = !(in.take<uint8_t>() & 0x80);
    PacketHeader hw = in.take<PacketHeader>();
    if (published) hw.tag = tag_of(head);

    std::memset(ring, 0, ring_bytes);
    unsigned char *at = ring + off * kSlotBytes;
    std::memcpy(at, &hw, sizeof hw);
    const size_t room = ring_bytes - off * kSlotBytes - kHeaderBytes;
    std::memcpy(at + kHeaderBytes, in.p, in.n < room ? in.n : room);

    // Readable: the header's slot and the slots the header claims (a pad
    // claims `length` slots), within the ring.
    const uint64_t claimed = hw.op == Op::Pad ? hw.length : hw.nslots;
    const uint64_t readable = (claimed < 1 ? 1 : claimed) < cap - off ? (claimed < 1 ? 1 : claimed) : cap - off;
    FUZZ_POISON(ring, ring_bytes);
    FUZZ_UNPOISON(at, readable * kSlotBytes);

    const PacketHeader *h = wire_peek(wire, 0, head);
    FUZZ_ASSERT((h != nullptr) == published || hw.tag == tag_of(head), "peek saw tag %u at head %llu", hw.tag,
                (unsigned long long)head);
    if (h) {
        FUZZ_ASSERT(reinterpret_cast<const unsigned char *>(h) == at, "peek returned another slot");
        if (!wire_header_sane(wire, head, h)) {
            // The firmware skips one slot; nothing else of the packet is read.
        } else {
            if (h->op != Op::Pad) {
                const PacketHeader c = snapshot_header(h);
                if (packet_fits(c, wire.max_payload())) {
                    const unsigned char *payload = at + kHeaderBytes;
                    const uint64_t end = off * kSlotBytes + kHeaderBytes + packet_read_bytes(c);
                    FUZZ_ASSERT(end <= (off + c.nslots) * kSlotBytes, "reads end %llu past the packet's %u slots",
                                (unsigned long long)end, c.nslots);
                    FUZZ_ASSERT(end <= ring_bytes, "reads end %llu past the ring", (unsigned long long)end);
                    FUZZ_ASSERT(c.length <= sram_bytes, "payload %u > SRAM %zu", c.length, sram_bytes);
                    // What rx_packet_try and its handlers read, in the same way.
                    uint64_t stamp = 0;
                    if (c.flags & kFlagStamp) std::memcpy(&stamp, payload + c.length, 8);
                    (void)packet_crc(&c, payload);
                    std::memcpy(sram.get(), payload, c.length);
                    if ((c.op == Op::RdmaWrite || c.op == Op::ReadReq) && c.length >= sizeof(RdmaExt)) {
                        RdmaExt x;
                        std::memcpy(&x, sram.get(), sizeof x);
                        (void)x;
                    }
                    (void)stamp;
                }
            }
            const uint64_t next = wire_consume(wire, 0, head, h);
            FUZZ_ASSERT(next > head, "consume did not advance");
            FUZZ_ASSERT((next - 1) / cap == head / cap || next % cap == 0,
                        "consume from slot %llu by %llu ran past the ring's end", (unsigned long long)off,
                        (unsigned long long)(next - head));
            if (h->op == Op::Pad) FUZZ_ASSERT(next % cap == 0, "a pad did not end at the ring's end");
        }
    }
    FUZZ_UNPOISON(ring, ring_bytes);
    return 0;
}
