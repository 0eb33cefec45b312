// rt_msg.cpp - the message layer of the Split-C runtime: building and posting
// send descriptors, reaping sends, polling the receive completion queue and
// dispatching requests and replies.  Every step is timed with the counters of
// Table 4 of Begel et al. (a Split-C get) when VIASTACK_INSTR=1.
#include <sched.h>

#include "rt_internal.hpp"

namespace splitc::rt {

VIPL_INSTR_DEFINE(c_post_send, "splitc.VipPostSend", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_send_done, "splitc.VipSendDone", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_recv_done, "splitc.VipRecvDone", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_post_recv, "splitc.VipPostRecv", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_recycle_send, "splitc.Recycle send descriptor", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_recycle_recv, "splitc.Recycle receive descriptor", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_build, "splitc.Build send descriptors", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_cq_recv, "splitc.VipCQDone (Receive)", VIPL_INSTR_EVENT);
VIPL_INSTR_DEFINE(c_cq_send, "splitc.VipCQDone (Send)", VIPL_INSTR_EVENT);
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
    report(SPLITC_ERR_NETWORK, "%s towards/from processor %d failed: descriptor status %s", what,
           peer, VipxStatusString(status, buf, sizeof buf));
    __builtin_unreachable();  // network errors are fatal
}

inline void retire_send(int rank, Peer &p, VIP_DESCRIPTOR *d) {
    VIPL_INSTR_BEGIN(t);
    uint8_t *expect = p.send_base + size_t(p.tail) * g.slot_stride;
    if (__builtin_expect(slot_of_desc(d) != expect, 0))
        report(SPLITC_ERR_NETWORK, "provider completed sends to processor %d out of order", rank);
    if (__builtin_expect(d->CS.Status & VIP_STATUS_ERROR_MASK, 0)) fatal_status("send", rank, d->CS.Status);
    if (++p.tail == g.nsend) p.tail = 0;
    --p.inflight;
    VIPL_INSTR_END(c_recycle_send, t);
}

int rank_of_vi(VIP_VI_HANDLE vi) {
    for (int r = 0; r < g.procs; ++r)
        if (g.peers[r].vi == vi) return r;
    report(SPLITC_ERR_NETWORK, "completion for an unknown VI %p", vi);
    __builtin_unreachable();
}

// Reaps completed sends without waiting; returns true if any towards `rank`.
bool reap_sends(int rank) {
    bool got = false;
    if (g.send_cq) {
        for (;;) {
            VIP_VI_HANDLE vi;
            VIP_BOOLEAN recvq;
            VIPL_INSTR_BEGIN(tc);
            VIP_RETURN rc = VipCQDone(g.send_cq, &vi, &recvq);
            if (rc == VIP_NOT_DONE) break;
            if (rc != VIP_SUCCESS) fatal_vip("VipCQDone(send)", rc);
            VIPL_INSTR_END(c_cq_send, tc);
            int r = rank_of_vi(vi);
            VIP_DESCRIPTOR *d;
            VIPL_INSTR_BEGIN(ts);
            rc = VipSendDone(vi, &d);
            if (rc != VIP_SUCCESS) fatal_vip("VipSendDone after a send CQ entry", rc);
            VIPL_INSTR_END(c_send_done, ts);
            retire_send(r, g.peers[r], d);
            got |= r == rank;
        }
        return got;
    }
    Peer &p = g.peers[rank];
    while (p.inflight) {
        VIP_DESCRIPTOR *d;
        VIPL_INSTR_BEGIN(ts);
        VIP_RETURN rc = VipSendDone(p.vi, &d);
        if (rc == VIP_NOT_DONE) break;
        if (rc != VIP_SUCCESS) fatal_vip("VipSendDone", rc);
        VIPL_INSTR_END(c_send_done, ts);
        retire_send(rank, p, d);
        got = true;
    }
    return got;
}

// Waits for a free send slot.  Never dispatches incoming messages (it can be
// called from dispatch, for a reply); it only steps the NIC, which drains the
// wire into receive descriptors that credits guarantee are posted.
void wait_send_slot(int rank) {
    Peer &p = g.peers[rank];
    uint32_t idle = 0;
    while (p.inflight == g.nsend) {
        if (reap_sends(rank)) break;
        VipxProgress(g.nic);
        if (++idle >= g.spin_limit) { idle = 0; sched_yield(); }
    }
}

// Builds the descriptor of send slot `head` towards rank and posts it.
// hdr (hdr_len bytes) is copied into the slot; the payload is gathered from
// registered memory (gather_ok) or copied after the header.
inline void post_message(int rank, Peer &p, const void *hdr, uint32_t hdr_len, const void *payload,
                         uint32_t len, bool gather_ok) {
    if (__builtin_expect(p.inflight == g.nsend, 0)) {
        reap_sends(rank);
        if (p.inflight == g.nsend) wait_send_slot(rank);
    }
    VIPL_INSTR_BEGIN(tb);
    uint8_t *slot = p.send_base + size_t(p.head) * g.slot_stride;
    VIP_DESCRIPTOR *d = slot_desc(slot);
    uint8_t *buf = slot_buf(slot);
    std::memcpy(buf, hdr, hdr_len);
    VIP_MEM_HANDLE mh;
    if (len >= kGatherMin && gather_ok && registered_handle(payload, len, &mh)) {
        d->CS.SegCount = 2;
        d->DS[0].Local.Length = hdr_len;
        d->DS[1].Local.Data.Address = const_cast<void *>(payload);
        d->DS[1].Local.Handle = mh;
        d->DS[1].Local.Length = len;
    } else {
        if (len) std::memcpy(buf + hdr_len, payload, len);
        d->CS.SegCount = 1;
        d->DS[0].Local.Length = hdr_len + len;
    }
    d->CS.Control = VIP_CONTROL_OP_SENDRECV;
    d->CS.Length = hdr_len + len;
    d->CS.Status = 0;
    VIPL_INSTR_END(c_build, tb);

    VIPL_INSTR_BEGIN(tp);
    VIP_RETURN rc = VipPostSend(p.vi, d, g.bufseg.mh);
    if (__builtin_expect(rc != VIP_SUCCESS, 0)) fatal_vip("VipPostSend", rc);
    VIPL_INSTR_END(c_post_send, tp);

    VIPL_INSTR_BEGIN(tk);
    if (++p.head == g.nsend) p.head = 0;
    ++p.inflight;
    VIPL_INSTR_END(c_bookkeep, tk);
}

// A reply hands back one credit for the request it answers plus the credits
// of replyless requests (stores, collectives) received since the last reply.
inline void send_reply(int rank, Peer &p, uint8_t type, uint64_t addr, const void *payload,
                       uint32_t len) {
    MsgHdr h;
    h.type = type;
    h.credits = uint8_t(1 + p.unacked);
    h.op = 0;
    h.len = len;
    h.addr = addr;
    p.unacked = 0;
    post_message(rank, p, &h, sizeof h, payload, len, true);
}

inline void count_replyless(int rank, Peer &p) {
    if (++p.unacked >= g.store_ack_every) {
        MsgHdr h{};
        h.type = kStoreAck;
        h.credits = uint8_t(p.unacked);
        p.unacked = 0;
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
    p.credits += h->credits;
    if (splitphase)
        --g.splitphase_pending;
    else
        --g.blocking_pending;
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
    case kCollUp:
    case kCollDown: {
        CollPayload v;
        std::memcpy(&v, data, sizeof v);
        if (h->type == kCollUp)
            on_coll_up(from, h->addr, h->op, v);
        else
            on_coll_down(h->addr, h->op, v);
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
    case kWriteAck:
        reply_arrived(p, h, h->type == kPutAck);
        break;
    case kStoreAck:
        p.credits += h->credits;
        break;
    default:
        report(SPLITC_ERR_NETWORK, "corrupt message (type %u) from processor %d", unsigned(h->type), from);
    }
}

}  // namespace

int poll(int max) {
    if (__builtin_expect(!g.net_up, 0)) return 0;  // a job of one has no network
    int n = 0;
    // Bounded so a flood of requests cannot keep the caller here forever.
    while (n < max) {
        VIP_VI_HANDLE vi = g.direct_vi;
        VIP_DESCRIPTOR *d;
        VIP_RETURN rc;
        if (vi) {
            VIPL_INSTR_BEGIN(tr);
            rc = VipRecvDone(vi, &d);
            if (rc == VIP_NOT_DONE) break;
            if (__builtin_expect(rc != VIP_SUCCESS, 0)) fatal_vip("VipRecvDone", rc);
            VIPL_INSTR_END(c_recv_done, tr);
        } else {
            VIP_BOOLEAN recvq;
            VIPL_INSTR_BEGIN(tc);
            rc = VipCQDone(g.recv_cq, &vi, &recvq);
            if (rc == VIP_NOT_DONE) break;
            if (__builtin_expect(rc != VIP_SUCCESS, 0)) fatal_vip("VipCQDone(recv)", rc);
            VIPL_INSTR_END(c_cq_recv, tc);
            VIPL_INSTR_BEGIN(tr);
            rc = VipRecvDone(vi, &d);
            if (__builtin_expect(rc != VIP_SUCCESS, 0)) fatal_vip("VipRecvDone after a CQ entry", rc);
            VIPL_INSTR_END(c_recv_done, tr);
        }

        uint8_t *slot = slot_of_desc(d);
        int from = int(slot_meta(slot)->peer);
        if (__builtin_expect(d->CS.Status & VIP_STATUS_ERROR_MASK, 0)) fatal_status("receive", from, d->CS.Status);
        dispatch(from, g.peers[from], slot_buf(slot), d->CS.Length);

        VIPL_INSTR_BEGIN(ty);
        d->CS.Status = 0;
        d->CS.Length = g.max_msg;
        d->CS.SegCount = 1;
        d->CS.Control = 0;
        d->DS[0].Local.Length = g.max_msg;
        VIPL_INSTR_END(c_recycle_recv, ty);
        VIPL_INSTR_BEGIN(tp);
        rc = VipPostRecv(vi, d, g.bufseg.mh);
        if (__builtin_expect(rc != VIP_SUCCESS, 0)) fatal_vip("VipPostRecv", rc);
        VIPL_INSTR_END(c_post_recv, tp);
        ++n;
    }
    return n;
}

// Spinning keeps a round trip at its minimum when the peer runs on another
// core; yielding is what lets a peer on the same core run at all.  Which case
// holds is learnt from the first message after a yield: if it is there at
// once, the peer needed our CPU (it shares our core), so spin less; if it
// takes a while, the peer runs elsewhere and was merely slow, so spin more.
void wait_step(uint32_t &idle) {
    // One message at a time: the caller's condition is rechecked as soon as
    // it may have changed, without a further (empty) VipCQDone.
    if (poll(1)) {
        idle = 0;
        if (g.yielded && g.spin_adaptive) {
            if (g.polls_since_yield <= 2)
                g.spin_limit = g.spin_limit / 2 > g.spin_min ? g.spin_limit / 2 : g.spin_min;
            else
                g.spin_limit = g.spin_limit * 2 < g.spin_max ? g.spin_limit * 2 : g.spin_max;
        }
        g.yielded = false;
        return;
    }
    ++g.polls_since_yield;
    if (++idle >= g.spin_limit) {
        idle = 0;
        sched_yield();
        g.yielded = true;
        g.polls_since_yield = 0;
    }
}

void send_request(int rank, uint8_t type, uint16_t op, uint64_t addr, const void *payload, uint32_t len,
                  uint64_t reply_to) {
    Peer &p = g.peers[rank];
    if (__builtin_expect(p.credits <= 0, 0)) {
        uint32_t idle = 0;
        while (p.credits <= 0) wait_step(idle);
    }
    VIPL_INSTR_BEGIN(tk);
    --p.credits;
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

void drain_sends(int rank) {
    Peer &p = g.peers[rank];
    uint32_t idle = 0;
    while (p.inflight) {
        if (reap_sends(rank)) continue;
        VipxProgress(g.nic);
        if (++idle >= g.spin_limit) { idle = 0; sched_yield(); }
    }
}

void drain_all_sends() {
    for (int r = 0; r < g.procs; ++r)
        if (r != g.me) drain_sends(r);
}

}  // namespace splitc::rt
