// am_send.cpp - requests and replies: short and medium copy into a registered
// send buffer and post one descriptor; long posts RDMA writes straight from
// the user's (cached-registration) pages into the target segment, then a small
// send that carries handler, arguments and offset; a medium too large for a
// message buffer goes the same way into the receiver's bounce ring.  The
// common case is one credit check, one slot pop, a header and argument copy,
// and VipPostSend.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "am_internal.hpp"

VIPL_INSTR_DEFINE(c_bookkeeping, "am.Send bookkeeping", VIPL_INSTR_FLOW_CONTROL);
VIPL_INSTR_DEFINE(c_build, "am.Build send descriptors", VIPL_INSTR_BASE_VI);
// VipPostSend is timed by the channel (kInstr in am_internal.hpp).

namespace amvia {

static inline uint8_t flags_of(bool request, Category cat, bool system) {
    return uint8_t((request ? kFlagRequest : 0) | (system ? kFlagSystem : 0) | (cat << 2));
}

static inline op_t opcode_of(bool request, Category cat) {
    return op_t((request ? AM_REQUEST_M : AM_REPLY_M) + int(cat));
}

// Copies nargs arguments: a jump to one fixed-size copy (a move or two)
// instead of a loop of one 4-byte move per argument.  Only a returned
// request's count comes from a peer, and msg_fits has bounded it to 16 on
// arrival; the loop is for counts the cases do not name.
static inline void copy_args(int32_t *dst, const int32_t *src, unsigned nargs) {
    static_assert(AMVIA_MAX_SHORT == 16, "the cases below cover 0..16 arguments");
    switch (nargs) {
    case 0: return;
    case 1: std::memcpy(dst, src, 4); return;
    case 2: std::memcpy(dst, src, 8); return;
    case 3: std::memcpy(dst, src, 12); return;
    case 4: std::memcpy(dst, src, 16); return;
    case 5: std::memcpy(dst, src, 20); return;
    case 6: std::memcpy(dst, src, 24); return;
    case 7: std::memcpy(dst, src, 28); return;
    case 8: std::memcpy(dst, src, 32); return;
    case 9: std::memcpy(dst, src, 36); return;
    case 10: std::memcpy(dst, src, 40); return;
    case 11: std::memcpy(dst, src, 44); return;
    case 12: std::memcpy(dst, src, 48); return;
    case 13: std::memcpy(dst, src, 52); return;
    case 14: std::memcpy(dst, src, 56); return;
    case 15: std::memcpy(dst, src, 60); return;
    case 16: std::memcpy(dst, src, 64); return;
    default:
        for (unsigned i = 0; i < nargs; i++) dst[i] = src[i];
    }
}

// Writes the header and arguments; returns the message length so far.
static inline uint32_t build_header(MsgHeader *m, uint8_t flags, handler_t h, int nargs, uint8_t sys, uint32_t nbytes,
                                    tag_t tag, const int32_t *args) {
    m->flags = flags;
    m->handler = h;
    m->nargs = uint8_t(nargs);
    m->sys = sys;
    m->nbytes = nbytes;
    m->tag = tag;
    copy_args(msg_args(m), args, unsigned(nargs));
    return uint32_t(sizeof(MsgHeader)) + args_bytes(unsigned(nargs));
}

// Hands a filled slot to the NIC.  Every message carries back what credits it
// can of those this side owes the peer (channel.hpp); a request that took the
// last credit asks for the peer's at once (kFlagCreditsOut).
template <bool Timed = true>
static inline int post_slot(Channel *c, Slot *s, uint32_t len) {
    MsgHeader *m = msg_of(s);
    if (AMVIA_UNLIKELY(c->owed())) m->flags |= uint8_t(c->take_owed(kMaxCarriedCredits) << kCreditShift);
    if ((m->flags & kFlagRequest) && AMVIA_UNLIKELY(!c->has_credit())) m->flags |= kFlagCreditsOut;
    chan::Channel::set_message(s, len);
    VIP_RETURN rc = c->post_send<Timed>(s, kInstr);
    if (AMVIA_LIKELY(rc == VIP_SUCCESS)) return AM_OK;
    c->untake_send(s);
    c->eb->sends_outstanding--;
    link_fail(c->link, VipxReturnString(rc));
    return AM_ERR_NOT_SENT;
}

static inline Slot *take_slot(Channel *c) {
    c->eb->sends_outstanding++;
    return c->take_send();
}

// Slow path: poll until the channel's link is up and it has `slots` free send
// slots and (if `credit`) a request credit.  Inside a handler requests are
// queued, not run (the deadlock/atomicity rule); outside they run.
static int wait_resources(Channel *c, int slots, bool credit, bool async) {
    Link *l = c->link;
    eb_t eb = l->ep->eb;
    for (;;) {
        if (l->state != LinkState::Up) link_try_up(l);
        if (l->state == LinkState::Dead) return AM_ERR_NOT_SENT;
        if (l->state == LinkState::Up && c->free_sends() >= uint32_t(slots) && (!credit || c->has_credit()))
            return AM_OK;
        if (async) return AM_ERR_IN_USE;
        if (c->free_sends() < uint32_t(slots)) reap_sends(eb, int(c->nsend()));
        poll_bundle(eb, ts.handler_depth == 0);
    }
}

void local_error(ep_t ep, int status, op_t opcode, handler_t h, const en_t *dest, tag_t tag, int nargs,
                 const int32_t *args) {
    alignas(8) uint8_t buf[sizeof(MsgHeader) + 4 * AMVIA_MAX_SHORT + 8];
    auto *m = reinterpret_cast<MsgHeader *>(buf);
    bool request = opcode <= AM_REQUEST_XFER_M;
    Category cat = Category((opcode - 1) % 3);
    build_header(m, flags_of(request, cat, false), h, nargs, 0, 0, tag, args);
    Token t{};
    t.ep = ep;
    t.msg = m;
    if (dest) t.source = *dest;
    call_error_handler(ep, status, opcode, &t);
}

static int unreachable(ep_t ep, const Translation &t, Category cat, handler_t h, int nargs, const int32_t *args,
                       int rc) {
    if (rc == AM_ERR_NOT_SENT) local_error(ep, EUNREACHABLE, opcode_of(true, cat), h, &t.name, t.tag, nargs, args);
    return rc;
}

// Posts the RDMA writes of a long message; the caller then sends the notice.
// With wait_read, returns only once the NIC has finished reading the source
// (the RDMA descriptors completed): AM lets the caller reuse the source buffer
// as soon as a blocking request returns.
static int post_rdma(Channel *c, const SegInfo &seg, const void *src, size_t nbytes, uintptr_t off, bool wait_read) {
    if (nbytes == 0) return AM_OK;
    eb_t eb = c->link->ep->eb;
    // A VI completes its sends in order: once the last piece is done, all are.
    Slot *last = nullptr;
    VIP_MEM_HANDLE lmh;
    // One pin per descriptor, taken at once (the cache's lock once per
    // message, not once per piece); each completion releases its piece's, and
    // the pieces not posted are released below.
    const int pieces = int((nbytes + g.max_chunk - 1) / g.max_chunk);
    int ent = regcache_acquire(eb, src, nbytes, &lmh, pieces);
    if (ent == -1) return AM_ERR_RESOURCE;
    int rc = AM_OK, posted = 0;
    for (size_t done = 0; done < nbytes && rc == AM_OK;) {
        uint32_t n = uint32_t(std::min<size_t>(nbytes - done, g.max_chunk));
        if (!c->has_free_send() && (rc = wait_resources(c, 1, false, false)) != AM_OK) break;
        Slot *s = take_slot(c);
        s->pin = ent >= 0 ? ent : -1;
        VIP_RETURN vrc = c->post_rdma_write(s, seg.base + off + done, seg.handle,
                                            static_cast<const uint8_t *>(src) + done, lmh, n, kInstr);
        if (vrc != VIP_SUCCESS) {
            // The slot is back on the free list: no completion will release its pin.
            s->pin = -1;
            eb->sends_outstanding--;
            link_fail(c->link, VipxReturnString(vrc));
            rc = AM_ERR_NOT_SENT;
        } else {
            last = s;
            posted++;
        }
        done += n;
    }
    if (ent >= 0 && posted < pieces) regcache_release(ent, pieces - posted);
    // A slot is a plain send slot again (rdma == 0) once its RDMA completed.
    while (wait_read && last && last->rdma && c->link->state != LinkState::Dead) {
        reap_sends(eb, int(c->nsend()));
        if (last->rdma) poll_bundle(eb, ts.handler_depth == 0);
    }
    if (wait_read && c->link->state == LinkState::Dead) rc = AM_ERR_NOT_SENT;
    return rc;
}

// Does a long transfer fit the (cached) remote segment?  Only decides whether
// the data can be written: the receiver judges the message against its
// current segment.
static inline bool seg_fits(const SegInfo &seg, size_t nbytes, uintptr_t off) {
    return seg.length && off <= seg.length && nbytes <= seg.length - off;
}

int refresh_peer_info(Link *l, bool want_bounce, bool async) {
    if (!l->query_outstanding) {
        Channel *c = &l->ch[0];
        if (async && (l->state != LinkState::Up || !c->has_credit() || !c->has_free_send())) {
            poll_link(l, ts.handler_depth == 0);
            return AM_ERR_IN_USE;
        }
        int k = 0;
        for (int i = 0; i < l->nch; i++) k = std::max(k, l->ch[i].credits_max());
        const int32_t args[2] = {want_bounce ? 1 : 0, k};
        l->query_outstanding = true;
        int rc = send_system_request(l->ep, l, kSysInfoQuery, args, 2, nullptr, 0);
        if (rc != AM_OK) {
            l->query_outstanding = false;
            return rc;
        }
    }
    // The answer is a reply, so it is processed by any poll, inside handlers too.
    while (l->query_outstanding && l->state != LinkState::Dead) {
        poll_link(l, ts.handler_depth == 0);
        if (async) break;
    }
    if (l->state == LinkState::Dead) return AM_ERR_NOT_SENT;
    return l->query_outstanding ? AM_ERR_IN_USE : AM_OK;
}

// Builds a request or reply in a send slot: header, then the medium payload or
// the long message's destination offset.  Returns the message length.
template <Category C, bool Timed>
static inline uint32_t build_message(Slot *s, bool request, handler_t h, int nargs, tag_t tag, const int32_t *args,
                                     const void *src, size_t nbytes, uintptr_t off, uint32_t gen = 0,
                                     bool no_data = false) {
    AMVIA_TIME_BEGIN(Timed, t1);
    MsgHeader *m = msg_of(s);
    uint32_t len = build_header(m, flags_of(request, C, false), h, nargs, kSysNone, uint32_t(nbytes), tag, args);
    if constexpr (C == kMedium) {
        // A medium of 0 bytes may name no source (NULL): no copy at all, as
        // memcpy's source must be valid even for 0 bytes.
        if (nbytes) std::memcpy(reinterpret_cast<uint8_t *>(m) + len, src, nbytes);
        len += uint32_t(nbytes);
    } else if constexpr (C == kLong) {
        const LongTrailer tr{uint64_t(off), gen, no_data ? 1u : 0u};
        std::memcpy(reinterpret_cast<uint8_t *>(m) + len, &tr, sizeof tr);
        len += uint32_t(sizeof tr);
    }
    AMVIA_TIME_END(Timed, c_build, t1);
    return len;
}

// A medium larger than a message buffer (kInlineMedium < nbytes <=
// AMVIA_MAX_MEDIUM): RDMA-write the payload into the next slot of the
// receiver's bounce ring, then send a notice naming the slot.  Slot reuse is
// safe with ring = k + 1 slots per direction: a request's slot is written again
// only k + 1 requests later, which needs the credit of a request whose handler
// ran after this one's returned (request handlers run one at a time, in
// order); a reply's, only after k + 1 more replies, while at most k requests
// can be outstanding.  The caller holds the request credit, if any.
static int send_bounce(Channel *c, bool request, handler_t h, int nargs, tag_t tag, const int32_t *args,
                       const void *src, size_t nbytes) {
    Link *l = c->link;
    while (!l->peer_bounce_known) {
        int rc = refresh_peer_info(l, true, false);
        if (rc != AM_OK) return rc;
        if (!l->peer_bounce_known && l->bounce_query_answered) return AM_ERR_RESOURCE;
    }
    const BounceInfo &b = l->peer_bounce;
    uint32_t slot = request ? l->bounce_req_seq++ % b.ring : b.ring + l->bounce_rep_seq++ % b.ring;
    const SegInfo target{b.base + uint64_t(slot) * kBounceSlot, kBounceSlot, b.handle, 0};
    int rc = post_rdma(c, target, src, nbytes, 0, true); // the source is free on return, as for any medium
    if (rc == AM_OK && !c->has_free_send()) rc = wait_resources(c, 1, false, false);
    if (rc != AM_OK) return rc;
    Slot *s = take_slot(c);
    MsgHeader *m = msg_of(s);
    uint32_t len = build_header(m, uint8_t(flags_of(request, kMedium, false) | kFlagBounce), h, nargs, kSysNone,
                                uint32_t(nbytes), tag, args);
    const BounceTrailer tr{slot, 0};
    std::memcpy(reinterpret_cast<uint8_t *>(m) + len, &tr, sizeof tr);
    return post_slot(c, s, len + uint32_t(sizeof tr));
}

void flush_deferred_acks(Link *l) {
    while (l->deferred_acks > 0 && l->state == LinkState::Up) {
        l->deferred_acks--;
        Token t{l->ep, l->deferred_ack_ch, nullptr, {}, 1, 0};
        send_system_reply(&t, kSysSegAck, l->seg.gen);
    }
}

// Marks a long message in construction on a link (Link::deferred_acks).
struct LongSend {
    Link *l;
    explicit LongSend(Link *link) : l(link) { l->long_sends++; }
    ~LongSend() {
        if (--l->long_sends == 0 && AMVIA_UNLIKELY(l->deferred_acks)) flush_deferred_acks(l);
    }
};

// ---- a request, by concern: refusal, the long target, the bounce ring, credits --
// The pieces off the common path are cold and out of line; request() keeps
// the common path's checks, the credit, the slot and the post in one frame.
#define AMVIA_COLD __attribute__((cold, noinline))

// Why a request's arguments are refused (request() found one of them wrong).
template <Category C>
AMVIA_COLD static int refuse_request(ep_t ep, int dest, handler_t h, const void *src, size_t nbytes, uintptr_t off,
                                     bool async, int nargs, const int32_t *args) {
    if (g.init_count == 0) return AM_ERR_NOT_INIT;
    const CallDesc d{true, C, async, nargs, ep, dest, nullptr, h, src, nbytes, off};
    char buf[160];
    if (!valid_ep(ep)) return fail_call(AM_ERR_BAD_ARG, d, "ep is not an endpoint from AM_AllocateEndpoint");
    if (const char *why = bad_args(d, buf, sizeof buf)) return fail_call(AM_ERR_BAD_ARG, d, "%s", why);
    if (nargs && !args) return fail_call(AM_ERR_BAD_ARG, d, "args is NULL with nargs %d > 0", nargs);
    return fail_call(AM_ERR_BAD_ARG, d,
                     "dest is outside the translation table [0, %zu); AM_SetNumTranslations grows it",
                     ep->xlate.size());
}

// A long request's link brought up and its target segment known and checked
// before data is placed in it; with async, AM_ERR_IN_USE rather than wait for
// the link, the segment, a credit or the slots.  Sets no_data when even the
// peer's current segment cannot hold the data: the notice then goes alone.
static inline int long_target_ready(ep_t ep, const Translation &t, Channel *c, handler_t h, size_t nbytes,
                                    uintptr_t off, bool async, int nargs, const int32_t *args, bool &no_data) {
    Link *l = c->link;
    while (l->state == LinkState::Up ? !l->seg_known : l->state == LinkState::Pending) {
        if (l->state == LinkState::Pending) link_try_up(l);
        poll_link(l, true);
        if (async && (l->state == LinkState::Up ? !l->seg_known : l->state == LinkState::Pending)) return AM_ERR_IN_USE;
    }
    if (l->state == LinkState::Dead) return unreachable(ep, t, kLong, h, nargs, args, AM_ERR_NOT_SENT);
    if (AMVIA_UNLIKELY(!seg_fits(l->seg, nbytes, off))) {
        // Our copy of the peer's segment may be stale (it called AM_SetSeg
        // since): ask for the current one rather than refuse.  If even that
        // does not fit, the notice goes without data and the receiver
        // returns it (EBADSEGOFF/EBADLENGTH), judging by its own segment.
        if (!l->seg_fresh) {
            int rc = refresh_peer_info(l, false, async);
            if (rc == AM_ERR_IN_USE) return rc;
            if (rc != AM_OK) return unreachable(ep, t, kLong, h, nargs, args, AM_ERR_NOT_SENT);
        }
        l->seg_fresh = false;
        no_data = !seg_fits(l->seg, nbytes, off);
    }
    int slots = no_data ? 1 : 1 + int((nbytes + g.max_chunk - 1) / g.max_chunk);
    // More pieces than the channel has slots (a NIC with a small
    // MaxTransferSize): post_rdma waits for slots as pieces complete.
    slots = std::min(slots, int(c->nsend()));
    if (async && (!c->has_credit() || c->free_sends() < uint32_t(slots))) {
        // A long message takes two send slots (its RDMA write and its notice)
        // and a poll reaps one send completion, so a stream that only polls
        // when refused would be refused for slots once per message: with the
        // credit in hand, reap every completion there is, and poll only if
        // that was not enough.  (Without it the poll is the one chance.)
        if (c->has_credit() && c->free_sends() < uint32_t(slots)) reap_sends(ep->eb, int(c->nsend()));
        if (!c->has_credit() || c->free_sends() < uint32_t(slots)) poll_bundle(ep->eb, true);
        if (l->state != LinkState::Up || !c->has_credit() || c->free_sends() < uint32_t(slots)) {
            if (!c->has_credit()) ep->stats.CreditStalls++;
            else if (l->state == LinkState::Up) ep->stats.SendSlotStalls++;
            return AM_ERR_IN_USE;
        }
    }
    return AM_OK;
}

// Learns the peer's bounce ring before a medium above kInlineMedium takes
// its credit: asking takes one too.  (A loop: an answer to an earlier
// segment-only query carries no ring.)
AMVIA_COLD static int learn_bounce_ring(ep_t ep, int dest, const Translation &t, handler_t h, const void *src,
                                        size_t nbytes, int nargs, const int32_t *args) {
    Link *l = t.link;
    while (!l->peer_bounce_known) {
        int rc = refresh_peer_info(l, true, false);
        if (rc != AM_OK) return unreachable(ep, t, kMedium, h, nargs, args, AM_ERR_NOT_SENT);
        if (!l->peer_bounce_known && l->bounce_query_answered)
            return fail_call(AM_ERR_RESOURCE,
                             CallDesc{true, kMedium, false, nargs, ep, dest, nullptr, h, src, nbytes, 0},
                             "the destination could not make room for mediums above %u bytes "
                             "(see its stderr); send at most %u bytes, or use AM_RequestXfer",
                             kInlineMedium, kInlineMedium);
    }
    return AM_OK;
}

// The link is not up, or the channel has no credit or no free send slot:
// counts the stall and waits.
AMVIA_COLD static int wait_to_request(ep_t ep, const Translation &t, Channel *c, Category cat, handler_t h, int nargs,
                                      const int32_t *args) {
    if (c->link->state == LinkState::Up) {
        if (!c->has_credit()) ep->stats.CreditStalls++;
        else ep->stats.SendSlotStalls++;
    }
    int rc = wait_resources(c, 1, true, false);
    return rc != AM_OK ? unreachable(ep, t, cat, h, nargs, args, rc) : AM_OK;
}

// A medium above kInlineMedium, by the bounce ring (send_bounce), with the
// credit request() took: given back if the send fails.
AMVIA_COLD static int request_bounce(ep_t ep, int dest, const Translation &t, Channel *c, handler_t h, const void *src,
                                     size_t nbytes, int nargs, const int32_t *args) {
    int rc = send_bounce(c, true, h, nargs, t.tag, args, src, nbytes);
    if (rc != AM_OK) {
        c->return_credits(1);
        if (rc == AM_ERR_RESOURCE)
            return fail_call(rc, CallDesc{true, kMedium, false, nargs, ep, dest, nullptr, h, src, nbytes, 0}, "%s",
                             regcache_last_error());
        return unreachable(ep, t, kMedium, h, nargs, args, rc);
    }
    count_sent(ep, true, kMedium, nargs, nbytes,
               uint32_t(sizeof(MsgHeader) + args_bytes(unsigned(nargs)) + sizeof(BounceTrailer)), nbytes);
    return AM_OK;
}

// A long request's data, RDMA-written into target (unless no_data), and a
// free slot for its notice; the credit request() took is given back on failure.
static inline int post_long_data(ep_t ep, int dest, const Translation &t, Channel *c, const SegInfo &target,
                                 handler_t h, const void *src, size_t nbytes, uintptr_t off, bool async, int nargs,
                                 const int32_t *args, bool no_data) {
    int rc = no_data ? AM_OK : post_rdma(c, target, src, nbytes, off, !async);
    if (rc == AM_OK && !c->has_free_send()) rc = wait_resources(c, 1, false, false);
    if (rc != AM_OK) {
        c->return_credits(1);
        if (rc == AM_ERR_RESOURCE)
            return fail_call(rc, CallDesc{true, kLong, async, nargs, ep, dest, nullptr, h, src, nbytes, off}, "%s",
                             regcache_last_error());
        return unreachable(ep, t, kLong, h, nargs, args, rc);
    }
    return AM_OK;
}

template <Category C, bool Timed>
[[gnu::always_inline]] static inline int request_body(ep_t ep, int dest, handler_t h, const void *src, size_t nbytes,
                                                      uintptr_t off, bool async, int nargs, const int32_t *args) {
    AMVIA_TIME_BEGIN(Timed, t0);
    // Not initialised: no endpoint is valid (AM_Terminate frees them all), so
    // refuse_request sees it first.
    if (AMVIA_UNLIKELY(!valid_ep(ep) || unsigned(nargs) > AMVIA_MAX_SHORT || h == 0 ||
                       (C == kMedium && nbytes > AMVIA_MAX_MEDIUM) || (C == kLong && nbytes > AMVIA_MAX_LONG) ||
                       (nbytes && !src) || (nargs && !args) || unsigned(dest) >= ep->xlate.size()))
        return refuse_request<C>(ep, dest, h, src, nbytes, off, async, nargs, args);
    if (AMVIA_UNLIKELY(ts.handler_depth))
        return fail_call(AM_ERR_RESOURCE, CallDesc{true, C, async, nargs, ep, dest, nullptr, h, src, nbytes, off},
                         "called from a handler: handlers may not send requests (a request handler "
                         "may send one reply); send it after AM_Poll returns");
    const Translation &t = ep->xlate[size_t(dest)];
    if (AMVIA_UNLIKELY(!t.inuse)) {
        local_error(ep, EBADENTRY, opcode_of(true, C), h, nullptr, 0, nargs, args);
        return fail_call(AM_ERR_NOT_SENT, CallDesc{true, C, async, nargs, ep, dest, nullptr, h, src, nbytes, off},
                         "translation %d is not mapped: AM_Map the destination endpoint at index %d first", dest, dest);
    }
    Link *l = t.link;
    Channel *c = &l->ch[l->nch == 3 ? C : 0];
    bool no_data = false;
    // Declared for every class (a no-op for short and medium) so it ends after the notice is posted.
    struct NoGuard {
        explicit NoGuard(Link *) {}
    };
    std::conditional_t<C == kLong, LongSend, NoGuard> long_guard(l);
    (void)long_guard;
    if constexpr (C == kLong) {
        int rc = long_target_ready(ep, t, c, h, nbytes, off, async, nargs, args, no_data);
        if (rc != AM_OK) return rc;
    }
    if constexpr (C == kMedium) {
        if (AMVIA_UNLIKELY(nbytes > kInlineMedium) && !l->peer_bounce_known) {
            int rc = learn_bounce_ring(ep, dest, t, h, src, nbytes, nargs, args);
            if (rc != AM_OK) return rc;
        }
    }
    if (AMVIA_UNLIKELY(l->state != LinkState::Up || !c->has_credit() || !c->has_free_send())) {
        int rc = wait_to_request(ep, t, c, C, h, nargs, args);
        if (rc != AM_OK) return rc;
    }
    c->take_credit();
    if constexpr (C == kMedium) {
        if (AMVIA_UNLIKELY(nbytes > kInlineMedium)) return request_bounce(ep, dest, t, c, h, src, nbytes, nargs, args);
    }
    // A copy: post_rdma may poll, and a kSysSegInfo processed meanwhile must
    // change neither where the chunks go nor the generation the notice names.
    const SegInfo target = C == kLong ? l->seg : SegInfo{};
    if constexpr (C == kLong) {
        int rc = post_long_data(ep, dest, t, c, target, h, src, nbytes, off, async, nargs, args, no_data);
        if (rc != AM_OK) return rc;
    }
    Slot *s = take_slot(c);
    AMVIA_TIME_END(Timed, c_bookkeeping, t0);

    const uint32_t len = build_message<C, Timed>(s, true, h, nargs, t.tag, args, src, nbytes, off, target.gen, no_data);
    int rc = post_slot<Timed>(c, s, len);
    if (AMVIA_UNLIKELY(rc != AM_OK)) {
        c->return_credits(1);
        return unreachable(ep, t, C, h, nargs, args, rc);
    }
    count_sent(ep, true, C, nargs, nbytes, len, C == kLong && !no_data ? nbytes : 0);
    return AM_OK;
}

// A request while instrumentation is on, or on an AM_PAR bundle (the body
// under the bundle's lock).  Out of line, so that AM_SEQ's inlined untimed
// body carries neither a guard nor a timer.
template <Category C>
[[gnu::noinline]] static int request_slow(ep_t ep, int dest, handler_t h, const void *src, size_t nbytes, uintptr_t off,
                                          bool async, int nargs, const int32_t *args) {
    if (!valid_ep(ep) || !ep->eb->par) return request_body<C, true>(ep, dest, h, src, nbytes, off, async, nargs, args);
    BundleGuard hold(ep->eb);
    return request_body<C, true>(ep, dest, h, src, nbytes, off, async, nargs, args);
}

template <Category C>
static inline int request(ep_t ep, int dest, handler_t h, const void *src, size_t nbytes, uintptr_t off, bool async,
                          int nargs, const int32_t *args) {
    if (AMVIA_UNLIKELY(instr_timing() || (valid_ep(ep) && ep->eb->par)))
        return request_slow<C>(ep, dest, h, src, nbytes, off, async, nargs, args);
    return request_body<C, false>(ep, dest, h, src, nbytes, off, async, nargs, args);
}

#if VIASTACK_INSTR_COMPILED
// Time spent sending from inside a handler, so "Act on message" can leave it out.
struct NestedSendTimer {
    uint64_t t0 = vipl_instr_enabled() ? vipl_instr_now() : 0;
    ~NestedSendTimer() {
        if (vipl_instr_enabled() && t0) ts.nested_send_cycles += vipl_instr_now() - t0;
    }
};
#else
struct NestedSendTimer {};
#endif

static_assert(sizeof(MsgHeader) + 4 * AMVIA_MAX_SHORT <= kShortBuf);

// Why a reply is refused (reply() found its token, its arguments or its
// handler's state wrong), checked in the order the errors are reported.
template <Category C>
AMVIA_COLD static int refuse_reply(Token *t, handler_t h, const void *src, size_t nbytes, uintptr_t off, int nargs,
                                   const int32_t *args) {
    const CallDesc d{false, C, false, nargs, nullptr, 0, t, h, src, nbytes, off};
    char buf[160];
    if (!t || t != ts.live_token || !t->ch)
        return fail_call(AM_ERR_BAD_ARG, d, "token is not the token of a handler that is running");
    if (const char *why = bad_args(d, buf, sizeof buf)) return fail_call(AM_ERR_BAD_ARG, d, "%s", why);
    if (nargs && !args) return fail_call(AM_ERR_BAD_ARG, d, "args is NULL with nargs %d > 0", nargs);
    if (!t->is_request)
        return fail_call(AM_ERR_BAD_ARG, d, "called from a reply handler: only request handlers may reply");
    return fail_call(AM_ERR_BAD_ARG, d, "this request handler already replied: a request gets at most one reply");
}

template <Category C>
AMVIA_COLD static int reply_too_big(Token *t, handler_t h, const void *src, size_t nbytes, uintptr_t off, int nargs,
                                    uint32_t need) {
    return fail_call(AM_ERR_BAD_ARG, CallDesc{false, C, false, nargs, nullptr, 0, t, h, src, nbytes, off},
                     "AMVIAv1: a %u-byte reply does not fit the request's VI (%u-byte buffers); "
                     "replies travel on their request's VI: reply with a short message, or use "
                     "the v3 layout",
                     need, t->ch->bufsize());
}

template <Category C, bool Timed>
[[gnu::always_inline]] static inline int reply_body(void *token, handler_t h, const void *src, size_t nbytes,
                                                    uintptr_t off, int nargs, const int32_t *args) {
    struct NoTimer {};
    std::conditional_t<Timed, NestedSendTimer, NoTimer> nested;
    (void)nested;
    AMVIA_TIME_BEGIN(Timed, t0);
    auto *t = static_cast<Token *>(token);
    // The token is compared with the running handler's before it is read: a
    // kept (stale) or made-up token is refused, never dereferenced.
    if (AMVIA_UNLIKELY(!t || t != ts.live_token || !t->ch || unsigned(nargs) > AMVIA_MAX_SHORT || h == 0 ||
                       (C == kMedium && nbytes > AMVIA_MAX_MEDIUM) || (C == kLong && nbytes > AMVIA_MAX_LONG) ||
                       (nbytes && !src) || (nargs && !args) || !t->is_request || t->replied))
        return refuse_reply<C>(t, h, src, nbytes, off, nargs, args);
    Channel *c = t->ch;
    const bool bounce = C == kMedium && nbytes > kInlineMedium;
    // A short reply (at most 16 + 64 bytes) fits every VI's buffers (kShortBuf).
    if constexpr (C != kShort) {
        const uint32_t need = uint32_t(sizeof(MsgHeader)) + args_bytes(unsigned(nargs)) +
            (C == kMedium ? uint32_t(std::min<size_t>(nbytes, kInlineMedium)) : uint32_t(sizeof(LongTrailer)));
        if (AMVIA_UNLIKELY(need > c->bufsize())) return reply_too_big<C>(t, h, src, nbytes, off, nargs, need);
    }
    // Built only on the error paths that name the call.
    const auto call = [&] { return CallDesc{false, C, false, nargs, nullptr, 0, token, h, src, nbytes, off}; };
    Link *l = c->link;
    bool no_data = false;
    SegInfo target{};
    struct NoGuard {
        explicit NoGuard(Link *) {}
    };
    std::conditional_t<C == kLong, LongSend, NoGuard> long_guard(l);
    (void)long_guard;
    if constexpr (C == kLong) {
        if (AMVIA_UNLIKELY(!l->seg_known || !seg_fits(l->seg, nbytes, off))) {
            // As for requests: refresh a possibly stale copy, and if the data
            // still does not fit, let the requester's layer return the reply.
            if (!l->seg_fresh) {
                int rc = refresh_peer_info(l, false, false);
                if (rc != AM_OK) return fail_call(rc, call(), "the requester is unreachable");
            }
            l->seg_fresh = false;
            no_data = !seg_fits(l->seg, nbytes, off);
        }
        target = l->seg; // a copy, as in request()
        int rc = no_data ? AM_OK : post_rdma(c, target, src, nbytes, off, true);
        if (rc != AM_OK)
            return fail_call(rc, call(), "%s",
                             rc == AM_ERR_RESOURCE ? regcache_last_error() : "the requester is unreachable");
    }
    if (AMVIA_UNLIKELY(bounce)) {
        int rc = send_bounce(c, false, h, nargs, t->msg->tag, args, src, nbytes);
        if (rc != AM_OK)
            return fail_call(rc, call(), "%s",
                             rc == AM_ERR_RESOURCE ? regcache_last_error() : "the requester is unreachable");
        t->replied = 1;
        count_sent(t->ep, false, kMedium, nargs, nbytes,
                   uint32_t(sizeof(MsgHeader) + args_bytes(unsigned(nargs)) + sizeof(BounceTrailer)), nbytes);
        return AM_OK;
    }
    if (AMVIA_UNLIKELY(!c->has_free_send())) {
        t->ep->stats.SendSlotStalls++;
        int rc = wait_resources(c, 1, false, false);
        if (rc != AM_OK) return fail_call(rc, call(), "the requester is unreachable");
    }
    Slot *s = take_slot(c);
    AMVIA_TIME_END(Timed, c_bookkeeping, t0);

    const uint32_t len =
        build_message<C, Timed>(s, false, h, nargs, t->msg->tag, args, src, nbytes, off, target.gen, no_data);
    t->replied = 1;
    int rc = post_slot<Timed>(c, s, len);
    if (AMVIA_LIKELY(rc == AM_OK)) count_sent(t->ep, false, C, nargs, nbytes, len, C == kLong && !no_data ? nbytes : 0);
    return rc;
}

// A reply while instrumentation is on: out of line, as request_slow.
template <Category C>
[[gnu::noinline]] static int reply_timed(void *token, handler_t h, const void *src, size_t nbytes, uintptr_t off,
                                         int nargs, const int32_t *args) {
    return reply_body<C, true>(token, h, src, nbytes, off, nargs, args);
}

template <Category C>
static inline int reply(void *token, handler_t h, const void *src, size_t nbytes, uintptr_t off, int nargs,
                        const int32_t *args) {
    if (AMVIA_UNLIKELY(instr_timing())) return reply_timed<C>(token, h, src, nbytes, off, nargs, args);
    return reply_body<C, false>(token, h, src, nbytes, off, nargs, args);
}

int send_system_request(ep_t ep, Link *l, uint8_t sys, const int32_t *args, int nargs, const void *payload,
                        uint32_t nbytes) {
    // v1: the short VI, except segment announcements: those go on the long
    // VI, so the peer's acknowledgement (kSysSegAck) comes back behind any
    // long message it aimed at the old segment (VIs deliver in order).
    Channel *c = &l->ch[l->nch == 3 && sys == kSysSegInfo ? int(kLong) : 0];
    if (l->state != LinkState::Up || !c->has_credit() || !c->has_free_send()) {
        int rc = wait_resources(c, 1, true, false);
        if (rc != AM_OK) return rc;
    }
    c->take_credit();
    Slot *s = take_slot(c);
    MsgHeader *m = msg_of(s);
    uint32_t len = build_header(m, flags_of(true, kMedium, true), 0, nargs, sys, nbytes, 0, args);
    if (nbytes) std::memcpy(reinterpret_cast<uint8_t *>(m) + len, payload, nbytes);
    int rc = post_slot(c, s, len + nbytes);
    if (rc != AM_OK) c->return_credits(1);
    return rc;
}

// The layer's own reply: returns the request's credit (kSysCredit) or hands
// the request back refused (kSysReturned).  Never needs a credit.
int send_system_reply(Token *t, uint8_t sys, uint32_t nbytes_field, const void *payload, uint32_t payload_len) {
    Channel *c = t->ch;
    if (AMVIA_UNLIKELY(!c->has_free_send())) {
        int rc = wait_resources(c, 1, false, false);
        if (rc != AM_OK) return rc;
    }
    Slot *s = take_slot(c);
    MsgHeader *m = msg_of(s);
    const MsgHeader *req = t->msg;
    uint32_t len;
    if (sys == kSysReturned)
        len = build_header(m, uint8_t(kFlagSystem | (req->flags & 0x0c)), req->handler, req->nargs, sys, nbytes_field,
                           req->tag, msg_args(const_cast<MsgHeader *>(req)));
    else len = build_header(m, kFlagSystem, 0, 0, sys, payload_len ? payload_len : nbytes_field, 0, nullptr);
    if (payload_len) std::memcpy(reinterpret_cast<uint8_t *>(m) + len, payload, payload_len);
    t->replied = 1;
    return post_slot(c, s, len + payload_len);
}

} // namespace amvia

using namespace amvia;

extern "C" {

int AMVIA_Request(ep_t ep, int dest, handler_t h, int nargs, const int32_t *args) {
    return request<kShort>(ep, dest, h, nullptr, 0, 0, false, nargs, args);
}
int AMVIA_RequestI(ep_t ep, int dest, handler_t h, void *src, size_t nbytes, int nargs, const int32_t *args) {
    return request<kMedium>(ep, dest, h, src, nbytes, 0, false, nargs, args);
}
int AMVIA_RequestXfer(ep_t ep, int dest, handler_t h, void *src, size_t nbytes, uintptr_t dest_offset, int async,
                      int nargs, const int32_t *args) {
    return request<kLong>(ep, dest, h, src, nbytes, dest_offset, async != 0, nargs, args);
}
int AMVIA_Reply(void *token, handler_t h, int nargs, const int32_t *args) {
    return reply<kShort>(token, h, nullptr, 0, 0, nargs, args);
}
int AMVIA_ReplyI(void *token, handler_t h, void *src, size_t nbytes, int nargs, const int32_t *args) {
    return reply<kMedium>(token, h, src, nbytes, 0, nargs, args);
}
int AMVIA_ReplyXfer(void *token, handler_t h, void *src, size_t nbytes, uintptr_t dest_offset, int nargs,
                    const int32_t *args) {
    return reply<kLong>(token, h, src, nbytes, dest_offset, nargs, args);
}

} // extern "C"
