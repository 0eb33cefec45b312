// am_internal.hpp - AMVIA internals: message layout, MAP links and their VI
// channels, endpoints, bundles, and the functions the am_*.cpp files share.
//
// Vocabulary (docs/am.md):
//   Link     the MAP object: this endpoint's end of a connection to one remote
//            endpoint (shared by every translation index that names it).
//   Channel  one VI of a link with its registered send/receive slots and its
//            request credits.  AMVIAv3: one channel per link; AMVIAv1: three
//            (short, medium, long), each with its own credits.
//   Slot     a VIP_DESCRIPTOR plus bookkeeping, and a message buffer, all in
//            the channel's registered region (channel/, shared with Split-C).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "am.h"
#include "viastack/channel.hpp"
#include "vipl.h"
#include "vipl_instr.h"
#include "vipl_wait.h"

struct amvia_ep;
struct amvia_eb;

#define AMVIA_LIKELY(x) __builtin_expect(!!(x), 1)
#define AMVIA_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace amvia {

// ---- wire format ------------------------------------------------------------
// 16-byte header, then nargs 32-bit arguments padded to 8 bytes, then the
// medium payload, or a LongTrailer (long messages), or a BounceTrailer
// (mediums too large for a message buffer, whose payload was RDMA-written
// into the receiver's bounce ring first).
// kFlagBounce: a medium whose payload is in the receiver's bounce ring.
enum : uint8_t { kFlagRequest = 0x01, kFlagSystem = 0x02, kFlagBounce = 0x10 };
// Credit return (channel.hpp): a reply returns its request's credit; besides
// that, any message may carry 0..kMaxCarriedCredits credits the sender owed for
// the peer's requests that got no reply (bits 5-6), and a request that took its
// sender's last credit says so (kFlagCreditsOut), so the receiver returns what
// it owes at once instead of waiting for a full batch: neither side needs to
// know the other's k for a stream never to stall for good.
enum : uint8_t { kCreditShift = 5, kCreditMask = 0x60, kFlagCreditsOut = 0x80 };
constexpr uint32_t kMaxCarriedCredits = 3;
enum Category : uint8_t { kShort = 0, kMedium = 1, kLong = 2 };
enum SysType : uint8_t {
    kSysNone = 0,
    kSysCredit = 1,    // reply: returns the request's credit, and nbytes more the sender owed
    kSysReturned = 2,  // reply: the request was refused; nbytes = status | opcode << 8
    kSysSegInfo = 3,   // request: the sender's segment (base, length, memory handle)
    kSysBarrier = 4,   // request: SPMD barrier arrival (a1 = 0) or release (a1 = 1)
    kSysInfoQuery = 5, // request: "send me your current segment" (a0 = 1: and a bounce
                       // ring for large mediums, a1 = the asker's k); answered by kSysInfo
    kSysInfo = 6,      // reply: SegInfo, then BounceInfo if one was asked for
    kSysBye = 7,       // request: the sender's endpoint is going away (a clean exit)
    kSysSegAck = 8,    // reply to kSysSegInfo: the credit, and nbytes = the gen now known
    kSysExit = 9,      // request: the job ends (AMVIA_SPMDExit on the sender), a0 = exit code
    kSysGet = 10,      // request: AM_GetXfer (am_get.cpp); answered by a long reply or kSysReturned
};

struct MsgHeader {
    uint8_t flags; // kFlag* | category << 2
    uint8_t handler;
    uint8_t nargs;
    uint8_t sys;     // SysType
    uint32_t nbytes; // medium/long payload bytes
    uint64_t tag;    // the tag the sender mapped the destination with
};
static_assert(sizeof(MsgHeader) == 16);

inline Category msg_category(const MsgHeader *m) { return Category((m->flags >> 2) & 3); }
inline uint32_t msg_carried_credits(const MsgHeader *m) { return uint32_t(m->flags & kCreditMask) >> kCreditShift; }
inline uint32_t args_bytes(unsigned nargs) { return (4 * nargs + 7) & ~7u; }
inline int32_t *msg_args(MsgHeader *m) { return reinterpret_cast<int32_t *>(m + 1); }
inline uint8_t *msg_payload(MsgHeader *m) { return reinterpret_cast<uint8_t *>(m + 1) + args_bytes(m->nargs); }

// An endpoint's segment as its peers know it.  gen counts the endpoint's
// AM_SetSeg calls: a long message carries the gen it was aimed with, so the
// receiver can tell data placed by a stale copy from data in its current
// segment.  length 0: no segment.
struct SegInfo {
    uint64_t base;
    uint64_t length;
    uint32_t handle;
    uint32_t gen;
};

// Where a peer may RDMA-write large medium payloads for us: `ring` slots of
// kBounceSlot bytes for its requests, then `ring` more for its replies.
struct BounceInfo {
    uint64_t base;
    uint32_t handle;
    uint32_t ring;
};

// After a long message's arguments: where the data went, and whether it did.
struct LongTrailer {
    uint64_t offset;
    uint32_t gen;     // SegInfo::gen the sender aimed at
    uint32_t no_data; // 1: nothing was written (it did not fit the sender's fresh copy)
};
// After a bounce medium's arguments: the slot of the receiver's ring holding the payload.
struct BounceTrailer {
    uint32_t slot;
    uint32_t pad;
};

// Whether a received message of `got` bytes holds everything its header
// claims: at most AMVIA_MAX_SHORT arguments (the dispatch tables' bound), a
// category that exists, and the arguments plus a medium's payload (or its
// bounce trailer) or a long message's trailer inside the bytes that arrived.
// A peer's library never sends less; a packet that does is malformed and must
// not make the receiver read past it or call outside its tables.  System
// messages use nbytes as a field of their own, so only their arguments count.
inline bool msg_fits(const MsgHeader *m, uint32_t got) {
    if (m->nargs > AMVIA_MAX_SHORT || msg_category(m) > kLong) return false;
    uint64_t need = sizeof(MsgHeader) + args_bytes(m->nargs);
    if (!(m->flags & kFlagSystem)) {
        if (msg_category(m) == kMedium) need += (m->flags & kFlagBounce) ? sizeof(BounceTrailer) : m->nbytes;
        else if (msg_category(m) == kLong) need += sizeof(LongTrailer);
    }
    return got >= need;
}

// Mediums up to kInlineMedium bytes travel in the message buffer (one
// descriptor, the cheapest for small ones); larger ones, up to AMVIA_MAX_MEDIUM, by RDMA into
// the receiver's bounce ring, so message buffers and small-message costs do
// not grow with AM_MaxMedium().
constexpr uint32_t kInlineMedium = 4096;
constexpr uint32_t kBounceSlot = AMVIA_MAX_MEDIUM;
constexpr uint32_t kShortBuf = 128; // header + 16 args + long trailer, rounded
constexpr uint32_t kMediumBuf = ((sizeof(MsgHeader) + 4 * AMVIA_MAX_SHORT + kInlineMedium) + 63) & ~63u;
static_assert(sizeof(MsgHeader) + 4 * AMVIA_MAX_SHORT + sizeof(LongTrailer) <= kShortBuf);

struct Link;

// A slot (descriptor, bookkeeping, message buffer) of a channel's registered
// region: channel/include/viastack/channel.hpp.  pin is the registration-cache
// entry an RDMA write holds; rdma marks a descriptor posted as an RDMA write.
using Slot = viastack::channel::Slot;
namespace chan = viastack::channel;

// One VI of a link: the shared channel (slots, credits, reaping, recycling)
// plus what AM keeps per VI.
struct Channel : chan::Channel {
    Link *link = nullptr;
    amvia_eb *eb = nullptr;
    int index = 0;       // 0 (v3) or class (v1)
    chan::Region region; // this channel's registered slots and buffers
    bool connected = false;
};

inline Channel *channel_of(Slot *s) { return static_cast<Channel *>(s->ch); }
inline MsgHeader *msg_of(Slot *s) { return reinterpret_cast<MsgHeader *>(s->buf); }

// The counters the channel times AM's steps with (Table 3 of Begel et al.).
VIASTACK_CHANNEL_INSTR(kInstr, "am", true);

// Instrumentation (vipl_instr.h) costs a message's send and receive one
// branch when it is off: each path tests instr_timing() once and runs its
// timed or its untimed instantiation (template parameter Timed), whose
// AMVIA_TIME_* scopes and channel steps are compiled out.
inline bool instr_timing() {
#if VIASTACK_INSTR_COMPILED
    return __builtin_expect(vipl_instr_timing, 0);
#else
    return false;
#endif
}
#if VIASTACK_INSTR_COMPILED
#define AMVIA_TIME_BEGIN(timed, t)                                                                                     \
    const uint64_t t = (timed) && __builtin_expect(vipl_instr_timing, 0) ? vipl_instr_begin_() : 0
#define AMVIA_TIME_END(timed, var, t)                                                                                  \
    do {                                                                                                               \
        if (timed) VIPL_INSTR_END(var, t);                                                                             \
    } while (0)
#else
#define AMVIA_TIME_BEGIN(timed, t)                                                                                     \
    do {                                                                                                               \
    } while (0)
#define AMVIA_TIME_END(timed, var, t)                                                                                  \
    do {                                                                                                               \
    } while (0)
#endif

enum class LinkState : uint8_t { Pending, Up, Dead };

struct Link {
    amvia_ep *ep = nullptr;
    en_t remote{};
    uint8_t side = 0; // 0, or 1 for the accepting half of a self-map
    LinkState state = LinkState::Pending;
    int nch = 1;
    Channel ch[3];
    uint64_t connect_deadline_ns = 0;
    // The remote endpoint's segment, from its kSysSegInfo / kSysInfo.
    bool seg_known = false;
    bool seg_fresh = false; // a kSysInfo answer not yet used by a long send
    bool query_outstanding = false;
    SegInfo seg{};
    // Large mediums.  Ours: the ring this peer writes into (allocated when it
    // first asks).  Theirs: where we write, and the next slot of each half.
    uint8_t *bounce = nullptr;
    size_t bounce_len = 0;
    VIP_MEM_HANDLE bounce_mh = 0;
    uint32_t bounce_ring = 0;
    bool peer_bounce_known = false;
    bool bounce_query_answered = false; // an answer to a query that asked for the ring came back
    BounceInfo peer_bounce{};
    uint32_t bounce_req_seq = 0, bounce_rep_seq = 0;
    bool peer_closing = false; // the peer said kSysBye: its disconnect is not an error
    bool bye_sent = false; // we said kSysBye on this MAP (once, though both AM_Terminate and AM_FreeEndpoint say it)
    uint32_t seg_acked_gen = 0; // our segment generation this peer has acknowledged
    // Acknowledging a new peer segment while one of our long messages aimed at
    // the old one is half sent would let the peer release the old segment
    // before our notice arrives; such acknowledgements wait (flush_deferred_acks).
    int long_sends = 0;
    int deferred_acks = 0;
    Channel *deferred_ack_ch = nullptr;
};

// A segment replaced by AM_SetSeg.  It stays registered until every connected
// peer has acknowledged the new one: a peer whose copy was stale may still
// write a long message into it, which the receiver then moves into the
// current segment (am_poll.cpp).
struct RetiredSeg {
    uint8_t *base;
    uintptr_t len;
    VIP_MEM_HANDLE mh;
    uint32_t gen;
};

struct Translation {
    Link *link = nullptr;
    tag_t tag = 0;
    en_t name{};
    bool inuse = false;
};

} // namespace amvia

struct amvia_ep {
    uint32_t magic;
    amvia_eb *eb;
    en_t name;
    tag_t tag;
    void *seg;
    uintptr_t seglen;
    VIP_MEM_HANDLE seg_mh;
    bool seg_registered;
    uint32_t seg_gen; // AM_SetSeg calls so far (SegInfo::gen)
    std::vector<amvia::RetiredSeg> retired;
    int credits_k;
    amx_handler_fn_t handlers[AMVIA_MAX_NUMHANDLERS];
    amvia_preHandlerCallback_t pre_handler = nullptr; // AMVIA_SetHandlerCallbacks
    amvia_postHandlerCallback_t post_handler = nullptr;
    std::vector<amvia::Translation> xlate;
    std::vector<amvia::Link *> links;
    amvia_stats_t stats; // AMVIA_GetEndpointStatistics (am_stats.cpp); plain counters
};

struct amvia_eb {
    uint32_t magic;
    int layout; // 1 or 3
    VIP_CQ_HANDLE scq, rcq;
    size_t cq_entries;             // capacity of each CQ
    size_t send_descs, recv_descs; // descriptors bound to them
    std::vector<ep_t> eps;
    int event_mask;
    long sends_outstanding;
    // Requests received where request handlers may not run (inside a handler):
    std::vector<amvia::Slot *> pending; // ring buffer sized to recv_descs
    size_t pending_head, pending_count;
    VIP_VI_HANDLE stash_vi; // a receive completion taken by VipCQWait
    // AM_PAR (docs/am.md "Threads"): every call on the bundle or one of its
    // endpoints holds `lock`, so its endpoints' credits, slots and MAP state
    // change in one thread at a time; handlers run under it in the polling
    // thread.  AM_SEQ bundles never touch it.  Completions taken by several
    // threads in AM_WaitSema at once queue behind stash_vi in stash_more.
    bool par = false;
    std::recursive_mutex lock;
    std::vector<VIP_VI_HANDLE> stash_more;
    std::vector<amvia::Link *> connecting;
    vipl_wait::WaitState wait; // idle polls before giving the CPU away (VIASTACK_WAIT)
};

namespace amvia {

constexpr uint32_t kEpMagic = 0xA3E9D001u;
constexpr uint32_t kEbMagic = 0xA3EB0B01u;

// Token handed to handlers (lives on the poller's stack).
struct Token {
    ep_t ep;
    Channel *ch; // channel the message arrived on (null for local errors)
    MsgHeader *msg;
    en_t source; // for local errors without a link (unset when ch is set)
    uint8_t is_request;
    uint8_t replied;
};

// ---- global state (am_core.cpp) ---------------------------------------------
struct Globals {
    int init_count = 0;
    VIP_NIC_HANDLE nic = nullptr;
    VIP_PROTECTION_HANDLE ptag = nullptr;
    VIP_NIC_ATTRIBUTES attr{};
    uint32_t next_ep_id = 1;
    int layout = 3;
    int default_credits = 32;
    uint64_t connect_timeout_ms = 60000;
    vipl_wait::Mode wait_mode = vipl_wait::Mode::yield; // VIASTACK_WAIT
    uint32_t max_chunk = AMVIA_MAX_LONG;                // bytes per RDMA write descriptor
    // Bundles, endpoint ids and the dead shells below are shared by every
    // thread that allocates or frees: `control` guards them (never held while
    // another AM lock is taken, so it cannot be part of a cycle).
    std::mutex control;
    std::vector<eb_t> bundles;
    // Freed endpoints and bundles stay allocated as dead shells (magic 0) that
    // the next allocation reuses: a stale ep_t/eb_t still points at an object
    // whose magic says it is gone, so valid_ep/valid_eb refuse it rather than
    // read freed memory (docs/bad-input.md).
    // The lists are never destroyed (the shells must outlive every stale
    // pointer, also while the program exits), so leak checkers see the shells
    // as reachable.
    std::vector<ep_t> &dead_eps = *new std::vector<ep_t>;
    std::vector<eb_t> &dead_ebs = *new std::vector<eb_t>;
};
extern Globals g;

// What belongs to the calling thread: handlers run in the thread that polls,
// so "inside a handler" is a property of a thread, not of the process.
struct ThreadState {
    int handler_depth = 0; // > 0 while a handler runs in this thread
    // The token of the handler running now in this thread (nullptr outside
    // handlers): a token kept past its handler, used from another thread, or
    // one that never was a token, is refused before it is dereferenced.
    void *live_token = nullptr;
    uint64_t nested_send_cycles = 0; // instrumentation: sends made inside handlers
};
// initial-exec and constinit (no lazy-initialisation wrapper): a load or two,
// the cost of the global it replaces.
extern thread_local constinit ThreadState ts __attribute__((tls_model("initial-exec")));

// Holds an AM_PAR bundle's lock for a scope; nothing for AM_SEQ (one
// predictable branch).  The bundle is read once: AM_MoveEndpoint may change
// ep->eb, and the lock released must be the one taken.
class BundleGuard {
public:
    explicit BundleGuard(amvia_eb *eb) : eb_(AMVIA_UNLIKELY(eb->par) ? eb : nullptr) {
        if (eb_) eb_->lock.lock();
    }
    ~BundleGuard() {
        if (eb_) eb_->lock.unlock();
    }
    BundleGuard(const BundleGuard &) = delete;
    BundleGuard &operator=(const BundleGuard &) = delete;

private:
    amvia_eb *eb_;
};

inline bool valid_ep(ep_t ep) { return ep && ep->magic == kEpMagic; }
inline bool valid_eb(eb_t eb) { return eb && eb->magic == kEbMagic; }

// Error-path diagnostics (never called on the hot path).
int fail(int rc, const char *fn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

// ---- a refused request or reply, named exactly (am_call_errors.cpp) ----------------
struct CallDesc {
    bool request;
    Category cat;
    bool async;
    int nargs;
    ep_t ep;     // requests
    int dest;    // requests
    void *token; // replies
    handler_t h;
    const void *src;
    size_t nbytes;
    uintptr_t off;
};
// Returns rc; with AMVIA_VerboseErrors set, first reports the call and why.
int fail_call(int rc, const CallDesc &d, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
// Why the arguments of a request or reply are refused, with the fix; null if they are fine.
const char *bad_args(const CallDesc &d, char *buf, size_t len);

void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// ---- links (am_link.cpp) ---------------------------------------------------------
Link *link_find_or_create(ep_t ep, const en_t &remote, int *rc);
void link_destroy(Link *l);
bool link_try_up(Link *l); // polls the connection; true once Up
void link_fail(Link *l, const char *why);
void bundle_check_connecting(eb_t eb);
bool en_equal(const en_t &a, const en_t &b);

// ---- registration cache (am_regcache.cpp) ------------------------------------------
// Finds or makes a registration covering [addr, addr+len) and pins it
// `pins` times (one per descriptor that will read it); returns the entry
// (release each pin with regcache_release), -2 for memory inside an endpoint
// segment or a bounce ring (nothing to release), or -1 on failure.
int regcache_acquire(eb_t eb, const void *addr, size_t len, VIP_MEM_HANDLE *mh, int pins);
const char *regcache_last_error(); // why the last regcache_acquire returned -1
void regcache_release(int entry, int pins = 1);
void regcache_clear();
// Drops entries overlapping [addr, addr+len), memory the library is about to free.
void regcache_forget(const void *addr, size_t len);

// ---- sending (am_send.cpp) ---------------------------------------------------------
int send_system_request(ep_t ep, Link *l, uint8_t sys, const int32_t *args, int nargs, const void *payload,
                        uint32_t nbytes);
int send_system_reply(Token *t, uint8_t sys, uint32_t nbytes_field, const void *payload = nullptr,
                      uint32_t payload_len = 0);
// Asks the peer for its current segment (and, with want_bounce, its bounce
// ring) and, unless async, polls until the answer is in.  AM_ERR_IN_USE when
// async and the answer is not in yet.
int refresh_peer_info(Link *l, bool want_bounce, bool async);
void say_goodbye(eb_t eb); // kSysBye on every connected MAP of the bundle
void say_goodbye(ep_t ep); // kSysBye on the endpoint's MAPs, then its sends completed
void flush_deferred_acks(Link *l);
void local_error(ep_t ep, int status, op_t opcode, handler_t h, const en_t *dest, tag_t tag, int nargs,
                 const int32_t *args);

// ---- polling (am_poll.cpp) -------------------------------------------------------------
// One pass over the bundle: stashed/queued work, receive CQ, one send completion.
// run_requests = false inside handlers: requests are queued, not run.
void poll_bundle(eb_t eb, bool run_requests);
// poll_bundle on l's bundle, and on the peer endpoint's bundle (requests
// queued) when that endpoint is in this process in another bundle: for the
// waits on the layer's handshakes (segment info, bounce-ring queries).
void poll_link(Link *l, bool run_requests);
int reap_sends(eb_t eb, int max); // returns how many it recycled
void call_error_handler(ep_t ep, int status, op_t opcode, Token *t);
void pending_reserve(eb_t eb, size_t capacity);
SegInfo current_seg(ep_t ep);
// Deregisters retired segments every connected peer has moved past; true when none is left.
bool retire_segments(ep_t ep);
bool bounce_allocate(Link *l, uint32_t ring); // our ring for this peer
void bounce_free(Link *l);

// ---- SPMD barrier hooks (am_spmd.cpp) ------------------------------------------------
void spmd_barrier_message(int32_t epoch, int32_t what);
void spmd_forget();                           // AM_Terminate ran: the SPMD bundle/endpoint are gone
void serve_get(Token *t, const MsgHeader *m); // a peer's kSysGet (am_get.cpp)
// A peer called AMVIA_SPMDExit(code): run the exit callback and end this process.
[[noreturn]] void spmd_exit_notice(int32_t code);

// ---- statistics (am_stats.cpp has the API) ------------------------------------------
// A user message was handed to the NIC: wire = bytes of its message buffer,
// rdma = payload bytes written by RDMA before it.
inline void count_sent(ep_t ep, bool request, Category cat, int nargs, size_t nbytes, uint32_t wire, size_t rdma) {
    amvia_stats_t &st = ep->stats;
    const uint64_t total = uint64_t(wire) + rdma;
    if (request) {
        st.RequestsSent[cat]++;
        st.RequestDataBytesSent[cat] += 4u * unsigned(nargs) + nbytes;
        st.RequestTotalBytesSent[cat] += total;
    } else {
        st.RepliesSent[cat]++;
        st.ReplyDataBytesSent[cat] += 4u * unsigned(nargs) + nbytes;
        st.ReplyTotalBytesSent[cat] += total;
    }
    st.TotalBytesSent += total;
}

} // namespace amvia
