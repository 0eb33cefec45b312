// fm_internal.hpp - the state behind fm.h: links (one VI + channel per
// peer), outbound and inbound streams, the handler table, the coroutines
// that run suspended handlers.  docs/fm.md describes the protocol.
#pragma once

#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "fm.h"
#include "vipl.h"
#include "vipl_wait.h"
#include "viastack/channel.hpp"
#include "viastack/peer_vi.hpp"
#include "viastack/regcache.hpp"

namespace fm {
namespace chan = viastack::channel;

// ---- wire ---------------------------------------------------------------
// Every VIPL message FM sends is one packet: this header, then up to
// payload_max() bytes of the message.
enum PacketFlags : uint8_t {
    kFirst = 1,        // first packet of a message: starts its handler
    kLast = 2,         // last packet of a message
    kBuffer = 4,       // FM 1.x message (one packet) for a buffer handler
    kCreditOnly = 8,   // no message: only returns credits (takes none)
    kBye = 16,         // the sender's last packet on this VI (FM_finalize)
    kRdmaTarget = 32,  // to a sender: write the rest of your message here (payload: RdmaTarget)
    kRdmaDone = 64,    // stream packet without payload: `len` bytes were RDMA-written in place
    kRendezvous = 128, // first packet of a long message: nothing more of it follows until the
                       // receiver answers (kRdmaTarget with `answer` set: a buffer, or declined)
};
// A receiving handler named its buffer (FM_receive) before the bytes came:
// message bytes [offset, offset + len) go to addr (handle mh) by RDMA write.
// As the answer to a rendezvous (`answer` 1) it takes no credit, and len 0
// declines: the rest of the message comes as packets.
struct RdmaTarget {
    uint64_t addr;
    uint32_t mh;
    uint32_t offset;
    uint32_t len;
    uint32_t answer;
};
struct PacketHeader {
    uint16_t handler; // handler id
    uint8_t flags;
    uint8_t stream;   // the sender's outbound stream id (messages of one sender may interleave)
    uint32_t credits; // credits returned to the receiver of this packet (for its sends on this VI)
    uint32_t msg_len; // the whole message's length (read from the first packet)
    uint32_t len;     // message bytes in this packet
};
static_assert(sizeof(PacketHeader) == 16, "one 16-byte header per packet");

constexpr int kStreams = 16; // outbound messages one node may have open at once
constexpr int kMaxGatherSegs =
    64; // data segments of a gathered packet's descriptor (VIASTACK_FM_GATHER_SEGMENTS caps it)

// One data segment of a packet being gathered: the slot's own buffer (the
// header and pieces copied into it) or a caller's piece in place.
struct Seg {
    const void *addr;
    VIP_MEM_HANDLE mh;
    uint32_t len;
    bool slot_buf; // lies in the slot's buffer (copied bytes can extend it)
};

struct Link;
struct Coroutine;

} // namespace fm

// The opaque handle of fm.h: an outbound (sender's) or inbound (handler's) stream.
struct FM_stream {
    bool inbound;
};

namespace fm {

struct Outbound : FM_stream {
    Link *link = nullptr;
    uint16_t handler = 0;
    uint8_t id = 0;
    bool open = false;
    bool first = true;          // no packet posted yet
    uint32_t length = 0;        // announced by FM_begin_message
    uint32_t sent = 0;          // bytes given by FM_send_piece so far
    chan::Slot *slot = nullptr; // the packet being filled (a credit is held for it)
    uint32_t fill = 0;          // message bytes in the packet (copied or gathered)
    uint32_t copied = 0;        // of them, bytes copied into the slot's buffer (after the header)
    int nseg = 0;               // 0: the packet is the slot's buffer alone; else segs[0..nseg) (gather)
    bool ended = false;         // the last packet went out already (the final bytes gathered, or RDMA-written)
    bool rv_wait = false;       // the first packet asked for a rendezvous: no byte more until the answer
    Seg segs[kMaxGatherSegs];
    // Layer interleaving: the receiver's buffer for message bytes [.., rdma_end).
    bool rdma = false;
    bool rdma_started = false;
    uint32_t rdma_offset = 0, rdma_end = 0, rdma_first = 0;
    uint64_t rdma_addr = 0; // remote address of message byte rdma_offset
    VIP_MEM_HANDLE rdma_mh = 0;
};

// One message being received: its packets (receive slots not yet given back
// to the NIC) and its handler, run directly or in a coroutine.
struct Inbound : FM_stream {
    Link *link = nullptr;
    unsigned sender = 0;
    uint8_t sid = 0; // the sender's stream id
    FM_handler fn = nullptr;
    Coroutine *co = nullptr;   // null: run on the extracting stack (whole message in one packet)
    uint32_t length = 0;       // message bytes
    uint32_t consumed = 0;     // bytes FM_receive has taken
    uint32_t offset = 0;       // read position in the front packet's payload
    bool complete = false;     // last packet arrived
    bool done = false;         // handler returned
    bool waiting = false;      // suspended in FM_receive
    bool rdma_pending = false; // an RDMA target was sent; its kRdmaDone has not come
    bool rv_owed = false;      // the sender waits for our answer to its rendezvous
    void *reg_base = nullptr;  // the handler's buffer, registered for the RDMA
    VIP_MEM_HANDLE reg_mh = 0;
    int reg_entry = -1;             // its entry in g.dst_regs, or -1: a registration of its own
    std::vector<chan::Slot *> ring; // queued packets (capacity: the link's receive slots)
    uint32_t head = 0, count = 0;

    void push(chan::Slot *s) { ring[(head + count++) % ring.size()] = s; }
    chan::Slot *front() const { return ring[head]; }
    void pop() {
        head = uint32_t((head + 1) % ring.size());
        --count;
    }
};

// A user-level context with its own stack, reused for handler after handler.
struct Coroutine {
    // x86-64 (fm_coroutine.cpp): the saved stack pointers of the handler and
    // of whoever resumed it last; elsewhere (and under ThreadSanitizer) the
    // ucontext_t pair.
    void *sp = nullptr;
    void *caller_sp = nullptr;
    ucontext_t ctx;    // the handler's
    ucontext_t caller; // whoever resumed it last
    void *stack = nullptr;
    size_t stack_size = 0;
    Inbound *in = nullptr;
    bool finished = false;
    // AddressSanitizer's view of the switches (fm_coroutine.cpp): the
    // handler's fake stack while it is switched out, and the stack of
    // whoever resumed it last.
    void *asan_fake = nullptr;
    const void *caller_bottom = nullptr;
    size_t caller_size = 0;
};

// One VI to one peer (a self-connection is two links, one per side).
struct Link {
    chan::Region region;
    chan::Channel ch;
    // Gathered packets' descriptors (send slot i posts gather descriptor i
    // when its packet names a caller's piece): the slot's own descriptor has
    // room for two segments only.  Not allocated when gather is off.
    chan::Region gather;
    unsigned peer = 0;
    uint8_t side = 0;
    bool up = false;
    bool dead = false;       // its VI reported an error (or the peer left)
    bool bye = false;        // the peer's kBye arrived on it
    bool credit_due = false; // owed credits reached the batch size: send them
    // A buffer handler of this link runs with its credit owed before its
    // buffer is reposted (the "+1" of 2k + 1).  Only one at a time: handlers
    // nested in its sends' credit waits owe theirs after reposting.
    bool early_credit = false;
    // A rendezvous of ours on this link waits for its answer.  One at a time:
    // the answer takes no credit, and each link keeps one receive slot for it.
    bool rv_busy = false;
    Inbound *current[kStreams] = {}; // per sender stream id: the message receiving packets
};

struct HandlerEntry {
    FM_handler fn = nullptr;
    FM_buffer_handler bfn = nullptr;
};

// The NIC, its attributes and tag, and the receive CQ every link shares
// (nic, attr, ptag, rcq) are the channel's LayerNic.
struct State : chan::LayerNic {
    bool init = false;
    unsigned rank = 0, size = 1;
    chan::Layout layout{};
    uint32_t payload_max = 0;   // message bytes per packet
    uint32_t credit_every = 1;  // credits returned in batches of this many
    uint32_t max_write = 0;     // bytes per RDMA write descriptor
    uint32_t rdma_min = 0;      // FM_receive of at least this many missing bytes names its buffer (0: never)
    uint32_t rv_min = 0;        // messages of at least this many bytes open with a rendezvous (0: never)
    uint32_t gather_min = 0;    // FM_send_piece pieces of at least this many bytes go as data segments (0: never)
    int gather_segs = 0;        // data segments per gathered packet (header segment included)
    uint32_t gather_stride = 0; // bytes per gather descriptor
    chan::RegCache regcache;    // callers' pieces (gather segments, RDMA write sources)
    chan::RegCache dst_regs;    // handlers' named buffers, RDMA write enabled (when cache_dst)
    bool cache_dst = false;     // keep those registrations: the NIC's registration pins nothing
    chan::NicMemory memory;     // FM_alloc_mem's blocks
    size_t stack_size = 0;
    std::vector<Link *> links; // every link
    std::vector<Link *> tx;    // tx[dest]: the link messages to dest go out on
    int credit_due_links = 0;
    Outbound out[kStreams];
    uint8_t free_out[kStreams];
    int nfree_out = 0;
    HandlerEntry handlers[FM_MAX_HANDLERS];
    std::vector<unsigned> registered; // ids with a handler, for translating pointers
    const void *last_fn = nullptr;    // translation cache
    unsigned last_id = 0;
    Inbound *current = nullptr; // the handler running now (innermost)
    unsigned suspended = 0;
    unsigned long long blocked_waits = 0;  // VipCQWait sleeps (FM_blocked_waits)
    unsigned long long rdma_bytes = 0;     // received in place by RDMA
    unsigned long long gathered_bytes = 0; // sent as data segments naming callers' pieces
    std::vector<Inbound *> free_inbound;
    std::vector<Coroutine *> free_co;
    Coroutine *starting = nullptr;
    vipl_wait::WaitState wait{};
    VIP_VI_HANDLE stash_vi = nullptr; // a receive completion VipCQWait took (block mode), handled first
    bool finalizing = false;
    int last_error = FM_OK;
};
extern State g;
VIASTACK_CHANNEL_INSTR(kInstr, "fm", false);

// Sets the last error and returns it.
int fail(int code, const char *fn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// fm_send.cpp
chan::Slot *acquire(Link *l); // a send slot with a credit (waits, extracting)
chan::Slot *slot_of_send(Link *l, VIP_DESCRIPTOR *d, VIP_DESCRIPTOR **posted); // a send completion's slot
void flush(Outbound *o, bool last);
void post_gather(Outbound *o, uint8_t flags); // o's packet as a gather list (o->nseg segments)
// len goes in the header; payload (default: len) is what the packet carries.
void post_packet(Link *l, chan::Slot *s, uint16_t handler, uint8_t flags, uint8_t stream, uint32_t msg_len,
                 uint32_t len, uint32_t payload);
inline void post_packet(Link *l, chan::Slot *s, uint16_t handler, uint8_t flags, uint8_t stream, uint32_t msg_len,
                        uint32_t len) {
    post_packet(l, s, handler, flags, stream, msg_len, len, len);
}
void rdma_target_arrived(Link *l, const PacketHeader *h, const RdmaTarget &t);
bool wait_answer(Outbound *o);     // until the receiver answered o's rendezvous; false if the link failed
bool spin_for_answer(Outbound *o); // as long as the waiting policy spins; false if the link failed
void reap_sends(Link *l);
void try_send_credits(Link *l);
int handler_id(const void *fn, bool buffer, unsigned *id);

// fm_extract.cpp
int extract(uint32_t maxbytes); // the body of FM_extract
void progress_wait();           // one idle step of a wait loop (extract + waiting policy)
void after_poll(int got);       // the waiting policy after a poll that extracted `got` bytes
void release_slot(Link *l, chan::Slot *s, bool owe);
void owe_credit(Link *l); // one credit owed to l's peer (sent in batches or piggy-backed)

// fm_coroutine.cpp
Coroutine *co_get(); // from the pool (or a new one); null when out of memory
void co_put(Coroutine *co);
void co_resume(Coroutine *co);  // runs co until it suspends or its handler returns
void co_suspend(Coroutine *co); // back to co's resumer
void co_free_all();

} // namespace fm
