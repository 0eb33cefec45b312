// rt_msg.cpp - the message layer of the Split-C runtime: building and posting
// send descriptors, reaping sends, polling the receive completion queue and
// dispatching requests and replies.  Every step is timed with the counters of
// Table 4 of Begel et al. (a Split-C get) when VIASTACK_INSTR=1.
#include <sched.h>

#include "rt_internal.hpp"

namespace splitc::rt {

// The channel times the VIPL calls and the recycling steps on these (Table 4).
VIASTACK_CHANNEL_INSTR(kInstr, "splitc", true);
VIPL_INSTR_DEFINE(c_build, "splitc.Build send descriptors", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_bookkeep, "splitc.Send bookkeeping", VIPL_INSTR_FLOW_CONTROL);
// Split-C/VI dispatches in place instead of queueing; this counter times the
// step that replaces Table 4's "push msg on req/rep queue": receive-side
// demultiplexing and credit accounting.
VIPL_INSTR_DEFINE(c_demux, "splitc.Push msg on req/rep queue", VIPL_INSTR_FLOW_CONTROL);
VIPL_INSTR_DEFINE(c_read_data, "splitc.Read data from message", VIPL_INSTR_SEMANTICS);
VIPL_INSTR_DEFINE(c_act, "splitc.Act on message", VIPL_INSTR_SEMANTICS);

namespace {

// Payloads at least this long go out as a second gather segment straight from
// registered memory; shorter ones are cheaper to copy into the message.
constexpr uint32_t kGatherMin = 128;

[[gnu::cold, noreturn]] void fatal_status(const char *what, int peer, VIP_UINT32 status) {
    char buf[160];
    report(SPLITC_ERR_NETWORK, "%s towards/from processor %d failed: descriptor status %s", what, peer,
           VipxStatusString(status, buf, sizeof buf));
    __builtin_unreachable(); // network errors are fatal
}

// Puts a completed send towards `rank` back on its channel's free list.
inline void retire_send(int rank, Peer &p, VIP_DESCRIPTOR *d) {
    p.recycle_send(chan::slot_of(d), kInstr, [rank](Slot *s) {
        if (__builtin_expect(s->desc.CS.Status & VIP_STATUS_ERROR_MASK, 0))
            fatal_status(s->rdma > 1 ? "RDMA read" : "send", rank, s->desc.CS.Status);
        // A bulk RDMA descriptor (rt_bulk.cpp): its pin, the get it carried.
        if (__builtin_expect(s->pin >= 0 || s->rdma > 1, 0)) rdma_retired(s);
    });
}

int rank_of_vi(VIP_VI_HANDLE vi) {
    for (int r = 0; r < g.procs; ++r)
        if (g.peers[r].vi() == vi) return r;
    report(SPLITC_ERR_NETWORK, "completion for an unknown VI %p", vi);
    __builtin_unreachable();
}

// Reaps completed sends without waiting; returns true if any towards `rank`
// (with a send CQ, rank -1: any).
bool reap_sends(int rank) {
    bool got = false;
    VIP_DESCRIPTOR *d;
    if (g.send_cq) {
        for (;;) {
            VIP_VI_HANDLE vi;
            VIP_RETURN rc = chan::Channel::cq_done(g.send_cq, &vi, kInstr.cq_send);
            if (rc == VIP_NOT_DONE) break;
            if (rc != VIP_SUCCESS) fatal_vip("VipCQDone(send)", rc);
            int r = rank_of_vi(vi);
            rc = chan::Channel::send_done(vi, &d, kInstr);
            if (rc != VIP_SUCCESS) fatal_vip("VipSendDone after a send CQ entry", rc);
            retire_send(r, g.peers[r], d);
            got |= r == rank || rank < 0;
        }
        return got;
    }
    Peer &p = g.peers[rank];
    while (p.in_flight()) {
        VIP_RETURN rc = chan::Channel::send_done(p.vi(), &d, kInstr);
        if (rc == VIP_NOT_DONE) break;
        if (rc != VIP_SUCCESS) fatal_vip("VipSendDone", rc);
        retire_send(rank, p, d);
        got = true;
    }
    return got;
}

} // namespace

bool reap_all_sends() {
    if (!g.net_up) return false;
    if (g.send_cq) return reap_sends(-1); // the CQ names every peer
    bool got = false;
    for (int r = 0; r < g.procs; ++r)
        if (r != g.me) got |= reap_sends(r);
    return got;
}

namespace {

// Waits for a free send slot.  Never dispatches incoming messages (it can be
// called from dispatch, for a reply); it only steps the NIC, which drains the
// wire into receive descriptors that credits guarantee are posted.
void wait_send_slot(int rank) {
    Peer &p = g.peers[rank];
    while (!p.has_free_send()) {
        if (reap_sends(rank)) break;
        VipxProgress(g.nic);
        vipl_wait::idle_yield(g.wait);
    }
}

// Takes a send slot towards rank, builds its descriptor and posts it.
// hdr (hdr_len bytes) is copied into the slot; the payload is gathered from
// registered memory (gather_ok) or copied after the header.
inline void post_message(int rank, Peer &p, const void *hdr, uint32_t hdr_len, const void *payload, uint32_t len,
                         bool gather_ok) {
    if (__builtin_expect(!p.has_free_send(), 0)) {
        reap_sends(rank);
        if (!p.has_free_send()) wait_send_slot(rank);
    }
    VIPL_INSTR_BEGIN(tk);
    Slot *s = p.take_send();
    VIPL_INSTR_END(c_bookkeep, tk);

    VIPL_INSTR_BEGIN(tb);
    std::memcpy(s->buf, hdr, hdr_len);
    VIP_MEM_HANDLE mh;
    if (len >= kGatherMin && gather_ok && registered_handle(payload, len, &mh)) {
        chan::Channel::set_gather(s, hdr_len, payload, mh, len);
    } else {
        if (len) std::memcpy(s->buf + hdr_len, payload, len);
        chan::Channel::set_message(s, hdr_len + len);
    }
    VIPL_INSTR_END(c_build, tb);

    VIP_RETURN rc = p.post_send(s, kInstr);
    if (__builtin_expect(rc != VIP_SUCCESS, 0)) fatal_vip("VipPostSend", rc);
}

// A reply hands back one credit for the request it answers plus the credits
// of replyless requests (stores, collectives) received since the last reply.
inline void send_reply(int rank, Peer &p, uint8_t type, uint64_t addr, const void *payload, uint32_t len) {
    MsgHdr h;
    h.type = type;
    h.credits = uint8_t(1 + p.take_owed());
    h.op = 0;
    h.len = len;
    h.addr = addr;
    post_message(rank, p, &h, sizeof h, payload, len, true);
}

inline void count_replyless(int rank, Peer &p) {
    if (p.owe_one(g.store_ack_every)) {
        MsgHdr h{};
        h.type = kStoreAck;
        h.credits = uint8_t(p.take_owed());
        post_message(rank, p, &h, sizeof h, nullptr, 0, false);
    }
}

[[gnu::cold]] void bad_request(int from, const MsgHdr *h) {
    report(SPLITC_ERR_NETWORK,
           "processor %d sent a request (type %u) for %u bytes at %#llx, outside this processor's "
           "symmetric heap and static data; the initiator's checks were bypassed",
           from, unsigned(h->type), unsigned(h->len), (unsigned long long)h->addr);
}

// A reply (data or acknowledgement) returns its credits and retires one
// outstanding split-phase (get/put) or blocking (read/write) operation.
static inline void reply_arrived(Peer &p, const MsgHdr *h, bool splitphase) {
    VIPL_INSTR_BEGIN(tq);
    p.return_credits(h->credits);
    if (splitphase) --g.splitphase_pending;
    else --g.blocking_pending;
    VIPL_INSTR_END(c_demux, tq);
}

inline void dispatch(int from, Peer &p, const uint8_t *msg, uint32_t msglen) {
    const MsgHdr *h = reinterpret_cast<const MsgHdr *>(msg);
    const uint8_t *data = msg + sizeof(MsgHdr);
    if (__builtin_expect(msglen < sizeof(MsgHdr), 0))
        report(SPLITC_ERR_NETWORK, "runt message (%u bytes) from processor %d", msglen, from);
    switch (h->type) {
    case kGetReq:
    case kReadReq: {
        const GetReqMsg *r = reinterpret_cast<const GetReqMsg *>(msg);
        VIPL_INSTR_BEGIN(ta);
        bool ok = remote_addressable(h->addr, h->len) && h->len <= g.max_payload;
        VIPL_INSTR_END(c_act, ta);
        if (__builtin_expect(!ok, 0)) bad_request(from, h);
        // The reply's build/post are timed by their own counters.
        send_reply(from, p, h->type == kGetReq ? kGetRep : kReadRep, r->reply_to,
                   reinterpret_cast<const void *>(h->addr), h->len);
        break;
    }
    case kPutReq:
    case kWriteReq: {
        VIPL_INSTR_BEGIN(ta);
        bool ok = remote_addressable(h->addr, h->len) && msglen >= sizeof(MsgHdr) + h->len;
        VIPL_INSTR_END(c_act, ta);
        if (__builtin_expect(!ok, 0)) bad_request(from, h);
        VIPL_INSTR_BEGIN(tr);
        std::memcpy(reinterpret_cast<void *>(h->addr), data, h->len);
        VIPL_INSTR_END(c_read_data, tr);
        send_reply(from, p, h->type == kPutReq ? kPutAck : kWriteAck, 0, nullptr, 0);
        break;
    }
    case kStoreReq: {
        VIPL_INSTR_BEGIN(ta);
        bool ok = remote_addressable(h->addr, h->len) && msglen >= sizeof(MsgHdr) + h->len;
        VIPL_INSTR_END(c_act, ta);
        if (__builtin_expect(!ok, 0)) bad_request(from, h);
        VIPL_INSTR_BEGIN(tr);
        std::memcpy(reinterpret_cast<void *>(h->addr), data, h->len);
        VIPL_INSTR_END(c_read_data, tr);
        VIPL_INSTR_BEGIN(tq);
        g.store_recv += h->len;
        g.store_avail += h->len;
        VIPL_INSTR_END(c_demux, tq);
        count_replyless(from, p);
        break;
    }
    case kStoreRdma: {
        // The bytes were RDMA-written before this notice (VIs deliver in order).
        VIPL_INSTR_BEGIN(ta);
        bool ok = remote_addressable(h->addr, h->len);
        VIPL_INSTR_END(c_act, ta);
        if (__builtin_expect(!ok, 0)) bad_request(from, h);
        g.store_recv += h->len;
        g.store_avail += h->len;
        count_replyless(from, p);
        break;
    }
    case kCollUp:
    case kCollDown: {
        CollPayload v;
        std::memcpy(&v, data, sizeof v);
        if (h->type == kCollUp) on_coll_up(from, h->addr, h->op, v);
        else on_coll_down(h->addr, h->op, v);
        count_replyless(from, p);
        break;
    }
    case kGetRep:
    case kReadRep: {
        VIPL_INSTR_BEGIN(tr);
        std::memcpy(reinterpret_cast<void *>(h->addr), data, h->len);
        VIPL_INSTR_END(c_read_data, tr);
        reply_arrived(p, h, h->type == kGetRep);
        break;
    }
    case kPutAck:
    case kWriteAck: reply_arrived(p, h, h->type == kPutAck); break;
    case kStoreAck: p.return_credits(h->credits); break;
    default: report(SPLITC_ERR_NETWORK, "corrupt message (type %u) from processor %d", unsigned(h->type), from);
    }
}

} // namespace

namespace {

// Serves one received message: dispatch, then the receive goes back to the NIC.
inline void serve(VIP_DESCRIPTOR *d) {
    Slot *s = chan::slot_of(d);
    Peer &p = peer_of(s);
    if (__builtin_expect(d->CS.Status & VIP_STATUS_ERROR_MASK, 0)) fatal_status("receive", p.rank, d->CS.Status);
    dispatch(p.rank, p, s->buf, d->CS.Length);
    VIP_RETURN rc = p.repost_recv(s, kInstr);
    if (__builtin_expect(rc != VIP_SUCCESS, 0)) fatal_vip("VipPostRecv", rc);
}

} // namespace

int poll(int max) {
    if (__builtin_expect(!g.net_up, 0)) return 0; // a job of one has no network
    int n = 0;
    // Bounded so a flood of requests cannot keep the caller here forever.
    while (n < max) {
        VIP_VI_HANDLE vi = g.direct_vi;
        VIP_DESCRIPTOR *d;
        VIP_RETURN rc;
        if (vi) {
            rc = chan::Channel::recv_done(vi, &d, kInstr);
            if (rc == VIP_NOT_DONE) break;
            if (__builtin_expect(rc != VIP_SUCCESS, 0)) fatal_vip("VipRecvDone", rc);
        } else {
            if (__builtin_expect(g.stash_vi != nullptr, 0)) { // taken by VipCQWait (block mode)
                vi = g.stash_vi;
                g.stash_vi = nullptr;
            } else {
                rc = chan::Channel::cq_done(g.recv_cq, &vi, kInstr.cq_recv);
                if (rc == VIP_NOT_DONE) break;
                if (__builtin_expect(rc != VIP_SUCCESS, 0)) fatal_vip("VipCQDone(recv)", rc);
            }
            rc = chan::Channel::recv_done(vi, &d, kInstr);
            if (__builtin_expect(rc != VIP_SUCCESS, 0)) fatal_vip("VipRecvDone after a CQ entry", rc);
        }
        serve(d);
        ++n;
    }
    return n;
}

// The waiting policy is vipl_wait.h's (VIASTACK_WAIT), as for AM: spin a
// window of idle polls that adapts to whether the peer shares our core, then
// sched_yield, or in block mode sleep in VipRecvWait / VipCQWait (1 ms at a
// time, so the caller's condition is rechecked).
void wait_step() {
    // One message at a time: the caller's condition is rechecked as soon as
    // it may have changed, without a further (empty) VipCQDone.
    if (poll(1) || (g.rdma_reads && reap_all_sends())) {
        vipl_wait::progress(g.wait);
        return;
    }
    if (!vipl_wait::idle(g.wait)) return;
    vipl_wait::give_up_cpu(g.wait, [] {
        // An RDMA read completes on the send queue: no receive would wake a block-mode wait.
        if (g.wait.mode == vipl_wait::Mode::block && g.net_up && !g.rdma_reads) {
            if (g.direct_vi) {
                VIP_DESCRIPTOR *d;
                if (VipRecvWait(g.direct_vi, 1, &d) == VIP_SUCCESS) serve(d);
            } else {
                VIP_VI_HANDLE vi;
                VIP_BOOLEAN is_recv;
                if (VipCQWait(g.recv_cq, 1, &vi, &is_recv) == VIP_SUCCESS) g.stash_vi = vi;
            }
        } else {
            sched_yield();
        }
    });
}

void send_request(int rank, uint8_t type, uint16_t op, uint64_t addr, const void *payload, uint32_t len,
                  uint64_t reply_to) {
    Peer &p = g.peers[rank];
    if (__builtin_expect(!p.has_credit(), 0)) {
        while (!p.has_credit()) wait_step();
    }
    VIPL_INSTR_BEGIN(tk);
    p.take_credit();
    VIPL_INSTR_END(c_bookkeep, tk);
    if (type == kGetReq || type == kReadReq) {
        GetReqMsg m;
        m.h.type = type;
        m.h.credits = 0;
        m.h.op = op;
        m.h.len = len;
        m.h.addr = addr;
        m.reply_to = reply_to;
        post_message(rank, p, &m, sizeof m, nullptr, 0, false);
    } else {
        MsgHdr h;
        h.type = type;
        h.credits = 0;
        h.op = op;
        h.len = len;
        h.addr = addr;
        post_message(rank, p, &h, sizeof h, payload, len, true);
    }
}

void send_notice(int rank, uint8_t type, uint64_t addr, uint32_t len) {
    Peer &p = g.peers[size_t(rank)];
    while (!p.has_credit()) wait_step();
    p.take_credit();
    MsgHdr h;
    h.type = type;
    h.credits = 0;
    h.op = 0;
    h.len = len;
    h.addr = addr;
    post_message(rank, p, &h, sizeof h, nullptr, 0, false);
}

Slot *take_send_slot(int rank) {
    Peer &p = g.peers[size_t(rank)];
    if (!p.has_free_send()) {
        reap_sends(rank);
        if (!p.has_free_send()) wait_send_slot(rank);
    }
    return p.take_send();
}

void post_built(Peer &p, Slot *s) {
    VIP_RETURN rc = p.post_send(s, kInstr);
    if (__builtin_expect(rc != VIP_SUCCESS, 0)) fatal_vip("VipPostSend", rc);
}

void drain_sends(int rank) {
    Peer &p = g.peers[rank];
    while (p.in_flight()) {
        if (reap_sends(rank)) continue;
        VipxProgress(g.nic);
        vipl_wait::idle_yield(g.wait);
    }
}

void drain_all_sends() {
    for (int r = 0; r < g.procs; ++r)
        if (r != g.me) drain_sends(r);
}

} // namespace splitc::rt
