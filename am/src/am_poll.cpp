// am_poll.cpp - AM_Poll and everything a received message goes through:
// receive-CQ check, VipRecvDone, credit return, handler dispatch (replies at
// once, requests only where request handlers may run), the layer's own reply
// when a request handler did not reply, and recycling the receive descriptor
// after the handler returns (medium handlers read the receive buffer in place).
// Also send-descriptor recycling, AM_WaitSema and the token queries.
#include <sched.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <utility>

#include "am_internal.hpp"

// VipCQDone, VipRecvDone, VipSendDone, VipPostRecv and the two recycling steps
// are timed by the channel (kInstr in am_internal.hpp).
VIPL_INSTR_DEFINE(c_process, "am.Process received message", VIPL_INSTR_FLOW_CONTROL);
VIPL_INSTR_DEFINE(c_read, "am.Read data from message", VIPL_INSTR_SEMANTICS);
VIPL_INSTR_DEFINE(c_act, "am.Act on message", VIPL_INSTR_SEMANTICS);

namespace amvia {

// ---- handler calls with 0..16 int32 arguments -----------------------------------
template <size_t>
using Arg = int32_t;

using ShortCall = void (*)(amx_handler_fn_t, void *, const int32_t *);
using BulkCall = void (*)(amx_handler_fn_t, void *, void *, size_t, const int32_t *);

template <size_t... I>
static void call_short(amx_handler_fn_t f, void *tok, const int32_t *a) {
    reinterpret_cast<void (*)(void *, Arg<I>...)>(f)(tok, a[I]...);
}
template <size_t... I>
static void call_bulk(amx_handler_fn_t f, void *tok, void *buf, size_t n, const int32_t *a) {
    reinterpret_cast<void (*)(void *, void *, size_t, Arg<I>...)>(f)(tok, buf, n, a[I]...);
}
template <size_t N>
static void call_short_n(amx_handler_fn_t f, void *tok, const int32_t *a) {
    [&]<size_t... I>(std::index_sequence<I...>) { call_short<I...>(f, tok, a); }
    (std::make_index_sequence<N>{});
}
template <size_t N>
static void call_bulk_n(amx_handler_fn_t f, void *tok, void *buf, size_t n, const int32_t *a) {
    [&]<size_t... I>(std::index_sequence<I...>) { call_bulk<I...>(f, tok, buf, n, a); }
    (std::make_index_sequence<N>{});
}
template <size_t... N>
static constexpr std::array<ShortCall, sizeof...(N)> short_table(std::index_sequence<N...>) {
    return {&call_short_n<N>...};
}
template <size_t... N>
static constexpr std::array<BulkCall, sizeof...(N)> bulk_table(std::index_sequence<N...>) {
    return {&call_bulk_n<N>...};
}
static constexpr auto kShortCalls = short_table(std::make_index_sequence<AMVIA_MAX_SHORT + 1>{});
static constexpr auto kBulkCalls = bulk_table(std::make_index_sequence<AMVIA_MAX_SHORT + 1>{});

void call_error_handler(ep_t ep, int status, op_t opcode, Token *t) {
    ep->stats.ReturnedMessages++;
    void *const outer = ts.live_token;
    ts.live_token = t;
    ts.handler_depth++;
    reinterpret_cast<void (*)(int, op_t, void *)>(ep->handlers[0])(status, opcode, t);
    ts.handler_depth--;
    ts.live_token = outer;
}

// Runs a user handler for message m (already checked); returns nothing.
template <bool Timed>
static inline void dispatch(amx_handler_fn_t fn, Token *t, MsgHeader *m, void *buf) {
#if VIASTACK_INSTR_COMPILED
    // th: the scope the host-CPU model stretches (vipl_instr.h; a reply sent
    // from the handler is nested scopes of its own); t0: the count, less the reply.
    uint64_t t0 = 0, nested0 = 0, th = 0;
    if (Timed && __builtin_expect(vipl_instr_timing, 0)) {
        th = vipl_instr_begin_();
        if (vipl_instr_enabled()) {
            nested0 = ts.nested_send_cycles;
            t0 = vipl_instr_now();
        }
    }
#endif
    void *const outer = ts.live_token;
    ts.live_token = t;
    ts.handler_depth++;
    const ep_t ep = t->ep;
    if (AMVIA_UNLIKELY(ep->pre_handler != nullptr))
        ep->pre_handler(amvia_category_t(msg_category(m)), t->is_request, m->handler, t,
                        msg_category(m) == kShort ? nullptr : buf, msg_category(m) == kShort ? 0 : m->nbytes, m->nargs,
                        reinterpret_cast<uint32_t *>(msg_args(m)));
    if (msg_category(m) == kShort) kShortCalls[m->nargs](fn, t, msg_args(m));
    else kBulkCalls[m->nargs](fn, t, buf, m->nbytes, msg_args(m));
    if (AMVIA_UNLIKELY(ep->post_handler != nullptr)) ep->post_handler(amvia_category_t(msg_category(m)), t->is_request);
    ts.handler_depth--;
    ts.live_token = outer;
#if VIASTACK_INSTR_COMPILED
    // "Act on message" is the handler's own work: its reply is counted by the send counters.
    if (Timed && __builtin_expect(vipl_instr_timing, 0)) {
        vipl_instr_end_(&c_act, th, 0, VIPL_SCOPE_LAYER);
        if (vipl_instr_enabled() && t0)
            vipl_instr_add(&c_act, vipl_instr_now() - t0 - (ts.nested_send_cycles - nested0));
    }
#endif
}

// Where a medium/long handler's data is; sets *status for a refused message.
// Long messages are judged against this endpoint's current segment (the
// sender's copy may have been stale): offset and length, and whether the data
// was written with the current segment's generation at all.
static inline void *message_data(ep_t ep, Channel *c, MsgHeader *m, int *status) {
    Category cat = msg_category(m);
    if (cat == kMedium) {
        if (AMVIA_LIKELY(!(m->flags & kFlagBounce))) return msg_payload(m);
        BounceTrailer tr;
        std::memcpy(&tr, msg_payload(m), sizeof tr);
        Link *l = c->link;
        if (AMVIA_UNLIKELY(!l->bounce || tr.slot >= 2 * l->bounce_ring || m->nbytes > kBounceSlot)) {
            *status = EBADARGS; // cannot happen with a well-behaved peer
            return nullptr;
        }
        return l->bounce + size_t(tr.slot) * kBounceSlot;
    }
    if (cat == kShort) return nullptr;
    LongTrailer tr;
    std::memcpy(&tr, msg_payload(m), sizeof tr);
    if (!ep->seg_registered || tr.offset > ep->seglen) {
        *status = EBADSEGOFF;
        return nullptr;
    }
    if (m->nbytes > ep->seglen - tr.offset) {
        *status = EBADLENGTH;
        return nullptr;
    }
    uint8_t *dst = static_cast<uint8_t *>(ep->seg) + tr.offset;
    if (AMVIA_UNLIKELY(tr.no_data)) { // did not fit when sent; fits now: still not here
        *status = EBADSEGOFF;
        return nullptr;
    }
    if (AMVIA_UNLIKELY(tr.gen != ep->seg_gen)) {
        // Aimed with a stale copy of our segment (we called AM_SetSeg since):
        // the bytes are in the replaced segment, still registered until the
        // peer acknowledges the new one.  Move them where they belong now.
        for (const RetiredSeg &r : ep->retired)
            if (r.gen == tr.gen && tr.offset <= r.len && m->nbytes <= r.len - tr.offset) {
                std::memmove(dst, r.base + tr.offset, m->nbytes);
                return dst;
            }
        *status = EBADSEGOFF;
        return nullptr;
    }
    return dst;
}

static inline op_t opcode_of(const MsgHeader *m) {
    return op_t(((m->flags & kFlagRequest) ? AM_REQUEST_M : AM_REPLY_M) + int(msg_category(m)));
}

[[gnu::cold, gnu::noinline]] static void repost_failed(Channel *c, VIP_RETURN rc) {
    link_fail(c->link, VipxReturnString(rc));
}

// Inline: one call (VipPostRecv) per message rather than two.
template <bool Timed>
static inline void repost_recv(Channel *c, Slot *s) {
    VIP_RETURN rc = c->repost_recv<Timed>(s, kInstr);
    if (AMVIA_UNLIKELY(rc != VIP_SUCCESS)) repost_failed(c, rc);
}

// A token for a message that came on channel c.  Its source is left unset:
// it is read only for local errors (no channel), whose tokens are built in
// local_error.
static inline void init_token(Token &t, ep_t ep, Channel *c, MsgHeader *m, uint8_t is_request) {
    t.ep = ep;
    t.ch = c;
    t.msg = m;
    t.is_request = is_request;
    t.replied = 0;
}

// A request whose handler did not reply: its credit goes back with the next
// message to the peer, or in a credit message (kSysCredit) once a batch is
// owed or the requester has run out (channel.hpp, kFlagCreditsOut).  Before,
// every such request cost a credit message of its own: half the messages of a
// request stream, each a cache line the requester must fetch and a receive it
// must reap and repost.  The batch is half of k: the credit message returns
// this request's credit as a reply and names the rest of the batch in its
// nbytes field, so it is not bounded by the two credit bits that any message
// carries (a batch of 4 had the requester stall on credits every 4 requests).
static inline void return_credit_later(Token *t) {
    Channel *c = t->ch;
    const bool out = t->msg->flags & kFlagCreditsOut;
    if (!c->owe_one(chan::Channel::credit_batch(uint32_t(c->credits_max()), uint32_t(AMVIA_MAX_CREDITS))) && !out)
        return;
    const uint32_t rest = c->take_owed() - 1;
    send_system_reply(t, kSysCredit, rest);
}

template <bool Timed>
[[gnu::always_inline]] static inline void run_request_body(Slot *s) {
    AMVIA_TIME_BEGIN(Timed, t0);
    Channel *c = channel_of(s);
    ep_t ep = c->link->ep;
    MsgHeader *m = msg_of(s);
    Token t;
    init_token(t, ep, c, m, 1);
    ep->stats.RequestsReceived[msg_category(m)]++;
    int status = 0;
    tag_t etag = ep->tag;
    if (AMVIA_UNLIKELY(etag != AM_ALL && (etag == AM_NONE || etag != m->tag))) status = EBADTAG;
    amx_handler_fn_t fn = ep->handlers[m->handler];
    if (AMVIA_UNLIKELY(!fn || m->handler == 0) && !status) status = EBADHANDLER;
    void *buf = status ? nullptr : message_data(ep, c, m, &status);
    AMVIA_TIME_END(Timed, c_read, t0);
    if (AMVIA_UNLIKELY(status)) {
        send_system_reply(&t, kSysReturned, uint32_t(status) | uint32_t(opcode_of(m)) << 8);
    } else {
        dispatch<Timed>(fn, &t, m, buf);
        if (!t.replied) return_credit_later(&t);
    }
    repost_recv<Timed>(c, s);
}

// A request: dispatch, handler, the receive reposted; timed or not (one branch).
static void run_request(Slot *s) {
    if (AMVIA_UNLIKELY(instr_timing())) run_request_body<true>(s);
    else run_request_body<false>(s);
}

template <bool Timed>
[[gnu::always_inline]] static inline void run_reply_body(Channel *c, MsgHeader *m) {
    AMVIA_TIME_BEGIN(Timed, t0);
    ep_t ep = c->link->ep;
    Token t;
    init_token(t, ep, c, m, 0);
    if (AMVIA_UNLIKELY(m->flags & kFlagSystem)) {
        if (m->sys == kSysReturned) {
            call_error_handler(ep, int(m->nbytes & 0xff), op_t(m->nbytes >> 8), &t);
        } else if (m->sys == kSysSegAck) {
            // The peer now aims at our segment generation nbytes: older ones can go.
            Link *l = c->link;
            if (m->nbytes > l->seg_acked_gen) l->seg_acked_gen = m->nbytes;
            retire_segments(ep);
        } else if (m->sys == kSysInfo && m->nbytes >= sizeof(SegInfo)) {
            // The answer to our kSysInfoQuery: the peer's segment as of now.
            Link *l = c->link;
            std::memcpy(&l->seg, msg_payload(m), sizeof(SegInfo));
            l->seg_known = true;
            l->seg_fresh = true;
            if (m->nbytes >= sizeof(SegInfo) + sizeof(BounceInfo)) {
                std::memcpy(&l->peer_bounce, msg_payload(m) + sizeof(SegInfo), sizeof(BounceInfo));
                l->peer_bounce_known = l->peer_bounce.ring != 0;
                l->bounce_query_answered = true;
            }
            l->query_outstanding = false;
        } else if (m->sys == kSysCredit && m->nbytes) {
            // The rest of a credit batch: at most what this side can have
            // out, so a corrupt count cannot overrun the peer's receives.
            const int room = c->credits_max() - c->credits();
            c->return_credits(int(std::min<uint32_t>(m->nbytes, uint32_t(room > 0 ? room : 0))));
        }
        return;
    }
    ep->stats.RepliesReceived[msg_category(m)]++;
    int status = 0;
    amx_handler_fn_t fn = ep->handlers[m->handler];
    if (AMVIA_UNLIKELY(!fn || m->handler == 0)) status = EBADHANDLER;
    void *buf = status ? nullptr : message_data(ep, c, m, &status);
    AMVIA_TIME_END(Timed, c_read, t0);
    if (AMVIA_UNLIKELY(status)) call_error_handler(ep, status, opcode_of(m), &t);
    else dispatch<Timed>(fn, &t, m, buf);
}

// A reply: the layer's own or the user's handler; timed or not (one branch).
static void run_reply(Channel *c, MsgHeader *m) {
    if (AMVIA_UNLIKELY(instr_timing())) run_reply_body<true>(c, m);
    else run_reply_body<false>(c, m);
}

// Layer-internal requests: handled at once (they run no user code), answered
// with a credit reply.
static void run_system_request(Channel *c, MsgHeader *m) {
    Link *l = c->link;
    Token t{l->ep, c, m, {}, 1, 0};
    if (m->sys == kSysSegInfo && m->nbytes >= sizeof(SegInfo)) {
        SegInfo si;
        std::memcpy(&si, msg_payload(m), sizeof si);
        if (!l->seg_known || si.gen >= l->seg.gen) l->seg = si; // never step back
        l->seg_known = true;
        if (l->long_sends > 0) { // see Link::deferred_acks
            l->deferred_acks++;
            l->deferred_ack_ch = c;
            return;
        }
        send_system_reply(&t, kSysSegAck, l->seg.gen);
        return;
    } else if (m->sys == kSysInfoQuery && m->nargs >= 2) {
        struct {
            SegInfo seg;
            BounceInfo bounce;
        } info{current_seg(l->ep), {}};
        uint32_t len = sizeof(SegInfo);
        if (msg_args(m)[0]) {
            int k = std::max(msg_args(m)[1], 1);
            for (int i = 0; i < l->nch; i++) k = std::max(k, l->ch[i].credits_max());
            if (l->bounce || bounce_allocate(l, uint32_t(k) + 1))
                info.bounce = BounceInfo{uint64_t(uintptr_t(l->bounce)), l->bounce_mh, l->bounce_ring};
            len += sizeof(BounceInfo); // ring 0: none could be made
        }
        send_system_reply(&t, kSysInfo, 0, &info, len);
        return;
    } else if (m->sys == kSysBye) {
        l->peer_closing = true; // its disconnect, coming next, is a clean exit
    } else if (m->sys == kSysBarrier && m->nargs >= 2) {
        spmd_barrier_message(msg_args(m)[0], msg_args(m)[1]);
    } else if (m->sys == kSysGet) {
        serve_get(&t, m); // replies with the data or returns the request
        return;
    } else if (m->sys == kSysExit && m->nargs >= 1) {
        spmd_exit_notice(msg_args(m)[0]); // does not return
    }
    send_system_reply(&t, kSysCredit, 0);
}

void pending_reserve(eb_t eb, size_t capacity) {
    if (capacity <= eb->pending.size()) return;
    std::vector<Slot *> ring(capacity, nullptr);
    for (size_t i = 0; i < eb->pending_count; i++) ring[i] = eb->pending[(eb->pending_head + i) % eb->pending.size()];
    eb->pending.swap(ring);
    eb->pending_head = 0;
}

static void run_pending(eb_t eb) {
    while (eb->pending_count && ts.handler_depth == 0) {
        Slot *s = eb->pending[eb->pending_head];
        eb->pending_head = (eb->pending_head + 1) % eb->pending.size();
        eb->pending_count--;
        if (s) run_request(s); // null: its link was destroyed
    }
}

// A message that does not hold what its header claims (msg_fits): the
// peer's library is not ours or is broken; the link fails with what was wrong,
// nothing is dispatched, the slot is not reposted.
[[gnu::cold, gnu::noinline]] static void malformed(Link *l, const MsgHeader *m, uint32_t got) {
    char why[160];
    std::snprintf(why, sizeof why, "malformed message from the peer: %u bytes, %u arguments, category %u, nbytes %u",
                  got, unsigned(m->nargs), unsigned(msg_category(m)), m->nbytes);
    link_fail(l, why);
}

template <bool Timed>
static inline void handle_message(eb_t eb, Slot *s, bool run_requests) {
    AMVIA_TIME_BEGIN(Timed, t0);
    Channel *c = channel_of(s);
    Link *l = c->link;
    if (AMVIA_UNLIKELY(s->desc.CS.Status & VIP_STATUS_ERROR_MASK)) {
        // Flushed by a disconnect or broken: the slot is not reposted.
        link_fail(l, "receive completed in error (peer gone?)");
        return;
    }
    if (AMVIA_UNLIKELY(l->state == LinkState::Pending)) link_try_up(l);
    MsgHeader *m = msg_of(s);
    if (AMVIA_UNLIKELY(!msg_fits(m, s->desc.CS.Length))) {
        malformed(l, m, s->desc.CS.Length);
        return;
    }
    if (AMVIA_UNLIKELY(m->flags & kCreditMask)) c->return_credits(int(msg_carried_credits(m)));
    if (!(m->flags & kFlagRequest)) {
        c->return_credits(1); // every reply returns one request credit
        AMVIA_TIME_END(Timed, c_process, t0);
        run_reply(c, m);
        repost_recv<Timed>(c, s);
        return;
    }
    if (AMVIA_UNLIKELY(m->flags & kFlagSystem)) {
        run_system_request(c, m);
        repost_recv<true>(c, s);
        return;
    }
    if (!run_requests) { // inside a handler: queue it (deadlock/atomicity rule)
        eb->pending[(eb->pending_head + eb->pending_count) % eb->pending.size()] = s;
        eb->pending_count++;
        return;
    }
    AMVIA_TIME_END(Timed, c_process, t0);
    run_request(s);
}

static inline void receive_from(eb_t eb, VIP_VI_HANDLE vi, bool run_requests) {
    VIP_DESCRIPTOR *d;
    VIP_RETURN rc = chan::Channel::recv_done(vi, &d, kInstr);
    if (AMVIA_UNLIKELY(rc != VIP_SUCCESS)) return; // an entry of a VI destroyed since (AM_FreeEndpoint)
    if (AMVIA_UNLIKELY(instr_timing())) handle_message<true>(eb, chan::slot_of(d), run_requests);
    else handle_message<false>(eb, chan::slot_of(d), run_requests);
}

int reap_sends(eb_t eb, int max) {
    int i = 0;
    for (; i < max && eb->sends_outstanding > 0; i++) {
        VIP_VI_HANDLE vi;
        if (chan::Channel::cq_done(eb->scq, &vi, kInstr.cq_send) != VIP_SUCCESS) return i;
        VIP_DESCRIPTOR *d;
        if (chan::Channel::send_done(vi, &d, kInstr) != VIP_SUCCESS) continue;
        Slot *s = chan::slot_of(d);
        Channel *c = channel_of(s);
        c->recycle_send(s, kInstr, [c, eb](Slot *s) {
            // A send flushed by a disconnect is left to the receive side, which
            // meets the peer's goodbye (kSysBye) first when the peer left cleanly
            // and its own flushed receives otherwise: reporting here would call a
            // clean exit an error whenever the flush is reaped before the goodbye.
            const VIP_UINT32 err = s->desc.CS.Status & VIP_STATUS_ERROR_MASK;
            if (AMVIA_UNLIKELY(err) && err != VIP_STATUS_DESC_FLUSHED_ERROR) {
                char why[160];
                link_fail(c->link, VipxStatusString(s->desc.CS.Status, why, sizeof why));
            }
            if (s->pin >= 0) regcache_release(s->pin); // an RDMA write's source pages
            s->pin = -1;
            eb->sends_outstanding--;
        });
    }
    return i;
}

// A poll found nothing: spin on, or after the window (VIASTACK_WAIT, vipl_wait.h)
// give the CPU away.  Every AM wait (AM_Poll loops, credits, send slots, long
// sends, barriers, connections) polls through poll_bundle, so this is the one
// place the policy applies.  In block mode the bundle sleeps in VipCQWait on
// its receive CQ when what it waits for can only come as a receive (no sends
// outstanding, no connection being made, nothing queued); the completion it
// takes is handled first by the next poll, as AM_WaitSema's is.  The sleep is
// bounded (1 ms) so that a caller waiting on something else (a deadline)
// still gets to check it.
[[gnu::noinline]] static void bundle_idle(eb_t eb, bool run_requests) {
    if (!vipl_wait::idle(eb->wait)) return;
    vipl_wait::give_up_cpu(eb->wait, [&] {
        // An AM_PAR bundle does not sleep holding its lock: its other threads would wait on it.
        if (eb->wait.mode == vipl_wait::Mode::block && !eb->par && eb->sends_outstanding == 0 && !eb->stash_vi &&
            eb->connecting.empty() && (!eb->pending_count || !run_requests)) {
            VIP_VI_HANDLE vi;
            VIP_BOOLEAN is_recv;
            if (VipCQWait(eb->rcq, 1, &vi, &is_recv) == VIP_SUCCESS) eb->stash_vi = vi;
        } else {
            sched_yield();
        }
    });
}

void poll_bundle(eb_t eb, bool run_requests) {
    int got = 0;
    if (AMVIA_UNLIKELY(eb->pending_count) && run_requests) {
        run_pending(eb);
        got = 1;
    }
    if (AMVIA_UNLIKELY(eb->stash_vi != nullptr)) {
        VIP_VI_HANDLE vi = eb->stash_vi;
        eb->stash_vi = nullptr;
        if (AMVIA_UNLIKELY(!eb->stash_more.empty())) { // several AM_PAR threads' AM_WaitSema
            eb->stash_vi = eb->stash_more.back();
            eb->stash_more.pop_back();
        }
        receive_from(eb, vi, run_requests);
        got = 1;
    }
    // Receives first (the reason for two CQs: receive gets priority), a bounded batch.
    int i = 0;
    for (; i < 32; i++) {
        VIP_VI_HANDLE vi;
        if (chan::Channel::cq_done(eb->rcq, &vi, kInstr.cq_recv) != VIP_SUCCESS) break;
        receive_from(eb, vi, run_requests);
        // Requests queued by a handler that just ran (its nested polls) go
        // before the next arrival: requests run in the order they came, which
        // large mediums' bounce slots rely on (send_bounce).
        if (AMVIA_UNLIKELY(eb->pending_count) && run_requests) run_pending(eb);
    }
    got += i;
    if (eb->sends_outstanding > 0) got += reap_sends(eb, 1); // once per poll
    if (AMVIA_UNLIKELY(!eb->connecting.empty())) bundle_check_connecting(eb);
    if (AMVIA_LIKELY(got)) vipl_wait::progress(eb->wait);
    else bundle_idle(eb, run_requests);
}

// The bundle of l's remote endpoint when that endpoint lives in this process
// in another bundle; nullptr otherwise (another process, or the same bundle).
static eb_t local_peer_bundle(const Link *l) {
    std::lock_guard<std::mutex> hold(g.control);
    for (eb_t eb : g.bundles) {
        if (eb == l->ep->eb) continue;
        for (ep_t ep : eb->eps)
            if (en_equal(ep->name, l->remote)) return eb;
    }
    return nullptr;
}

void poll_link(Link *l, bool run_requests) {
    poll_bundle(l->ep->eb, run_requests);
    // The layer's handshakes (the peer's segment, its bounce ring) are
    // answered by the peer's layer when its bundle is polled.  Between two
    // bundles of this process the program may be inside a call on one of
    // them - a request, or a handler run by AM_Poll on it - and poll the
    // other only afterwards, so waiting on our bundle alone never ends: poll
    // the peer's too.  Its requests are queued (run at its next AM_Poll), as
    // inside a handler; the slow path only, the search costs nothing per message.
    // An AM_PAR peer bundle held by another thread is being polled by it: try,
    // never wait (two threads each holding one bundle and waiting on the
    // other's would deadlock).
    eb_t peer = local_peer_bundle(l);
    if (!peer) return;
    if (!peer->par) {
        poll_bundle(peer, false);
    } else if (peer->lock.try_lock()) {
        poll_bundle(peer, false);
        peer->lock.unlock();
    }
}

} // namespace amvia

using namespace amvia;

extern "C" {

int AM_Poll(eb_t eb) {
    if (AMVIA_UNLIKELY(g.init_count == 0)) return fail(AM_ERR_NOT_INIT, "AM_Poll", "call AM_Init first");
    if (AMVIA_UNLIKELY(!valid_eb(eb))) return fail(AM_ERR_BAD_ARG, "AM_Poll", "not a bundle");
    BundleGuard hold(eb);
    poll_bundle(eb, ts.handler_depth == 0);
    return AM_OK;
}

// The spin window AM_WaitSema polls before it sleeps; read under the bundle's
// lock (AM_Poll adapts it).  UINT32_MAX: spin mode, never sleep.
static uint32_t wait_window(eb_t eb) {
    return eb->wait.mode == vipl_wait::Mode::spin ? UINT32_MAX : eb->wait.spin_limit;
}

// Takes one receive completion for AM_WaitSema: polls the CQ for `window`
// polls (no system call), then sleeps in VipCQWait.  Runs without the
// bundle's lock: VIPL hands each completion to one taker, so several AM_PAR
// threads may wait here at once.
static VIP_RETURN wait_receive(eb_t eb, uint32_t window, VIP_VI_HANDLE *vi) {
    VIP_BOOLEAN is_recv;
    VIP_RETURN rc = VIP_NOT_DONE;
    for (uint32_t n = 0; n < window && rc == VIP_NOT_DONE;) {
        rc = VipCQDone(eb->rcq, vi, &is_recv);
        if (window != UINT32_MAX) n++;
    }
    if (rc == VIP_NOT_DONE) rc = VipCQWait(eb->rcq, VIP_INFINITE, vi, &is_recv);
    return rc;
}

// A completion AM_WaitSema took, for the next poll to handle first.
static void stash(eb_t eb, VIP_VI_HANDLE vi) {
    if (!eb->stash_vi) eb->stash_vi = vi;
    else eb->stash_more.push_back(vi);
}

int AM_WaitSema(eb_t eb) {
    if (g.init_count == 0) return fail(AM_ERR_NOT_INIT, "AM_WaitSema", "call AM_Init first");
    if (!valid_eb(eb)) return fail(AM_ERR_BAD_ARG, "AM_WaitSema", "not a bundle");
    if (ts.handler_depth) return fail(AM_ERR_RESOURCE, "AM_WaitSema", "called from a handler");
    std::unique_lock<std::recursive_mutex> hold(eb->lock, std::defer_lock);
    if (eb->par) hold.lock();
    if (eb->event_mask == AM_NOEVENTS)
        return fail(AM_ERR_BAD_ARG, "AM_WaitSema",
                    "the event mask is AM_NOEVENTS: set AM_NOTEMPTY first or this would never wake");
    if (!eb->pending_count && !eb->stash_vi) {
        // Connections still being made are completed first: a peer's message
        // on a link we have not seen up must still find our state ready.
        bool took = false;
        while (!eb->connecting.empty()) {
            bundle_check_connecting(eb);
            if (eb->connecting.empty()) break;
            VIP_VI_HANDLE vi;
            VIP_BOOLEAN is_recv;
            if (VipCQWait(eb->rcq, 1, &vi, &is_recv) == VIP_SUCCESS) {
                stash(eb, vi);
                took = true;
                break;
            }
        }
        if (!took) {
            VIP_VI_HANDLE vi;
            const uint32_t window = wait_window(eb);
            if (eb->par) hold.unlock();
            VIP_RETURN rc = wait_receive(eb, window, &vi);
            if (eb->par) hold.lock();
            if (rc != VIP_SUCCESS) return fail(AM_ERR_RESOURCE, "AM_WaitSema", "VipCQWait: %s", VipxReturnString(rc));
            stash(eb, vi); // AM_Poll handles it first
        }
    }
    eb->event_mask = AM_NOEVENTS; // events are one-shot
    return AM_OK;
}

int AM_GetSourceEndpoint(void *token, en_t *gan) {
    auto *t = static_cast<Token *>(token);
    if (!t || t != ts.live_token || !gan || !t->msg) return fail(AM_ERR_BAD_ARG, "AM_GetSourceEndpoint", "bad token");
    *gan = t->ch ? t->ch->link->remote : t->source;
    return AM_OK;
}

int AM_GetDestEndpoint(void *token, ep_t *endp) {
    auto *t = static_cast<Token *>(token);
    if (!t || t != ts.live_token || !endp || !t->msg) return fail(AM_ERR_BAD_ARG, "AM_GetDestEndpoint", "bad token");
    *endp = t->ep;
    return AM_OK;
}

int AM_GetMsgTag(void *token, tag_t *tagp) {
    auto *t = static_cast<Token *>(token);
    if (!t || t != ts.live_token || !tagp || !t->msg) return fail(AM_ERR_BAD_ARG, "AM_GetMsgTag", "bad token");
    *tagp = t->msg->tag;
    return AM_OK;
}

} // extern "C"
