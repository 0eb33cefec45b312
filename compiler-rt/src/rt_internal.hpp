// rt_internal.hpp - the Split-C runtime core over VIPL: state, message layout,
// and the inline helpers shared by the runtime's translation units.
//
// Protocol (Begel et al., section 6): one VI per peer, credit-based request/reply.
// A request costs one of k credits at the sender; a reply gives credits back.
// get/read: request, the reply carries the data.  put/write: the request
// carries the data, the reply acknowledges.  store (and the runtime's own
// collective messages): no reply; the target returns their credits in one
// STORE_ACK every k/2 of them, or piggy-backed on any other reply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "splitc_rt.h"
#include "viastack/channel.hpp"
#include "vipl.h"
#include "vipl_instr.h"
#include "vipl_wait.h"

namespace splitc::rt {

// Message types.  The set is fixed (only the runtime builds messages), so
// dispatch is one switch, never an indirect call.
enum MsgType : uint8_t {
    // requests (cost one credit)
    kGetReq = 1, // GetReqMsg; reply kGetRep
    kReadReq,    // GetReqMsg; reply kReadRep
    kPutReq,     // MsgHdr + data; reply kPutAck
    kWriteReq,   // MsgHdr + data; reply kWriteAck
    kStoreReq,   // MsgHdr + data; no reply (counted)
    kCollUp,     // MsgHdr + CollPayload; no reply (counted)
    kCollDown,   // MsgHdr + CollPayload; no reply (counted)
    kStoreRdma,  // MsgHdr, no data: len bytes at addr were RDMA-written before it
                 // (a bulk store); no reply (counted)
    // replies (free: their buffer was reserved by the request's credit)
    kGetRep = 16, // MsgHdr + data, addr = initiator's destination
    kReadRep,
    kPutAck,
    kWriteAck,
    kStoreAck, // credits only
};

// 16 bytes (AM's header is larger; Begel et al. note Split-C saves 24 bytes).
struct MsgHdr {
    uint8_t type;
    uint8_t credits; // replies: credits handed back to the receiver
    uint16_t op;     // collectives: reduction op
    uint32_t len;    // payload bytes (get requests: bytes wanted)
    uint64_t addr;   // request: target address; reply: initiator's destination;
                     // collectives: sequence number
};
static_assert(sizeof(MsgHdr) == 16, "compact header");

struct GetReqMsg {
    MsgHdr h;
    uint64_t reply_to; // initiator's local destination
};
static_assert(sizeof(GetReqMsg) == 24, "get request is 24 bytes");

// Collective contribution: three values so all_store_sync can sum (bytes
// stored, bytes received) and all_spread_malloc can check its arguments in one
// round.  Doubles travel bit-cast in the same fields.
struct CollPayload {
    int64_t a;
    int64_t b;
    int64_t c;
};

// A collective's op word: how to combine (low byte), whether each processor
// gets its own inclusive prefix (kScan), and the caller's value type (bits
// 12..15, 0 for the runtime's own rounds).  Processors compare whole words,
// so an int sum on one processor against a double sum on another is reported.
enum CollOp : uint16_t {
    kOpNone,
    kOpAddL,
    kOpMaxL,
    kOpMinL,
    kOpAddD,
    kOpMaxD,
    kOpMinD, // kOpNone: processor 0's value
    kOpMulL,
    kOpMaxUL,
    kOpMinUL,
    kOpAnd,
    kOpOr,
    kOpXor,
    kOpMulD,
    kOpAddF,
    kOpMulF,
    kOpMaxF,
    kOpMinF,
    kOpCount
};
constexpr uint16_t kOpMask = 0xff;
constexpr uint16_t kScan = 0x100;
constexpr int kTypeShift = 12;
enum CollType : uint16_t { kTypeRuntime, kTypeI, kTypeL, kTypeU, kTypeUL, kTypeF, kTypeD, kTypeP, kTypeGptr };

namespace chan = viastack::channel;
using chan::Slot;

// The channel to one peer (channel/: slots, credits, reaping, recycling).
// Send slots are sized 2k + 2: k requests, k replies, and the store
// acknowledgements, which go out without a credit.
struct Peer : chan::Channel {
    int rank = -1;
    // The peer's registrations of the symmetric heap and the static data, for
    // RDMA straight into or out of them (bulk transfers, rt_bulk.cpp).
    VIP_MEM_HANDLE heap_mh = 0;
    VIP_MEM_HANDLE statics_mh = 0;
    // RDMA-written bulk puts towards this peer not yet confirmed (rt_bulk.cpp,
    // confirm_puts): the address of the last one, which the confirming
    // request names; 0 when none is outstanding.
    uint64_t unconfirmed_put = 0;
};
// Slot::rdma of a send slot posted as an RDMA read: its completion retires a
// split-phase get or a blocking read (1 is a plain gather or RDMA write).
enum : uint8_t { kSlotRdmaReadSplit = 2, kSlotRdmaReadBlocking = 3 };
constexpr uint32_t kExtraSendSlots = 2;

inline Peer &peer_of(Slot *s) { return *static_cast<Peer *>(s->ch); }

struct Segment {
    uintptr_t lo = 0, hi = 0;
    VIP_MEM_HANDLE mh = 0;
    bool contains(uintptr_t a, size_t n) const { return a >= lo && a <= hi && n <= hi - a; }
};

struct CollState {
    uint64_t seq = 0;                 // collectives completed on this processor
    uint32_t arrivals[2] = {0, 0};    // root: contributions seen per parity
    std::vector<CollPayload> vals[2]; // root: contribution of each processor
    std::vector<uint16_t> ops[2];     // root: the operation each one asked for
    uint16_t down_op[2] = {0, 0};     // non-root: the operation the root ran
    bool down[2] = {false, false};    // non-root: result arrived
    CollPayload result[2] = {};
};

struct Runtime {
    bool initialized = false;
    int procs = 1, me = 0;
    // Processors a global pointer may name right now: PROCS while the runtime
    // is up, 1 before splitc_init (a job of one) and after splitc_finalize.
    unsigned live_procs = 1;

    VIP_NIC_HANDLE nic = nullptr;
    VIP_NIC_ATTRIBUTES nic_attr{}; // the NIC's limits (open_nic), checked once by the VIs' set-up
    VIP_PROTECTION_HANDLE ptag = nullptr;
    VIP_CQ_HANDLE recv_cq = nullptr; // null when polling the only peer's VI directly
    bool net_up = false;             // VIs connected (a job of one has none)
    // With a single peer, its VI's receive queue is polled with VipRecvDone
    // alone: the CQ would only add a VipCQDone per message to say which VI
    // (SPLITC_RECV_CQ=1 keeps the CQ, as in the paper).
    VIP_VI_HANDLE direct_vi = nullptr;
    VIP_CQ_HANDLE send_cq = nullptr; // only with SPLITC_SEND_CQ=1

    uint32_t credits = 32;         // k (SPLITC_CREDITS; rt_init.cpp, choose_credits)
    uint32_t store_ack_every = 16; // k/2 (chan::Channel::credit_batch)
    uint32_t max_msg = 4096;       // header + payload
    uint32_t max_payload = 4096 - sizeof(MsgHdr);
    // Bulk transfers of at least rdma_min bytes go as RDMA writes/reads
    // straight between the two processes' memory (SPLITC_RDMA_MIN; 0: never),
    // in pieces of at most rdma_chunk bytes (the NIC's MaxTransferSize).
    uint32_t rdma_min = 4096;
    uint32_t rdma_chunk = 0;
    uint64_t rdma_reads = 0;           // RDMA read descriptors not yet reaped
    uint32_t unconfirmed_peers = 0;    // peers with an unconfirmed RDMA put (Peer::unconfirmed_put)
    chan::Layout layout;               // slots and buffers per peer
    chan::Region slots;                // every peer's slots, registered once
    Segment heap;                      // symmetric heap
    VIP_NIC_HANDLE heap_nic = nullptr; // the heap is VipxAllocMemAt memory of this NIC (else plain mmap)
    Segment statics;                   // .data/.bss when at one address everywhere

    std::vector<Peer> peers; // by rank; peers[me].vi stays null

    // completion counts
    uint64_t splitphase_pending = 0; // gets/puts awaiting their reply
    uint64_t blocking_pending = 0;   // reads/writes awaiting their reply
    int64_t store_sent = 0;          // bytes this processor stored (anywhere)
    int64_t store_recv = 0;          // bytes stored into this processor
    int64_t store_avail = 0;         // store_recv not yet consumed by store_sync

    bool check_collectives = false;  // SPLITC_CHECK_COLLECTIVES=1: scope allocations agree-check
    bool heap_size_explicit = false; // SPLITC_HEAP_SIZE was set

    CollState coll;
    // Waiting (VIASTACK_WAIT, vipl_wait.h): idle polls before giving the CPU
    // away, adapted unless SPLITC_SPIN fixes the window.
    vipl_wait::WaitState wait;
    // A receive completion VipCQWait took in block mode (poll serves it first).
    VIP_VI_HANDLE stash_vi = nullptr;
};

extern Runtime g;

// ---- errors ------------------------------------------------------------------
// Reports through the installed handler; returns if the handler returns
// (fatal codes never return).
[[gnu::cold]] void report(splitc_error_t code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
[[gnu::cold, noreturn]] void fatal_vip(const char *what, VIP_RETURN rc);

// Handle of the registered region holding [p, p+n) for a gather segment, or
// false when the memory is not registered (the caller then copies).
inline bool registered_handle(const void *p, size_t n, VIP_MEM_HANDLE *mh) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (g.heap.contains(a, n)) {
        *mh = g.heap.mh;
        return true;
    }
    if (g.statics.contains(a, n)) {
        *mh = g.statics.mh;
        return true;
    }
    return false;
}
inline bool remote_addressable(uintptr_t a, size_t n) { return g.heap.contains(a, n) || g.statics.contains(a, n); }

// ---- messaging (rt_msg.cpp) ------------------------------------------------------
// Serves up to max messages waiting in the receive CQ; returns how many.
int poll(int max = 64);
// One step of a wait loop: poll, and after the wait window of idle polls give
// the CPU away (VIASTACK_WAIT: sched_yield, or sleep in a VIPL wait in block mode).
void wait_step();

// A request towards peer p (not me): waits for a credit and a send slot.
// payload (may be null) is sent from registered memory without a copy when
// possible, else copied into the message.
void send_request(int p, uint8_t type, uint16_t op, uint64_t addr, const void *payload, uint32_t len,
                  uint64_t reply_to);
// A request of a header only whose len field is `len` (no payload): the
// notice after a bulk transfer's RDMA writes.
void send_notice(int p, uint8_t type, uint64_t addr, uint32_t len);
// Waits until every send posted so far towards p has completed (source
// buffers reusable).
void drain_sends(int p);
void drain_all_sends();
// Reaps completed sends towards every peer without waiting; true if any.
bool reap_all_sends();
// Takes a send slot towards p, waiting for one (never dispatches: callable
// anywhere).  The caller builds and posts its descriptor.
Slot *take_send_slot(int p);
void post_built(Peer &p, Slot *s);

// ---- bulk transfers by RDMA (rt_bulk.cpp) ------------------------------------------------
// Exchanges the heap/static-data handles (collective, at start-up).
bool bulk_setup();
void bulk_shutdown();
// Whether an n-byte bulk transfer to or from `proc` goes by RDMA.
inline bool bulk_by_rdma(size_t n) { return g.rdma_min && n >= g.rdma_min && g.rdma_chunk; }
// RDMA-write [src, src+n) to addr on proc (posted; the caller then sends the
// notice that follows the data).  RDMA-read addr on proc into dst, each piece
// counted in *pending until its descriptor is reaped.
// Both return false, having posted nothing, when the local buffer cannot be
// registered (the caller then takes the message path).
bool rdma_write(int proc, uint64_t addr, const void *src, size_t n);
bool rdma_read(int proc, void *dst, uint64_t addr, size_t n, bool split_phase);
// A bulk put's RDMA writes to addr on proc are posted: sync must confirm them.
inline void put_unconfirmed(int proc, uint64_t addr) {
    Peer &p = g.peers[size_t(proc)];
    if (!p.unconfirmed_put) ++g.unconfirmed_peers;
    p.unconfirmed_put = addr;
}
// Sends one acknowledged request behind the RDMA puts of every peer that has
// unconfirmed ones (each counted as an outstanding split-phase operation, so
// the caller's wait for splitphase_pending covers them).
void confirm_puts();
// A reaped RDMA read or write: releases its cached registration, and retires
// the get or read it carried.
void rdma_retired(Slot *s);

// ---- collectives (rt_coll.cpp) ------------------------------------------------------
// Handlers called from dispatch.
void on_coll_up(int from, uint64_t seq, uint16_t op, const CollPayload &v);
void on_coll_down(uint64_t seq, uint16_t op, const CollPayload &v);
CollPayload all_reduce(uint16_t op, CollPayload mine);

// ---- set-up pieces (rt_init.cpp, rt_alloc.cpp) ----------------------------------------
// Collective: same address everywhere.  quiet: return false without
// reporting (the caller retries smaller).
bool heap_map(size_t bytes, bool quiet);
void heap_unmap();
void heap_allocator_reset(uintptr_t lo, uintptr_t hi);
void place_static_objects(); // after heap_map

} // namespace splitc::rt
