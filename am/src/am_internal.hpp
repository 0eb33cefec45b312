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
//            the channel's registered region.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "am.h"
#include "vipl.h"
#include "vipl_instr.h"

struct amvia_ep;
struct amvia_eb;

#define AMVIA_LIKELY(x) __builtin_expect(!!(x), 1)
#define AMVIA_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace amvia {

// ---- wire format ------------------------------------------------------------
// 16-byte header, then nargs 32-bit arguments padded to 8 bytes, then the
// medium payload or, for long messages, the 8-byte destination offset.
enum : uint8_t { kFlagRequest = 0x01, kFlagSystem = 0x02 };
enum Category : uint8_t { kShort = 0, kMedium = 1, kLong = 2 };
enum SysType : uint8_t {
    kSysNone = 0,
    kSysCredit = 1,   // reply: empty, returns the request's credit
    kSysReturned = 2, // reply: the request was refused; nbytes = status | opcode << 8
    kSysSegInfo = 3,  // request: the sender's segment (base, length, memory handle)
    kSysBarrier = 4,  // request: SPMD barrier arrival (a1 = 0) or release (a1 = 1)
};

struct MsgHeader {
    uint8_t flags;    // kFlag* | category << 2
    uint8_t handler;
    uint8_t nargs;
    uint8_t sys;      // SysType
    uint32_t nbytes;  // medium/long payload bytes
    uint64_t tag;     // the tag the sender mapped the destination with
};
static_assert(sizeof(MsgHeader) == 16);

inline Category msg_category(const MsgHeader *m) { return Category((m->flags >> 2) & 3); }
inline uint32_t args_bytes(unsigned nargs) { return (4 * nargs + 7) & ~7u; }
inline int32_t *msg_args(MsgHeader *m) { return reinterpret_cast<int32_t *>(m + 1); }
inline uint8_t *msg_payload(MsgHeader *m) {
    return reinterpret_cast<uint8_t *>(m + 1) + args_bytes(m->nargs);
}

struct SegInfo {
    uint64_t base;
    uint64_t length;
    uint32_t handle;
    uint32_t valid; // 0: the endpoint has no segment
};

constexpr uint32_t kShortBuf = 128;  // header + 16 args + long offset, rounded
constexpr uint32_t kMediumBuf = ((sizeof(MsgHeader) + 4 * AMVIA_MAX_SHORT + AMVIA_MAX_MEDIUM) + 63) & ~63u;

struct Channel;
struct Link;

// One descriptor and its bookkeeping (the descriptor comes first: the
// VIP_DESCRIPTOR* VIPL hands back is the Slot*).
struct alignas(64) Slot {
    VIP_DESCRIPTOR desc;
    Channel *ch;
    MsgHeader *buf;
    int32_t regent;   // registration-cache entry pinned by an RDMA write, or -1
    uint8_t is_rdma;
};
static_assert(offsetof(Slot, desc) == 0);

struct Channel {
    VIP_VI_HANDLE vi = nullptr;
    Link *link = nullptr;
    amvia_eb *eb = nullptr;
    int index = 0;          // 0 (v3) or class (v1)
    uint32_t bufsize = 0;   // bytes per message buffer
    int credits = 0;        // request credits left
    int credits_max = 0;    // k
    int nsend = 0, nrecv = 0;
    Slot **free_send = nullptr; // stack of free send slots
    int nfree_send = 0;
    Slot *slots = nullptr;      // nsend send slots, then nrecv receive slots
    uint8_t *region = nullptr;  // registered: slots and buffers
    size_t region_len = 0;
    VIP_MEM_HANDLE mh = 0;
    bool connected = false;
};

enum class LinkState : uint8_t { Pending, Up, Dead };

struct Link {
    amvia_ep *ep = nullptr;
    en_t remote{};
    uint8_t side = 0;         // 0, or 1 for the accepting half of a self-map
    LinkState state = LinkState::Pending;
    int nch = 1;
    Channel ch[3];
    uint64_t connect_deadline_ns = 0;
    // The remote endpoint's segment, from its kSysSegInfo.
    bool seg_known = false;
    SegInfo seg{};
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
    int credits_k;
    amx_handler_fn_t handlers[AMVIA_MAX_NUMHANDLERS];
    std::vector<amvia::Translation> xlate;
    std::vector<amvia::Link *> links;
};

struct amvia_eb {
    uint32_t magic;
    int layout; // 1 or 3
    VIP_CQ_HANDLE scq, rcq;
    size_t cq_entries;   // capacity of each CQ
    size_t send_descs, recv_descs; // descriptors bound to them
    std::vector<ep_t> eps;
    int event_mask;
    long sends_outstanding;
    // Requests received where request handlers may not run (inside a handler):
    std::vector<amvia::Slot *> pending; // ring buffer sized to recv_descs
    size_t pending_head, pending_count;
    VIP_VI_HANDLE stash_vi; // a receive completion taken by VipCQWait
    std::vector<amvia::Link *> connecting;
};

namespace amvia {

constexpr uint32_t kEpMagic = 0xA3E9D001u;
constexpr uint32_t kEbMagic = 0xA3EB0B01u;

// Token handed to handlers (lives on the poller's stack).
struct Token {
    ep_t ep;
    Channel *ch;    // channel the message arrived on (null for local errors)
    MsgHeader *msg;
    en_t source;    // for local errors without a link
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
    int default_credits = 8;
    uint64_t connect_timeout_ms = 60000;
    uint32_t max_chunk = AMVIA_MAX_LONG; // bytes per RDMA write descriptor
    int handler_depth = 0;               // > 0 while a handler runs
    uint64_t nested_send_cycles = 0;     // instrumentation: sends made inside handlers
    std::vector<eb_t> bundles;
};
extern Globals g;

inline bool valid_ep(ep_t ep) { return ep && ep->magic == kEpMagic; }
inline bool valid_eb(eb_t eb) { return eb && eb->magic == kEbMagic; }

// Error-path diagnostics (never called on the hot path).
int fail(int rc, const char *fn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t now_ns();

// ---- links (am_link.cpp) ---------------------------------------------------------
Link *link_find_or_create(ep_t ep, const en_t &remote, int *rc);
void link_destroy(Link *l);
bool link_try_up(Link *l);           // polls the connection; true once Up
void link_fail(Link *l, const char *why);
void bundle_check_connecting(eb_t eb);
bool en_equal(const en_t &a, const en_t &b);

// ---- registration cache (am_regcache.cpp) ------------------------------------------
// Finds or makes a registration covering [addr, addr+len) and pins it once;
// returns the entry (release it with regcache_release), -2 for memory inside
// an endpoint segment (nothing to release), or -1 on failure.
int regcache_acquire(eb_t eb, const void *addr, size_t len, VIP_MEM_HANDLE *mh);
void regcache_pin(int entry);
void regcache_release(int entry);
void regcache_clear();

// ---- sending (am_send.cpp) ---------------------------------------------------------
int send_system_request(ep_t ep, Link *l, uint8_t sys, const int32_t *args, int nargs,
                        const void *payload, uint32_t nbytes);
int send_system_reply(Token *t, uint8_t sys, uint32_t nbytes_field);
void local_error(ep_t ep, int status, op_t opcode, handler_t h, const en_t *dest,
                 tag_t tag, int nargs, const int32_t *args);

// ---- polling (am_poll.cpp) -------------------------------------------------------------
// One pass over the bundle: stashed/queued work, receive CQ, one send completion.
// run_requests = false inside handlers: requests are queued, not run.
void poll_bundle(eb_t eb, bool run_requests);
void reap_sends(eb_t eb, int max);
void call_error_handler(ep_t ep, int status, op_t opcode, Token *t);
void repost_recv(Channel *c, Slot *s);
void pending_reserve(eb_t eb, size_t capacity);

// ---- SPMD barrier hooks (am_spmd.cpp) ------------------------------------------------
void spmd_barrier_message(int32_t epoch, int32_t what);
void spmd_forget(); // AM_Terminate ran: the SPMD bundle/endpoint are gone

} // namespace amvia
