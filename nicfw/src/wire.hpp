// wire.hpp - the "Myrinet switch": a shared-memory segment joining the NICs of
// every process of a job on one host.
//
// Each NIC owns one receive FIFO (a ring of 64-byte slots) that every other NIC
// may write into.  A packet occupies one or more contiguous slots; its first 32
// bytes are the packet header, the payload follows.  A 16-byte message therefore
// travels in one cache line: the sender writes it, the receiver reads it, and
// that is the only cross-core transfer on the data path.
//
// Producers reserve slots with a CAS on the ring's tail, mark the header slot
// with a claim naming themselves (claim_of: the reserving rank and the
// position), write the packet, and publish it by storing the header's `tag`
// (= slot position + 1) last, with release order.  The claim lets the consumer
// skip a slot whose producer died between reserving and publishing it
// (wire_stuck_owner, wire_skip; docs/nicfw.md "A producer killed mid-packet").  The single consumer (the owning NIC's firmware) spins on the
// tag of the slot at its head, copies the packet out, zeroes the tags of the
// slots it consumed and advances head.  Zero-filled memory is a valid empty
// ring, so the segment needs no initialisation: every process maps the same
// file (created lazily with O_CREAT and a size computed from the job size).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace nicfw {

constexpr size_t kSlotBytes = 64;
constexpr size_t kHeaderBytes = 32;

enum class Op : uint8_t {
    Pad = 0,       // filler to the ring's end (never delivered)
    Send = 1,      // send/recv data
    RdmaWrite = 2, // RDMA write (flag kFlagImm: consumes a receive descriptor)
    ReadReq = 3,   // RDMA read request
    ReadResp = 4,  // RDMA read response (data, or error status)
    Ack = 5,       // reliable-reception acknowledgement (carries a status)
    ConnReq = 6,   // client/server connection request
    ConnAck = 7,
    ConnRej = 8,
    ConnCancel = 9,
    PeerReq = 10, // peer-to-peer connection request
    PeerCancel = 11,
    Disc = 12,    // orderly disconnect (imm: the connection's nonce, as ConnErr)
    ConnErr = 13, // the peer's VI went to the error state: connection broken (imm: the sender's own_nonce)
    LinkAck = 14, // reliable transport: a cumulative acknowledgement alone (reliable.hpp)
};

constexpr uint8_t kFlagImm = 0x01;    // immediate data present
constexpr uint8_t kFlagAckReq = 0x02; // sender waits for an Ack (reliable reception)
constexpr uint8_t kFlagStamp = 0x04;  // 8-byte send time follows the payload (wire-latency profile)
constexpr uint8_t kFlagBulk = 0x08;   // bulk request: payload names the initiator's memory (dma.hpp)
constexpr uint8_t kFlagCrc = 0x10;    // `crc` holds the packet's CRC-32C (VIPL_NICFW_CRC=1 at the sender)
constexpr uint8_t kFlagRel = 0x20; // reliable transport: retransmitted until acked; `aux` = sender's ack (reliable.hpp)

// The first 32 bytes of a packet.  `tag` is written last (release).
struct PacketHeader {
    uint32_t tag;    // slot position + 1 (publication mark)
    uint16_t nslots; // slots this packet occupies (including a leading pad)
    Op op;
    uint8_t flags;
    uint16_t src_nic; // rank of the sending NIC
    uint16_t dst_vi;  // VI index at the destination NIC
    uint16_t src_vi;  // VI index at the source NIC
    uint16_t aux;     // with kFlagRel: the sender's cumulative ack (low 16 bits); else 0
    uint32_t seq;     // per-connection sequence number
    uint32_t length;  // payload bytes after the header
    uint32_t imm;     // immediate data / op-specific word
    uint32_t crc;     // with kFlagCrc: CRC over header (tag and crc zeroed) and payload; else 0
};
static_assert(sizeof(PacketHeader) == kHeaderBytes);

// What a sender says in a packet header; the source NIC is the sender's rank,
// and the wire fills tag, nslots and crc (write_header, wire_publish).
struct PacketFields {
    Op op;
    uint8_t flags = 0;
    uint16_t dst_vi = 0;
    uint16_t src_vi = 0;
    uint32_t seq = 0;
    uint32_t length = 0;
    uint32_t imm = 0;
};

// The one place a packet header is written (data, replies, control packets).
inline void write_header(PacketHeader *h, uint16_t src_nic, const PacketFields &f) {
    h->op = f.op;
    h->flags = f.flags;
    h->src_nic = src_nic;
    h->dst_vi = f.dst_vi;
    h->src_vi = f.src_vi;
    h->aux = 0;
    h->seq = f.seq;
    h->length = f.length;
    h->imm = f.imm;
}

// RDMA extension header, first bytes of the payload of RdmaWrite/ReadReq.
struct RdmaExt {
    uint64_t raddr;
    uint32_t rhandle;
    uint32_t rlen; // ReadReq: bytes requested
};

// Control of one receive FIFO; each field on its own cache line so producers'
// CAS on tail never disturbs the consumer's head or the sleep flag.
struct alignas(64) RingCtl {
    std::atomic<uint64_t> tail; // next free slot (producers)
    char pad0[56];
    std::atomic<uint64_t> head; // next slot to consume (consumer)
    // The owning NIC's one-sided transfers (onesided.cpp): odd while its DMA
    // engine is inside a peer's registered memory; a peer that deregisters
    // waits until an odd value it saw has changed.  Written only by the owner,
    // as head is, so it shares head's line.
    std::atomic<uint32_t> dma_busy;
    char pad1[52];
    std::atomic<uint32_t> sleeping; // consumer is (about to be) blocked on this word
    std::atomic<uint32_t> doorbell; // futex word bumped by producers that wake it
    std::atomic<uint32_t> pid;      // the owning NIC's process (peer_watch.hpp), 0 until it opens
    uint32_t pad_pid;
    // The owner's published protection table (published.hpp): the table's
    // serial number in its process (high half) and its memfd there plus 1
    // (low half); 0: none published.  A peer remaps when the word changes.
    std::atomic<uint64_t> table;
    char pad2[40];
};
static_assert(sizeof(RingCtl) == 192);

struct alignas(64) Slot {
    unsigned char bytes[kSlotBytes];
};

// A mapping of the job's wire.  One per process.
class Wire {
public:
    // Maps the wire of the current job (VIASTACK_JOB) or makes a private one for
    // a job of one.  Throws std::runtime_error with a readable message.
    Wire(const std::string &job, int nprocs, size_t ring_bytes);
    ~Wire();
    Wire(const Wire &) = delete;
    Wire &operator=(const Wire &) = delete;

    int nprocs() const { return nprocs_; }
    size_t ring_slots() const { return slots_; }
    size_t max_payload() const { return (slots_ / 4 - 1) * kSlotBytes - kHeaderBytes; }
    size_t reply_headroom() const { return slots_ / 4; }
    // What a request may fill: ring_slots() - reply_headroom(), kept (every
    // data packet's reservation compares with it).
    uint64_t request_slots() const { return request_slots_; }

    RingCtl &ctl(int nic) { return *reinterpret_cast<RingCtl *>(base_ + nic * stride_); }

    // Producers' private copy of each FIFO's head: reloaded (a cross-core read)
    // only when the FIFO looks full, so a small message costs one line transfer.
    // Shared by the process's producer threads: stored with release after an
    // acquire of the head and loaded with acquire, so a thread that reuses a
    // slot because of another thread's hint also sees the consumer done with
    // it (plain moves on x86).
    std::atomic<uint64_t> &head_hint(int nic) { return hints_[nic]; }
    // Packets this process has taken from its own FIFO, and that count as it
    // was at its last packet to `nic` (wire_reserve: a sender that took none
    // in between is streaming).  Process-local.
    uint64_t packets_taken() const { return taken_.load(std::memory_order_relaxed); }
    void count_taken() { taken_.store(taken_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
    std::atomic<uint64_t> &taken_at_last_send(int nic) { return taken_at_send_[nic]; }
    // This process's rank: the owner written in the claims of the slots it reserves.
    uint16_t self = 0;
    // Test hook (VIPL_NICFW_FAULTS die_reserved=R@N): when nonzero, counts this
    // process's data-packet reservations down and raises SIGKILL on the one that
    // reaches 0, after the reservation and before the packet is written.
    std::atomic<uint32_t> die_after_reserves{0};
    // Whether consumers may block on the FIFO's futex (firmware thread or agent);
    // when none can, publishing skips the fence and the sleeping check.
    bool consumers_may_sleep = true;
    Slot *slots(int nic) { return slots_of(ctl(nic)); }
    // The slots of the FIFO whose control is c (they follow it).
    static Slot *slots_of(RingCtl &c) {
        return reinterpret_cast<Slot *>(reinterpret_cast<unsigned char *>(&c) + sizeof(RingCtl));
    }

private:
    int nprocs_;
    size_t slots_;
    uint64_t request_slots_;
    size_t stride_;
    size_t bytes_;
    unsigned char *base_ = nullptr;
    std::string path_;
    std::unique_ptr<std::atomic<uint64_t>[]> hints_;
    std::unique_ptr<std::atomic<uint64_t>[]> taken_at_send_;
    std::atomic<uint64_t> taken_{0}; // one consumer per FIFO: a plain count
};

// The publication mark of the packet whose header sits at slot position `pos`:
// the position's low 30 bits with bit 30 set.  Never 0 (what a consumed slot
// holds) and never has the top bit set (that marks a claim).  The slot at the
// consumer's head holds, besides a claim or this lap's tag, at most the tag of
// the header the consumer took there a lap ago (wire_consume leaves it), and
// positions a whole number of laps apart below 2^30 slots get different tags
// (the ring has at most 2^24: VIPL_NICFW_RING_KB).  An AND and an OR: every send computes it and
// every look at the FIFO compares with it.
inline uint32_t tag_of(uint64_t pos) { return (static_cast<uint32_t>(pos) & 0x3FFFFFFFu) | 0x40000000u; }
// What the tag word holds between reservation and publication: the top bit, the
// reserving rank (16 bits) and the position's low 15 bits.  Never equal to a
// tag_of(), so wire_peek does not see a claimed slot as published.
inline uint32_t claim_of(uint64_t pos, uint16_t owner) {
    return 0x80000000u | (uint32_t(owner) << 15) | static_cast<uint32_t>(pos & 0x7FFF);
}

// Producer side: a packet being built in a reserved run of slots.
struct TxSlot {
    PacketHeader *hdr = nullptr; // where to write the header
    unsigned char *payload = nullptr;
    uint64_t pos = 0; // position of the header slot
};

// Reserves room for a packet of `payload` bytes in `dst`'s FIFO.  Returns false
// when the FIFO is full (back-pressure: the caller retries later).  Requests
// (data) leave `Wire::reply_headroom()` slots free, which only replies (Acks,
// read responses, connection management) may use: a NIC that must answer
// before it can drain its own FIFO therefore always finds room, and two NICs
// streaming at each other cannot deadlock on full FIFOs.  Inline for a
// request's common case (below); the general function does the rest.
inline bool wire_reserve(Wire &w, int dst, uint32_t payload, TxSlot *out, bool reply = false);
bool wire_reserve_general(Wire &w, int dst, uint32_t payload, TxSlot *out, bool reply);
// With with_crc, marks the packet kFlagCrc and fills crc; then publishes the
// packet (tag last, release) and wakes a sleeping consumer.
inline void wire_publish(Wire &w, int dst, const TxSlot &tx, bool with_crc);
// Whether a published packet passes its link check: true for a packet sent
// without a CRC (the receiver verifies what the sender computed, so ranks that
// disagree on VIPL_NICFW_CRC still understand each other).
inline bool packet_crc_ok(const PacketHeader *h, const unsigned char *payload);

// Consumer side: the packet at head, if published; nullptr otherwise.  Inline:
// the firmware looks at its FIFO on every step, and most looks find nothing.
// wire_peek_at: the same, given the FIFO's slots and ring_slots() - 1 (what
// its consumer keeps at hand instead of computing them per look).
inline const PacketHeader *wire_peek_at(const Slot *ring, uint64_t mask, uint64_t head) {
    auto *h = reinterpret_cast<const PacketHeader *>(&ring[head & mask]);
    const uint32_t tag = reinterpret_cast<const std::atomic<uint32_t> *>(&h->tag)->load(std::memory_order_acquire);
    return tag == tag_of(head) ? h : nullptr;
}
inline const PacketHeader *wire_peek(Wire &w, int me, uint64_t head) {
    return wire_peek_at(w.slots(me), w.ring_slots() - 1, head);
}
// Whether a published header can be trusted to say how far to advance: a pad
// must fill exactly to the ring's end, a packet must fit in the ring and in the
// largest payload.  (Only corrupt shared memory breaks this.)
bool wire_header_sane(const Wire &w, uint64_t head, const PacketHeader *h);
// Consumes the packet at head (whose header is h): zeroes the tag words of its
// slots after the header (the header keeps its own tag, which no later packet
// at that slot expects), advances head.
uint64_t wire_consume(Wire &w, int me, uint64_t head, const PacketHeader *h);
// Recovery of a slot whose producer died between reserving and publishing it
// (called rarely: by the firmware's housekeeping, when nothing is published at
// head).  Returns the rank that claimed the slot at head, with the slots its
// packet occupies in *nslots, or -1 when head holds no claim for this position
// (nothing reserved there, or published meanwhile).  Only a claim whose owner is
// known dead may be skipped: a live producer publishes its slot eventually.
int wire_stuck_owner(Wire &w, int me, uint64_t head, uint64_t *nslots);
// Skips n slots at head (their tags cleared, as consumed); returns the new head.
uint64_t wire_skip(Wire &w, int me, uint64_t head, uint64_t n);

uint32_t packet_crc(const PacketHeader *h, const unsigned char *payload);
inline bool packet_crc_ok(const PacketHeader *h, const unsigned char *payload) {
    return !(h->flags & kFlagCrc) || h->crc == packet_crc(h, payload);
}

// How far ahead of a new packet's end wire_reserve prefetches slots for
// writing, and at most how many per packet.
constexpr uint64_t kPrefetchAhead = 2;
constexpr uint64_t kPrefetchSlots = 4;

// A prefetch for writing: the line comes in owned, so the store that follows
// needs no second transfer.  GCC turns __builtin_prefetch(p, 1) into a plain
// read prefetch unless the build targets PRFCHW; x86-64 CPUs without it execute
// PREFETCHW as a no-op, so it is emitted directly.
inline void prefetch_for_write(const void *p) {
#if defined(__x86_64__)
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char *>(p)));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

// The reservation of slots [pos, pos + need) is ours (the tail moved past
// them): prefetch ahead when streaming, fill `out`, write nslots and the claim.
inline void wire_take_reserved(Wire &w, int dst, RingCtl &c, uint64_t pos, uint64_t need, TxSlot *out) {
    const uint64_t cap = w.ring_slots();
    Slot *s = Wire::slots_of(c);
    // Ask for the slots the next packets will use, for writing, now: the
    // consumer read them a lap ago, so each is a line to take back from its
    // cache.  Taken here, that transfer overlaps this packet's work instead of
    // stalling the next one (its reserve's locked compare-exchange waits until
    // every earlier store, this packet's slot included, has its line).  Only in
    // a stream: when this process took nothing from its own FIFO since its
    // last packet to dst.  A process that answers (credits, acknowledgements,
    // the other half of a ping-pong) gains nothing from it, and its prefetches
    // then land where the other side is polling (measured: a stream of AM
    // requests at k = 8 ran 14-16% slower when the credit messages coming back
    // prefetched; a stream of VI sends ran 2.5 times faster with the sender
    // prefetching).  The slots are a lap behind the consumer's head unless the
    // FIFO is nearly full; a prefetch changes no data in any case.
    const uint64_t taken = w.packets_taken();
    std::atomic<uint64_t> &at_last = w.taken_at_last_send(dst); // a load and a store, no locked exchange
    const bool streaming = at_last.load(std::memory_order_relaxed) == taken;
    at_last.store(taken, std::memory_order_relaxed);
    if (streaming)
        for (uint64_t a = 0; a < need && a < kPrefetchSlots; ++a)
            prefetch_for_write(&s[(pos + need + kPrefetchAhead + a) & (cap - 1)]);
    out->pos = pos;
    out->hdr = reinterpret_cast<PacketHeader *>(&s[pos & (cap - 1)]);
    out->payload = reinterpret_cast<unsigned char *>(out->hdr) + kHeaderBytes;
    out->hdr->nslots = static_cast<uint16_t>(need);
    // The claim: should this process die before publishing, the consumer finds
    // its rank here and skips the slot once the rank is known dead.  It is
    // stored right after nslots (release: the consumer that sees it reads a
    // valid nslots).  The remaining window: a death between the reservation
    // and this store (a few stores, no call, no loop) leaves a slot that names
    // nobody, which still blocks the FIFO.
    reinterpret_cast<std::atomic<uint32_t> *>(&out->hdr->tag)->store(claim_of(pos, w.self), std::memory_order_release);
}

// The common case inline: a request that needs no pad, fits by the head hint,
// wins the tail at the first try, with no test hook armed.  Anything else
// (a reply, the ring's end, a FIFO that looks full, a lost race) is the
// general function's, from the start.
inline bool wire_reserve(Wire &w, int dst, uint32_t payload, TxSlot *out, bool reply) {
    if (!reply) {
        RingCtl &c = w.ctl(dst);
        const uint64_t cap = w.ring_slots();
        const uint64_t need = (kHeaderBytes + payload + kSlotBytes - 1) / kSlotBytes;
        uint64_t tail = c.tail.load(std::memory_order_relaxed);
        if ((tail & (cap - 1)) + need <= cap &&
            tail + need - w.head_hint(dst).load(std::memory_order_acquire) <= w.request_slots() &&
            w.die_after_reserves.load(std::memory_order_relaxed) == 0 &&
            c.tail.compare_exchange_strong(tail, tail + need, std::memory_order_acq_rel, std::memory_order_relaxed)) {
            wire_take_reserved(w, dst, c, tail, need, out);
            return true;
        }
    }
    return wire_reserve_general(w, dst, payload, out, reply);
}

// Wakes dst's consumer, which announced it sleeps (wire_publish).
void wire_wake(Wire &w, int dst);

inline void wire_publish(Wire &w, int dst, const TxSlot &tx, bool with_crc) {
    if (__builtin_expect(with_crc, 0)) {
        tx.hdr->flags |= kFlagCrc; // before the CRC, which covers the flags
        tx.hdr->crc = packet_crc(tx.hdr, tx.payload);
    } else {
        tx.hdr->crc = 0;
    }
    reinterpret_cast<std::atomic<uint32_t> *>(&tx.hdr->tag)->store(tag_of(tx.pos), std::memory_order_release);
    if (!w.consumers_may_sleep) return;
    // Pairs with the fence in wire_sleep_prepare: either we see sleeping=1 or
    // the consumer sees our tag before it blocks.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (__builtin_expect(w.ctl(dst).sleeping.load(std::memory_order_relaxed) != 0, 0)) wire_wake(w, dst);
}

// The consumer side of the sleep protocol, in three steps so the firmware can
// re-check all its work sources (wire and host doorbells) after announcing it
// sleeps: prepare (sleeping = 1, full fence), re-check, then commit (futex wait
// until a producer rings or `timeout_us` passes) or cancel.
uint32_t wire_sleep_prepare(Wire &w, int me);
void wire_sleep_commit(Wire &w, int me, uint32_t bell, unsigned timeout_us);
void wire_sleep_cancel(Wire &w, int me);

} // namespace nicfw
