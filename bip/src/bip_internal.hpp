// bip_internal.hpp - the state behind bip.h: one link (VI + channel of
// registered slots) per peer, the per-tag queues of arrived messages, the one
// pending send and the one pending receive.  docs/bip.md describes the
// protocol.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bip.h"
#include "vipl.h"
#include "vipl_wait.h"
#include "viastack/channel.hpp"
#include "viastack/peer_vi.hpp"
#include "viastack/regcache.hpp"

namespace bip {
namespace chan = viastack::channel;

// ---- wire ---------------------------------------------------------------
// Every VIPL send BIP makes is one packet: this header, then (kEager) the
// message or (kCts) a RendezvousTarget.  RDMA writes carry no header.
enum PacketType : uint8_t {
    kEager = 1,  // a small message: tag, len, the bytes            (takes a credit)
    kRts = 2,    // request to send a long message: tag, len, seq   (takes a credit)
    kCts = 3,    // the receive is posted: write seq's bytes here   (no credit: at most one in flight)
    kRefuse = 4, // the receive is too short for seq: not sent      (no credit: as kCts)
    kFin = 5,    // seq's bytes are all written                     (no credit: at most one in flight)
    kCredit = 6, // only returns credits                            (no credit)
    kBye = 7,    // the sender's last packet (bip_finalize)         (no credit)
};
struct Header {
    uint8_t type;
    uint8_t pad;
    uint16_t tag;
    uint32_t credits; // credits returned to the receiver of this packet
    uint32_t len;     // message length (kEager, kRts, kCts, kRefuse, kFin)
    uint32_t seq;     // the sender's long-send number (kRts, kCts, kRefuse, kFin)
};
static_assert(sizeof(Header) == 16, "one 16-byte header per packet");

struct RendezvousTarget {
    uint64_t addr; // the receive buffer
    uint32_t mh;   // its registration (RDMA write enabled)
    uint32_t pad;
};

// A link's receive slots: k for the peer's credited packets (kEager, kRts),
// k for credit-only packets (each returns at least one of the k credits, so
// at most k are in flight), and kUncredited for the other packets that take
// no credit: one kCts or kRefuse (one pending receive per process), one kFin
// (one pending send), one kBye, and two spare.
constexpr uint32_t kUncredited = 5;
// Send slots per link beyond the credits: the uncredited packets above and
// RDMA write fragments in flight.
constexpr uint32_t kWriteSlots = 16;

// BIP's two protocol points [BIP] §3.3-3.4, measured over VIPL (docs/bip.md,
// "The two thresholds"): one table, read by bip_init and fragment_for.
struct FragmentRow {
    uint32_t up_to;    // messages of at most this many bytes...
    uint32_t fragment; // ...go in RDMA writes of this many (clamped to [4 KB, MaxTransferSize])
};
struct Thresholds {
    uint32_t eager_max;       // the switch point a receiver announces unless VIASTACK_BIP_EAGER says otherwise
    FragmentRow fragments[1]; // by message length, in increasing up_to
};
// A copied message of 32 KB beat the rendezvous by 2x and one of 64 KB no
// longer can be copied (one packet); the rendezvous's writes were fastest
// at the largest fragment for every length from 64 KB to 1 MB (against 16
// and 32 KB and the pipeline rule of [BIP] §3.4): the initiator copies a
// one-sided write as it posts it, so smaller fragments pipeline nothing and
// cost one more post each.
inline constexpr Thresholds kThresholds = {32768, {{0xffffffffu, 1u << 30}}};

// What each rank announces at bip_init beside its NIC address (the payload of
// the address exchange, viastack/peer_vi.hpp): the receiver fixes its buffers.
struct Announce {
    uint32_t small_buffers; // receive buffers this rank keeps per sender (= the sender's credits)
    uint32_t eager_max;     // the largest message it takes by copy
};

// One VI to one peer (a self-connection is two links: side 0 sends, side 1 receives).
struct Link {
    chan::Region region;
    chan::Channel ch;
    unsigned peer = 0;
    uint8_t side = 0;
    bool up = false;
    bool dead = false;       // a send failed or the VI broke
    bool bye = false;        // the peer's kBye arrived
    bool credit_due = false; // owed credits reached the batch size
    uint32_t owed = 0;       // credits owed to the peer (the channel's count, readable)
    uint32_t eager_max = 0;  // to this peer (its announced limit)
    uint32_t credit_every = 1;
};

// A message that arrived before its receive: the packet stays in its
// receive slot (holding the sender's credit) until received.
struct Queued {
    Link *link;
    chan::Slot *slot;
};
struct TagQueue {
    std::vector<Queued> ring; // capacity: every receive slot of every link
    uint32_t head = 0, count = 0;
    void push(Queued q) { ring[(head + count++) % ring.size()] = q; }
    const Queued &front() const { return ring[head]; }
    void pop() {
        head = uint32_t((head + 1) % ring.size());
        --count;
    }
};

// A long message's buffer registered for its transfer (bip_memory.cpp):
// an entry of one of the registration caches, or a registration of its own.
struct Registration {
    void *base = nullptr;
    VIP_MEM_HANDLE mh = 0;
    int entry = -1;    // the cache entry (cached)
    bool held = false; // registered (to be released)
    bool cached = false;
    bool rdma_write = false;
};

enum class SendState : uint8_t {
    kIdle,      // nothing pending
    kEagerWait, // a small message waiting for a credit
    kRtsWait,   // a long message waiting for a credit for its kRts
    kCtsWait,   // kRts sent; waiting for the receive (kCts or kRefuse)
    kWriting,   // RDMA writes and kFin posted; waiting for them to complete
    kDone,      // complete (result says how); reported by stest/swait
};
// Resets a pending operation to its defaults by constructing it in place.
// `o = SendOp{}` looks the same, but with a member whose default is not zero
// (Registration::entry) GCC builds the value in a stack temporary (`rep stos`)
// and copies it with loads that cannot be forwarded from those string stores:
// they wait until the store buffer has drained, behind the packet the call
// just wrote into the peer's FIFO, whose cache lines come from the other
// core.  Each bip_send then paid a cross-core line transfer (one 16-byte send
// between confirmations, 2-vCPU VM, slow placement: 70 ns -> 210 ns, the same
// instructions).  Constructing in place is stores only.
template <class T>
void reset_in_place(T &x) {
    std::destroy_at(&x);
    std::construct_at(&x);
}

struct SendOp {
    SendState state = SendState::kIdle;
    Link *link = nullptr;
    unsigned dest = 0;
    uint16_t tag = 0;
    const uint8_t *buf = nullptr;
    uint32_t len = 0;
    uint32_t seq = 0;
    uint32_t writes_out = 0; // RDMA writes posted, not yet completed
    uint32_t posted = 0;     // bytes handed to RDMA writes so far
    uint32_t fragment = 0;   // bytes per write for this message
    bool fin_sent = false;
    bool failed = false;      // registration failed: kFin says so, the send ends in error
    uint64_t remote_addr = 0; // the receive buffer (kCts)
    VIP_MEM_HANDLE remote_mh = 0;
    Registration reg; // buf's, while writing
    int result = BIP_OK;
};

enum class RecvState : uint8_t {
    kIdle,
    kWaiting, // posted; no message yet
    kCtsWait, // matched a kRts; its kCts (or kRefuse) waits for a free send slot
    kData,    // kCts sent; the writer's kFin has not come
    kDone,
};
struct RecvOp {
    RecvState state = RecvState::kIdle;
    uint16_t tag = 0;
    uint8_t *buf = nullptr;
    uint32_t maxlen = 0;
    unsigned source = 0;
    uint32_t len = 0;
    uint32_t seq = 0;    // the matched long message's sequence number
    bool refuse = false; // the kRts asked for more than maxlen
    Registration reg;    // buf's (RDMA write enabled), from kCts to kFin
    int result = BIP_OK;
};

// The NIC, its attributes and tag, and the receive CQ every link shares
// (nic, attr, ptag, rcq) are the channel's LayerNic.
struct State : chan::LayerNic {
    bool init = false;
    unsigned rank = 0, size = 0;
    uint32_t small_buffers = 8;  // this rank's receive buffers per sender
    uint32_t eager_max = 0;      // this rank's announced eager limit
    uint32_t fragment_fixed = 0; // VIASTACK_BIP_FRAGMENT (0: by kThresholds)
    uint32_t fragment_min = 0, fragment_max = 0;
    std::vector<Link *> links; // every link
    std::vector<Link *> tx;    // tx[dest]: the link sends to dest go out on
    TagQueue queues[BIP_NTAGS];
    SendOp send;
    RecvOp recv;
    uint32_t next_seq = 1;
    unsigned long long rdma_bytes = 0;
    chan::RegCache src_regs; // long sends' buffers (cache_regs)
    chan::RegCache dst_regs; // long receives' buffers, RDMA write enabled (cache_regs)
    bool cache_regs = false; // registrations kept: the NIC's registration pins nothing
    chan::NicMemory memory;  // bip_alloc_mem's blocks
    vipl_wait::WaitState wait{};
    uint32_t idle_polls = 0; // polls without work since the last work (credit flush)
    bool finalizing = false;
};
// kFin's len when the sender could not write (the receive ends in BIP_ERR_RESOURCE).
constexpr uint32_t kFinFailed = 0xffffffffu;
extern State g;
VIASTACK_CHANNEL_INSTR(kInstr, "bip", false);

int fail(int code, const char *fn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// bip_progress.cpp
bool progress();  // one pass: arrived packets, pending operations, credits; true if work was done
void wait_step(); // progress() + the waiting policy, for wait loops
void reap_sends(Link *l);
void post_packet(Link *l, chan::Slot *s, uint8_t type, uint16_t tag, uint32_t len, uint32_t seq, uint32_t payload);
void release_slot(Link *l, chan::Slot *s, bool owe); // repost; owe a credit to l's peer
bool try_match(RecvOp &r, const Queued &q);          // a queued or arriving message for the pending receive

// bip_memory.cpp
void buffers_open();  // after the NIC is open
void buffers_close(); // before it closes
// Registers len bytes at buf (RDMA write enabled for a receive buffer); false on failure.
bool buffer_register(Registration *r, const void *buf, uint32_t len, bool rdma_write);
void buffer_release(Registration *r);

// bip_send.cpp
void send_advance(); // moves the pending send on (credits, writes)
void cts_arrived(Link *l, const Header *h, const RendezvousTarget *t, bool refused);
uint32_t fragment_for(uint32_t len);

// bip_recv.cpp
void recv_advance(); // sends a matched long receive's kCts when it can
void fin_arrived(Link *l, const Header *h);

} // namespace bip
