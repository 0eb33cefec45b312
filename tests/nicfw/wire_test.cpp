// wire_test.cpp - the wire FIFO protocol (nicfw/src/wire.*) on a private wire:
// packets of every size, wrap-around with pad packets, back-pressure and the
// reply headroom, stale tags, the link CRC, and several producer threads.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "crc.hpp"
#include "wire.hpp"

using namespace nicfw;

namespace {

constexpr size_t kRingBytes = 64 * 1024; // the smallest ring: 1024 slots
constexpr int kMe = 0;

uint8_t pattern_byte(uint32_t seed, size_t i) { return static_cast<uint8_t>((seed * 131u + i * 7u + (i >> 8)) & 0xff); }

uint64_t slots_for(uint32_t payload) { return (kHeaderBytes + payload + kSlotBytes - 1) / kSlotBytes; }

// Builds and publishes one packet; returns false on back-pressure.
bool send_packet(Wire &w, uint32_t len, uint32_t seed, bool reply = false, uint64_t *pos = nullptr, uint16_t src = 3,
                 uint32_t seq = 0, bool crc = true) {
    TxSlot tx;
    if (!wire_reserve(w, kMe, len, &tx, reply)) return false;
    PacketHeader *h = tx.hdr;
    h->op = Op::Send;
    h->flags = kFlagImm;
    h->src_nic = src;
    h->dst_vi = 7;
    h->src_vi = 9;
    h->aux = 0;
    h->seq = seq;
    h->length = len;
    h->imm = seed;
    for (uint32_t i = 0; i < len; ++i) tx.payload[i] = pattern_byte(seed, i);
    wire_publish(w, kMe, tx, crc);
    if (pos) *pos = tx.pos;
    return true;
}

// Consumes pads and returns the next data packet's header at *head (nullptr when
// nothing is published).
const PacketHeader *next_packet(Wire &w, uint64_t *head) {
    for (;;) {
        const PacketHeader *h = wire_peek(w, kMe, *head);
        if (!h || h->op != Op::Pad) return h;
        *head = wire_consume(w, kMe, *head, h);
    }
}

::testing::AssertionResult payload_ok(const PacketHeader *h, uint32_t len, uint32_t seed) {
    if (h->length != len) return ::testing::AssertionFailure() << "length " << h->length << " != " << len;
    const auto *p = reinterpret_cast<const unsigned char *>(h) + kHeaderBytes;
    for (uint32_t i = 0; i < len; ++i)
        if (p[i] != pattern_byte(seed, i))
            return ::testing::AssertionFailure() << "payload byte " << i << " of " << len << " is wrong";
    if (h->crc != packet_crc(h, p)) return ::testing::AssertionFailure() << "CRC mismatch";
    return ::testing::AssertionSuccess();
}

// Moves a fresh (all consumed, zeroed) ring to position `pos`, as if that many
// slots had already passed through it.
void set_position(Wire &w, uint64_t pos) {
    w.ctl(kMe).head.store(pos);
    w.ctl(kMe).tail.store(pos);
    w.head_hint(kMe).store(pos);
}

} // namespace

TEST(WireFifo, GeometryOfTheSmallestRing) {
    Wire w("", 1, kRingBytes);
    EXPECT_EQ(w.ring_slots(), 1024u);
    EXPECT_EQ(w.reply_headroom(), 256u);
    EXPECT_EQ(w.max_payload(), 255u * kSlotBytes - kHeaderBytes);
    Wire odd("", 3, 100 * 1024); // rounded up to a power of two of slots
    EXPECT_EQ(odd.ring_slots(), 2048u);
    EXPECT_THROW(Wire("", 0, kRingBytes), std::runtime_error);
}

TEST(WireFifo, PublishPeekConsumeRoundTrip) {
    Wire w("", 2, kRingBytes);
    EXPECT_EQ(wire_peek(w, kMe, 0), nullptr) << "a zero-filled ring must look empty";
    uint64_t pos = 99;
    ASSERT_TRUE(send_packet(w, 16, 0xabcd, false, &pos));
    EXPECT_EQ(pos, 0u);
    const PacketHeader *h = wire_peek(w, kMe, 0);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->op, Op::Send);
    EXPECT_EQ(h->flags, kFlagImm | kFlagCrc); // sent with a CRC, which it says
    EXPECT_EQ(h->src_nic, 3);
    EXPECT_EQ(h->dst_vi, 7);
    EXPECT_EQ(h->src_vi, 9);
    EXPECT_EQ(h->imm, 0xabcdu);
    EXPECT_EQ(h->nslots, 1);
    EXPECT_TRUE(payload_ok(h, 16, 0xabcd));
    EXPECT_EQ(wire_consume(w, kMe, 0, h), 1u);
    EXPECT_EQ(w.ctl(kMe).head.load(), 1u);
    EXPECT_EQ(wire_peek(w, kMe, 1), nullptr);
    // The other NIC's FIFO is untouched.
    EXPECT_EQ(w.ctl(1).tail.load(), 0u);
}

TEST(WireFifo, EverySizeClassUpToTheMaximumPayload) {
    Wire w("", 1, kRingBytes);
    const uint32_t maxp = static_cast<uint32_t>(w.max_payload());
    const std::vector<uint32_t> sizes = {0,  1,   15,  16,   31,   32,   33,   95,       96,
                                         97, 159, 160, 1000, 4064, 4065, 8192, maxp - 1, maxp};
    uint64_t head = 0;
    uint32_t seed = 1;
    for (int round = 0; round < 3; ++round) { // several laps, so sizes meet the ring's end at many offsets
        for (uint32_t len : sizes) {
            ++seed;
            ASSERT_TRUE(send_packet(w, len, seed)) << "reserve of " << len << " bytes failed on an empty ring";
            const PacketHeader *h = next_packet(w, &head);
            ASSERT_NE(h, nullptr) << len;
            EXPECT_EQ(h->nslots, slots_for(len)) << len;
            ASSERT_TRUE(payload_ok(h, len, seed)) << "size " << len;
            const uint64_t before = head;
            head = wire_consume(w, kMe, head, h);
            EXPECT_EQ(head - before, slots_for(len));
            EXPECT_EQ(wire_peek(w, kMe, head), nullptr);
        }
    }
    EXPECT_GT(head, 2 * w.ring_slots()) << "the test should have wrapped the ring";
}

TEST(WireFifo, PacketThatDoesNotFitBeforeTheEndIsPrecededByAPad) {
    Wire w("", 1, kRingBytes);
    const uint64_t cap = w.ring_slots();
    uint64_t head = 0;
    // Fill to near the end with one-slot packets, consuming as we go.
    for (uint64_t i = 0; i < cap - 10; ++i) {
        ASSERT_TRUE(send_packet(w, 8, static_cast<uint32_t>(i)));
        const PacketHeader *h = next_packet(w, &head);
        ASSERT_NE(h, nullptr);
        head = wire_consume(w, kMe, head, h);
    }
    ASSERT_EQ(head, cap - 10);
    // 1000 bytes need 17 slots: they do not fit in the 10 before the end.
    uint64_t pos = 0;
    ASSERT_TRUE(send_packet(w, 1000, 77, false, &pos));
    EXPECT_EQ(pos, cap) << "the packet must start at the ring's beginning";
    EXPECT_EQ(w.ctl(kMe).tail.load(), cap + 17);
    const PacketHeader *pad = wire_peek(w, kMe, head);
    ASSERT_NE(pad, nullptr) << "the pad must be published at the old tail";
    EXPECT_EQ(pad->op, Op::Pad);
    EXPECT_EQ(pad->length, 10u);
    head = wire_consume(w, kMe, head, pad);
    EXPECT_EQ(head, cap);
    const PacketHeader *h = wire_peek(w, kMe, head);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(reinterpret_cast<const void *>(h), reinterpret_cast<const void *>(&w.slots(kMe)[0]));
    EXPECT_TRUE(payload_ok(h, 1000, 77));
    head = wire_consume(w, kMe, head, h);
    EXPECT_EQ(head, cap + 17);

    // A packet ending exactly at the ring's end needs no pad.
    set_position(w, 2 * cap - 2);
    ASSERT_TRUE(send_packet(w, 96, 5, false, &pos)); // 2 slots
    EXPECT_EQ(pos, 2 * cap - 2);
    head = 2 * cap - 2;
    h = wire_peek(w, kMe, head);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->op, Op::Send);
    EXPECT_TRUE(payload_ok(h, 96, 5));
}

TEST(WireFifo, PadCountsAgainstBackPressure) {
    Wire w("", 1, kRingBytes);
    const uint64_t cap = w.ring_slots();
    const uint64_t data_room = cap - w.reply_headroom();
    // Unconsumed packets occupy [head, tail); a packet at an offset where it needs
    // a pad must count the pad too.  Leave 20 data slots free with the tail 15
    // slots before the ring's end.
    const uint64_t start = cap + (cap - 15) - (data_room - 20);
    set_position(w, start);
    for (uint64_t i = 0; i < data_room - 20; ++i) ASSERT_TRUE(send_packet(w, 8, 1)) << i;
    ASSERT_EQ(w.ctl(kMe).tail.load() % cap, cap - 15);
    TxSlot tx;
    // 16 slots would fit in the 20 free ones, but not before the end: with its
    // 15-slot pad it needs 31.
    EXPECT_FALSE(wire_reserve(w, kMe, 16 * kSlotBytes - kHeaderBytes, &tx)) << "packet + pad exceed the room left";
    EXPECT_EQ(w.ctl(kMe).tail.load() % cap, cap - 15) << "a refused reservation must not move the tail";
    // 15 slots end exactly at the ring's end: accepted, no pad.
    uint64_t pos = 0;
    EXPECT_TRUE(send_packet(w, 15 * kSlotBytes - kHeaderBytes, 2, false, &pos));
    EXPECT_EQ(pos % cap, cap - 15);
    // 16 more slots exceed the 5 data slots left; a reply may use the headroom.
    EXPECT_FALSE(wire_reserve(w, kMe, 16 * kSlotBytes - kHeaderBytes, &tx));
    EXPECT_TRUE(send_packet(w, 16 * kSlotBytes - kHeaderBytes, 3, true, &pos));
    EXPECT_EQ(pos % cap, 0u);
}

TEST(WireFifo, BackPressureAndReplyHeadroom) {
    Wire w("", 1, kRingBytes);
    const uint64_t cap = w.ring_slots();
    const uint64_t headroom = w.reply_headroom();
    uint64_t sent = 0;
    while (send_packet(w, 16, static_cast<uint32_t>(sent))) ++sent;
    EXPECT_EQ(sent, cap - headroom) << "data must leave reply_headroom() slots free";
    TxSlot tx;
    EXPECT_FALSE(wire_reserve(w, kMe, 16, &tx)) << "still full";

    // Replies may use the headroom, and only the headroom.
    uint64_t replies = 0;
    while (send_packet(w, 0, 1000 + static_cast<uint32_t>(replies), true)) ++replies;
    EXPECT_EQ(replies, headroom);
    EXPECT_FALSE(wire_reserve(w, kMe, 0, &tx, true)) << "the ring is completely full";
    EXPECT_FALSE(wire_reserve(w, kMe, 16, &tx));

    // Consuming makes room: a reply fits after one slot, data only once the
    // occupancy is below cap - headroom again.
    uint64_t head = 0;
    const PacketHeader *h = wire_peek(w, kMe, head);
    ASSERT_NE(h, nullptr);
    EXPECT_TRUE(payload_ok(h, 16, 0));
    head = wire_consume(w, kMe, head, h);
    EXPECT_FALSE(wire_reserve(w, kMe, 16, &tx)) << "data must not eat into the reply headroom";
    for (uint64_t i = 1; i < headroom; ++i) {
        h = wire_peek(w, kMe, head);
        ASSERT_NE(h, nullptr);
        ASSERT_TRUE(payload_ok(h, 16, static_cast<uint32_t>(i)));
        head = wire_consume(w, kMe, head, h);
    }
    EXPECT_FALSE(wire_reserve(w, kMe, 16, &tx)) << "occupancy is exactly cap - headroom";
    h = wire_peek(w, kMe, head);
    ASSERT_NE(h, nullptr);
    head = wire_consume(w, kMe, head, h);
    EXPECT_TRUE(send_packet(w, 16, 4242)) << "room again after consumption";
    EXPECT_FALSE(wire_reserve(w, kMe, 16, &tx));

    // Everything still comes out in order, payloads intact.
    uint64_t got = 0;
    while ((h = wire_peek(w, kMe, head)) != nullptr) {
        const uint32_t seed = h->imm;
        EXPECT_TRUE(payload_ok(h, h->length, seed));
        head = wire_consume(w, kMe, head, h);
        ++got;
    }
    EXPECT_EQ(got, cap - (headroom + 1) + 1); // all sent, minus the consumed, plus the last one
    EXPECT_EQ(head, w.ctl(kMe).tail.load());
}

// Payload bytes may hold any value, including the tag a later lap expects at
// that slot.  Consuming must clear them so they never look published (a
// header slot keeps its own tag: wire_consume).
TEST(WireFifo, PayloadEqualToAFutureTagNeverLooksPublished) {
    Wire w("", 1, kRingBytes);
    const uint64_t cap = w.ring_slots();
    uint64_t head = 0;
    uint32_t seed = 0;
    for (int lap = 0; lap < 200; ++lap) {
        for (uint32_t k = 1; head < uint64_t(lap + 1) * cap; k = k % 5 + 1) {
            // A k-slot packet whose slots 1..k-1 begin with the tags the next laps
            // expect at those positions.
            const uint32_t len = k * kSlotBytes - kHeaderBytes;
            TxSlot tx;
            ASSERT_TRUE(wire_reserve(w, kMe, len, &tx));
            PacketHeader *hdr = tx.hdr;
            hdr->op = Op::Send;
            hdr->length = len;
            hdr->imm = ++seed;
            std::memset(tx.payload, 0x5a, len);
            for (uint32_t s = 1; s < k; ++s) {
                const uint64_t p = tx.pos + s;
                const uint32_t next_lap_tag = static_cast<uint32_t>(p + cap + 1);
                const uint32_t lap_after_tag = static_cast<uint32_t>(p + 2 * cap + 1);
                std::memcpy(tx.payload + s * kSlotBytes - kHeaderBytes, (lap & 1) ? &lap_after_tag : &next_lap_tag, 4);
            }
            wire_publish(w, kMe, tx, true);
            const PacketHeader *h = next_packet(w, &head);
            ASSERT_NE(h, nullptr);
            ASSERT_EQ(h->imm, seed);
            ASSERT_EQ(h->crc, packet_crc(h, reinterpret_cast<const unsigned char *>(h) + kHeaderBytes));
            head = wire_consume(w, kMe, head, h);
            ASSERT_EQ(wire_peek(w, kMe, head), nullptr)
                << "lap " << lap << ": slot " << head << " looks published but nothing was sent there";
        }
    }
    // Every slot's first word was cleared by the consumer, or (a header slot)
    // still holds its own, past packet's tag, which no later lap expects there.
    for (uint64_t s = 0; s < cap; ++s) {
        uint32_t first;
        std::memcpy(&first, w.slots(kMe)[s].bytes, 4);
        if (first == 0) continue;
        const uint64_t last = (head - 1) - ((head - 1 - s) & (cap - 1)); // this slot's latest position
        ASSERT_EQ(first, tag_of(last)) << "slot " << s;
        for (uint64_t lap = 1; lap <= 3; ++lap) ASSERT_NE(first, tag_of(last + lap * cap)) << "slot " << s;
    }
}

// Tags are 32 bits (position + 1).  Position 2^32 - 1 therefore expects tag 0,
// which is also what an empty, consumed slot holds: a consumer there sees a
// packet that was never sent (here: the one left in that slot a lap earlier,
// whose CRC is still valid because the tag is outside the CRC).  It takes 2^32
// slots of traffic (about 4 G small messages) to get there; the test starts the
// ring just before that point instead.
TEST(WireFifo, TagWrapAt32BitsDoesNotRedeliverAStalePacket) {
    Wire w("", 1, kRingBytes);
    const uint64_t cap = w.ring_slots();
    const uint64_t start = (uint64_t(1) << 32) - 1 - cap; // one lap before the 32-bit wrap
    set_position(w, start);
    uint64_t head = start;
    for (uint64_t i = 0; i < cap + 8; ++i) {
        const PacketHeader *early = wire_peek(w, kMe, head);
        ASSERT_EQ(early, nullptr)
            << "nicfw BUG (wire.cpp, wire_peek/wire_publish): at position " << head << " (= 2^32 " << std::showpos
            << int64_t(head - (uint64_t(1) << 32)) << std::noshowpos
            << ") an empty slot looks published: the 32-bit tag "
            << "(position + 1) is 0 there, the same value consume() leaves in a free slot"
            << (early && early->op == Op::Send ? "; it re-delivers the packet sent one lap earlier (imm " +
                        std::to_string(early->imm) + ", CRC valid: " +
                        std::to_string(early->crc ==
                                       packet_crc(early,
                                                  reinterpret_cast<const unsigned char *>(early) + kHeaderBytes)) +
                        ")"
                                               : "");
        ASSERT_TRUE(send_packet(w, 16, static_cast<uint32_t>(i)));
        const PacketHeader *h = next_packet(w, &head);
        ASSERT_NE(h, nullptr);
        ASSERT_TRUE(payload_ok(h, 16, static_cast<uint32_t>(i)));
        head = wire_consume(w, kMe, head, h);
    }
}

// Between reservation and publication the header slot names its producer (the
// claim), which the consumer can read to skip the slot of a dead producer; a
// claim never looks published, and a published packet is no longer a claim.
TEST(WireFifo, ReservedSlotNamesItsOwnerUntilPublished) {
    Wire w("", 1, kRingBytes);
    w.self = 5;
    uint64_t head = 0, n = 0;
    EXPECT_EQ(wire_stuck_owner(w, kMe, head, &n), -1) << "nothing reserved";
    TxSlot stuck;
    ASSERT_TRUE(wire_reserve(w, kMe, 100, &stuck));
    EXPECT_EQ(wire_peek(w, kMe, head), nullptr) << "a claim looks published";
    ASSERT_EQ(wire_stuck_owner(w, kMe, head, &n), 5);
    EXPECT_EQ(n, slots_for(100));
    // A live producer behind it publishes; the consumer still waits at head...
    ASSERT_TRUE(send_packet(w, 16, 1));
    EXPECT_EQ(wire_peek(w, kMe, head), nullptr);
    // ...until the stuck slot is skipped: then the packet behind it is next.
    head = wire_skip(w, kMe, head, n);
    EXPECT_EQ(w.ctl(kMe).head.load(), head);
    const PacketHeader *h = next_packet(w, &head);
    ASSERT_NE(h, nullptr);
    EXPECT_TRUE(payload_ok(h, 16, 1));
    EXPECT_EQ(wire_stuck_owner(w, kMe, head, &n), -1) << "a published packet is not a claim";
    head = wire_consume(w, kMe, head, h);
    // Claims and tags never collide, over the whole position range.
    for (uint64_t pos : {uint64_t(0), uint64_t(0x7FFF), uint64_t(0x7FFFFFFE), uint64_t(0x7FFFFFFF),
                         (uint64_t(1) << 32) - 1, uint64_t(1) << 40})
        for (uint16_t owner : {uint16_t(0), uint16_t(1), uint16_t(0xFFFF)}) {
            EXPECT_NE(claim_of(pos, owner), tag_of(pos));
            EXPECT_NE(tag_of(pos), 0u);
        }
}

TEST(WireCrc, IsCrc32cOverHeaderFieldsAndPayload) {
    // Standard CRC-32C check value.
    EXPECT_EQ(crc32c(0, "123456789", 9), 0xE3069283u);

    Wire w("", 1, kRingBytes);
    ASSERT_TRUE(send_packet(w, 200, 31));
    auto *h = const_cast<PacketHeader *>(wire_peek(w, kMe, 0));
    ASSERT_NE(h, nullptr);
    auto *payload = reinterpret_cast<unsigned char *>(h) + kHeaderBytes;
    // Independent reference: CRC-32C of header bytes 4..27 followed by the payload.
    std::vector<unsigned char> bytes(reinterpret_cast<unsigned char *>(h) + 4,
                                     reinterpret_cast<unsigned char *>(h) + 28);
    bytes.insert(bytes.end(), payload, payload + 200);
    uint32_t ref = ~0u;
    for (unsigned char b : bytes) {
        ref ^= b;
        for (int k = 0; k < 8; ++k) ref = (ref >> 1) ^ (0x82F63B78u & (0u - (ref & 1u)));
    }
    ref = ~ref;
    EXPECT_EQ(h->crc, ref) << "not CRC-32C"; // on every CPU (crc_test.cpp checks both paths)
    EXPECT_EQ(h->crc, packet_crc(h, payload));
}

TEST(WireCrc, CatchesAFlippedPayloadBitAndAFlippedHeaderField) {
    Wire w("", 1, kRingBytes);
    ASSERT_TRUE(send_packet(w, 300, 8));
    auto *h = const_cast<PacketHeader *>(wire_peek(w, kMe, 0));
    ASSERT_NE(h, nullptr);
    auto *payload = reinterpret_cast<unsigned char *>(h) + kHeaderBytes;
    const uint32_t good = h->crc;
    ASSERT_EQ(packet_crc(h, payload), good);
    EXPECT_TRUE(h->flags & kFlagCrc) << "a packet sent with a CRC says so";
    EXPECT_TRUE(packet_crc_ok(h, payload));
    payload[5] ^= 0x20;
    EXPECT_FALSE(packet_crc_ok(h, payload)) << "what the receiver checks: a flipped bit is refused";
    payload[5] ^= 0x20;

    for (uint32_t bit : {0u, 7u, 1000u, 300u * 8 - 1}) {
        payload[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
        EXPECT_NE(packet_crc(h, payload), good) << "payload bit " << bit;
        payload[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    }
    // Every header byte the CRC covers (nslots .. imm): one flipped bit each.
    auto *hb = reinterpret_cast<unsigned char *>(h);
    for (size_t off = offsetof(PacketHeader, nslots); off < offsetof(PacketHeader, crc); ++off) {
        if (off >= offsetof(PacketHeader, length) && off < offsetof(PacketHeader, length) + 4) continue; // see below
        hb[off] ^= 0x10;
        EXPECT_NE(packet_crc(h, payload), good) << "header byte " << off;
        hb[off] ^= 0x10;
    }
    h->dst_vi ^= 1;
    EXPECT_NE(packet_crc(h, payload), good) << "dst_vi";
    h->dst_vi ^= 1;
    h->length -= 1; // a shortened length changes both the header and the covered payload
    EXPECT_NE(packet_crc(h, payload), good) << "length";
    h->length += 1;
    EXPECT_EQ(packet_crc(h, payload), good) << "restored packet";
    // The tag is written at publication and is not covered.
    const uint32_t tag = h->tag;
    h->tag = 12345;
    EXPECT_EQ(packet_crc(h, payload), good);
    h->tag = tag;

    // With CRC off the field is 0, the packet does not claim one, and the
    // receiver accepts it without computing one (VIPL_NICFW_CRC=0, the default).
    ASSERT_TRUE(send_packet(w, 16, 9, false, nullptr, 3, 0, false));
    const PacketHeader *h2 = wire_peek(w, kMe, wire_consume(w, kMe, 0, h));
    ASSERT_NE(h2, nullptr);
    EXPECT_EQ(h2->crc, 0u);
    EXPECT_FALSE(h2->flags & kFlagCrc);
    EXPECT_TRUE(packet_crc_ok(h2, reinterpret_cast<const unsigned char *>(h2) + kHeaderBytes));
}

// 4 producer threads x 10000 packets into one FIFO, drained by one consumer:
// nothing lost, nothing duplicated, each producer's packets in order, payloads
// and CRCs intact (a torn publication would show up as a bad CRC).
TEST(WireFifo, ManyProducersOneConsumer) {
    constexpr int kProducers = 4;
    constexpr uint32_t kPerProducer = 10000;
    Wire w("", 1, kRingBytes);
    std::atomic<bool> go{false};
    std::vector<std::thread> producers;
    for (int t = 0; t < kProducers; ++t) {
        producers.emplace_back([&, t] {
            while (!go.load()) sched_yield();
            for (uint32_t i = 0; i < kPerProducer; ++i) {
                const uint32_t len = (i * 37u + static_cast<uint32_t>(t) * 11u) % 300u; // 1..6 slots
                const uint32_t seed = static_cast<uint32_t>(t) * 1000003u + i;
                int spins = 0;
                while (!send_packet(w, len, seed, false, nullptr, static_cast<uint16_t>(t), i))
                    if (++spins % 16 == 0) sched_yield(); // back-pressure: the consumer is behind
            }
        });
    }
    uint32_t next_seq[kProducers] = {};
    uint64_t received = 0, bad = 0, out_of_order = 0;
    uint64_t head = 0;
    go.store(true);
    int idle = 0;
    while (received < uint64_t(kProducers) * kPerProducer) {
        const PacketHeader *h = next_packet(w, &head);
        if (!h) {
            if (++idle % 64 == 0) sched_yield();
            continue;
        }
        const int t = h->src_nic;
        if (t >= kProducers) {
            ++bad;
        } else {
            const uint32_t i = h->seq;
            if (i != next_seq[t]) ++out_of_order;
            next_seq[t] = i + 1;
            const uint32_t len = (i * 37u + static_cast<uint32_t>(t) * 11u) % 300u;
            if (!payload_ok(h, len, static_cast<uint32_t>(t) * 1000003u + i)) ++bad;
        }
        ++received;
        head = wire_consume(w, kMe, head, h);
    }
    for (auto &p : producers) p.join();
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(out_of_order, 0u);
    for (int t = 0; t < kProducers; ++t) EXPECT_EQ(next_seq[t], kPerProducer) << "producer " << t;
    EXPECT_EQ(wire_peek(w, kMe, head), nullptr) << "nothing extra";
    EXPECT_EQ(head, w.ctl(kMe).tail.load());
}

// A named wire is a file in /dev/shm that every rank maps lazily: two mappings
// of the same job share the FIFOs, and a mapping with another size is refused
// with a message naming the setting the ranks disagree on.
TEST(WireFile, MappingsOfOneJobShareFifosAndSizesMustAgree) {
    const std::string job = "nicfwtest-" + std::to_string(getpid());
    const std::string path = "/dev/shm/viastack-" + job + "-wire";
    {
        Wire a(job, 2, kRingBytes), b(job, 2, kRingBytes);
        TxSlot tx;
        ASSERT_TRUE(wire_reserve(a, 1, 16, &tx));
        tx.hdr->op = Op::Send;
        tx.hdr->length = 16;
        tx.hdr->imm = 0xfeed;
        std::memset(tx.payload, 0x42, 16);
        wire_publish(a, 1, tx, true);
        const PacketHeader *h = wire_peek(b, 1, 0);
        ASSERT_NE(h, nullptr) << "a packet published through one mapping must be visible through the other";
        EXPECT_EQ(h->imm, 0xfeedu);
        EXPECT_EQ(h->crc, packet_crc(h, reinterpret_cast<const unsigned char *>(h) + kHeaderBytes));
        EXPECT_EQ(wire_consume(b, 1, 0, h), 1u);
        EXPECT_EQ(a.ctl(1).head.load(), 1u);
        try {
            Wire c(job, 2, 4 * kRingBytes);
            ADD_FAILURE() << "a mapping with another ring size was accepted";
        } catch (const std::runtime_error &e) {
            EXPECT_NE(std::string(e.what()).find("VIPL_NICFW_RING_KB"), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(unlink(path.c_str()), 0) << path;
}
