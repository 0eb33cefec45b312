// am_send.cpp - requests and replies: short and medium copy into a registered
// send buffer and post one descriptor; long posts RDMA writes straight from
// the user's (cached-registration) pages into the target segment, then a small
// send that carries handler, arguments and offset.  The common case is one
// credit check, one slot pop, a header and argument copy, and VipPostSend.
#include <algorithm>
#include <cstring>

#include "am_internal.hpp"

VIPL_INSTR_DEFINE(c_bookkeeping, "am.Send bookkeeping", VIPL_INSTR_FLOW_CONTROL);
VIPL_INSTR_DEFINE(c_build, "am.Build send descriptors", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_post_send, "am.VipPostSend", VIPL_INSTR_BASE_VI);

namespace amvia {

static inline uint8_t flags_of(bool request, Category cat, bool system) {
    return uint8_t((request ? kFlagRequest : 0) | (system ? kFlagSystem : 0) | (cat << 2));
}

static inline op_t opcode_of(bool request, Category cat) {
    return op_t((request ? AM_REQUEST_M : AM_REPLY_M) + int(cat));
}

// Writes the header and arguments; returns the message length so far.
static inline uint32_t build_header(MsgHeader *m, uint8_t flags, handler_t h, int nargs,
                                    uint8_t sys, uint32_t nbytes, tag_t tag, const int32_t *args) {
    m->flags = flags;
    m->handler = h;
    m->nargs = uint8_t(nargs);
    m->sys = sys;
    m->nbytes = nbytes;
    m->tag = tag;
    int32_t *a = msg_args(m);
    for (int i = 0; i < nargs; i++) a[i] = args[i];
    return uint32_t(sizeof(MsgHeader)) + args_bytes(unsigned(nargs));
}

// Hands a filled slot to the NIC.
static inline int post_slot(Channel *c, Slot *s, uint32_t len) {
    s->desc.CS.Length = len;
    s->desc.CS.Status = 0;
    s->desc.DS[0].Local.Length = len;
    VIPL_INSTR_BEGIN(tp);
    VIP_RETURN rc = VipPostSend(c->vi, &s->desc, c->mh);
    VIPL_INSTR_END(c_post_send, tp);
    if (AMVIA_LIKELY(rc == VIP_SUCCESS)) return AM_OK;
    c->free_send[c->nfree_send++] = s;
    c->eb->sends_outstanding--;
    link_fail(c->link, VipxReturnString(rc));
    return AM_ERR_NOT_SENT;
}

static inline Slot *take_slot(Channel *c) {
    c->eb->sends_outstanding++;
    return c->free_send[--c->nfree_send];
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
        if (l->state == LinkState::Up && c->nfree_send >= slots && (!credit || c->credits > 0))
            return AM_OK;
        if (async) return AM_ERR_IN_USE;
        if (c->nfree_send < slots) reap_sends(eb, c->nsend);
        poll_bundle(eb, g.handler_depth == 0);
    }
}

void local_error(ep_t ep, int status, op_t opcode, handler_t h, const en_t *dest, tag_t tag,
                 int nargs, const int32_t *args) {
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

static int unreachable(ep_t ep, const Translation &t, Category cat, handler_t h, int nargs,
                       const int32_t *args, int rc) {
    if (rc == AM_ERR_NOT_SENT)
        local_error(ep, EUNREACHABLE, opcode_of(true, cat), h, &t.name, t.tag, nargs, args);
    return rc;
}

// Posts the RDMA writes of a long message; the caller then sends the notice.
// With wait_read, returns only once the NIC has finished reading the source
// (the RDMA descriptors completed): AM lets the caller reuse the source buffer
// as soon as a blocking request returns.
static int post_rdma(Channel *c, const SegInfo &seg, const void *src, size_t nbytes,
                     uintptr_t off, bool wait_read) {
    eb_t eb = c->link->ep->eb;
    Slot *posted[AMVIA_MAX_LONG / 64 + 1];
    int nposted = 0;
    VIP_MEM_HANDLE lmh;
    int ent = regcache_acquire(eb, src, nbytes, &lmh); // held until all chunks are posted
    if (ent == -1) return AM_ERR_RESOURCE;
    int rc = AM_OK;
    for (size_t done = 0; done < nbytes && rc == AM_OK;) {
        uint32_t n = uint32_t(std::min<size_t>(nbytes - done, g.max_chunk));
        if (c->nfree_send == 0 && (rc = wait_resources(c, 1, false, false)) != AM_OK) break;
        Slot *s = take_slot(c);
        VIP_DESCRIPTOR &d = s->desc;
        d.CS.Control = VIP_CONTROL_OP_RDMAWRITE;
        d.CS.SegCount = 2; // the address segment counts (VI spec; nicfw and verbs agree)
        d.DS[0].Remote.Data.AddressBits = seg.base + off + done;
        d.DS[0].Remote.Handle = seg.handle;
        d.DS[0].Remote.Reserved = 0;
        d.DS[1].Local.Data.Address = const_cast<uint8_t *>(static_cast<const uint8_t *>(src) + done);
        d.DS[1].Local.Handle = lmh;
        d.DS[1].Local.Length = n;
        d.CS.Length = n;
        d.CS.Status = 0;
        s->is_rdma = 1;
        if (ent >= 0) {
            regcache_pin(ent); // one pin per descriptor in flight
            s->regent = ent;
        }
        VIPL_INSTR_BEGIN(tp);
        VIP_RETURN vrc = VipPostSend(c->vi, &d, c->mh);
        VIPL_INSTR_END(c_post_send, tp);
        if (vrc != VIP_SUCCESS) {
            // Completion processing restores the slot; do it here instead.
            d.CS.Control = VIP_CONTROL_OP_SENDRECV;
            d.CS.SegCount = 1;
            d.DS[0].Local.Data.Address = s->buf;
            d.DS[0].Local.Handle = c->mh;
            d.DS[0].Local.Length = c->bufsize;
            s->is_rdma = 0;
            if (s->regent >= 0) regcache_release(s->regent);
            s->regent = -1;
            c->free_send[c->nfree_send++] = s;
            eb->sends_outstanding--;
            link_fail(c->link, VipxReturnString(vrc));
            rc = AM_ERR_NOT_SENT;
        } else {
            posted[nposted++] = s;
        }
        done += n;
    }
    if (ent >= 0) regcache_release(ent);
    // A slot is a plain send slot again (is_rdma == 0) once its RDMA completed.
    for (int i = 0; wait_read && i < nposted; i++)
        while (posted[i]->is_rdma && c->link->state != LinkState::Dead) {
            reap_sends(eb, c->nsend);
            if (posted[i]->is_rdma) poll_bundle(eb, g.handler_depth == 0);
        }
    if (wait_read && c->link->state == LinkState::Dead) rc = AM_ERR_NOT_SENT;
    return rc;
}

// Checks a long transfer against the cached remote segment; 0 or a status.
static inline int seg_status(const SegInfo &seg, size_t nbytes, uintptr_t off) {
    if (!seg.valid || off > seg.length) return EBADSEGOFF;
    if (nbytes > seg.length - off) return EBADLENGTH;
    return 0;
}

// Builds a request or reply in a send slot: header, then the medium payload or
// the long message's destination offset.  Returns the message length.
template <Category C>
static inline uint32_t build_message(Slot *s, bool request, handler_t h, int nargs, tag_t tag,
                                     const int32_t *args, const void *src, size_t nbytes, uintptr_t off) {
    VIPL_INSTR_BEGIN(t1);
    MsgHeader *m = s->buf;
    uint32_t len = build_header(m, flags_of(request, C, false), h, nargs, kSysNone, uint32_t(nbytes), tag, args);
    if constexpr (C == kMedium) {
        std::memcpy(reinterpret_cast<uint8_t *>(m) + len, src, nbytes);
        len += uint32_t(nbytes);
    } else if constexpr (C == kLong) {
        uint64_t o = off;
        std::memcpy(reinterpret_cast<uint8_t *>(m) + len, &o, 8);
        len += 8;
    }
    VIPL_INSTR_END(c_build, t1);
    return len;
}

template <Category C>
static inline int request(ep_t ep, int dest, handler_t h, const void *src, size_t nbytes,
                          uintptr_t off, bool async, int nargs, const int32_t *args) {
    VIPL_INSTR_BEGIN(t0);
    if (AMVIA_UNLIKELY(g.init_count == 0)) return AM_ERR_NOT_INIT;
    if (AMVIA_UNLIKELY(!valid_ep(ep) || unsigned(nargs) > AMVIA_MAX_SHORT || h == 0 ||
                       (C == kMedium && nbytes > AMVIA_MAX_MEDIUM) ||
                       (C == kLong && nbytes > AMVIA_MAX_LONG) || (nbytes && !src) ||
                       unsigned(dest) >= ep->xlate.size()))
        return fail(AM_ERR_BAD_ARG, "AM_Request",
                    "endpoint %p, index %d, handler %u (1..255), %d args (0..16), %zu bytes", ep,
                    dest, h, nargs, nbytes);
    if (AMVIA_UNLIKELY(g.handler_depth))
        return fail(AM_ERR_RESOURCE, "AM_Request", "a handler may not send requests (only one reply)");
    const Translation &t = ep->xlate[size_t(dest)];
    if (AMVIA_UNLIKELY(!t.inuse)) {
        local_error(ep, EBADENTRY, opcode_of(true, C), h, nullptr, 0, nargs, args);
        return fail(AM_ERR_NOT_SENT, "AM_Request", "translation %d is not mapped", dest);
    }
    Link *l = t.link;
    Channel *c = &l->ch[l->nch == 3 ? C : 0];
    if constexpr (C == kLong) {
        // The target segment must be known before data can be placed in it.
        while (l->state == LinkState::Up ? !l->seg_known : l->state == LinkState::Pending) {
            if (async) return AM_ERR_IN_USE;
            if (l->state == LinkState::Pending) link_try_up(l);
            poll_bundle(ep->eb, true);
        }
        if (l->state == LinkState::Dead)
            return unreachable(ep, t, C, h, nargs, args, AM_ERR_NOT_SENT);
        if (int st = seg_status(l->seg, nbytes, off)) {
            local_error(ep, st, AM_REQUEST_XFER_M, h, &t.name, t.tag, nargs, args);
            return fail(AM_ERR_NOT_SENT, "AM_RequestXfer",
                        "%zu bytes at offset %lu do not fit the destination segment (%lu bytes)",
                        nbytes, (unsigned long)off, (unsigned long)l->seg.length);
        }
        int slots = 1 + int((nbytes + g.max_chunk - 1) / g.max_chunk);
        if (async && (c->credits == 0 || c->nfree_send < slots)) {
            poll_bundle(ep->eb, true);
            if (l->state != LinkState::Up || c->credits == 0 || c->nfree_send < slots)
                return AM_ERR_IN_USE;
        }
    }
    if (AMVIA_UNLIKELY(l->state != LinkState::Up || c->credits == 0 || c->nfree_send == 0)) {
        int rc = wait_resources(c, 1, true, false);
        if (rc != AM_OK) return unreachable(ep, t, C, h, nargs, args, rc);
    }
    c->credits--;
    if constexpr (C == kLong) {
        int rc = post_rdma(c, l->seg, src, nbytes, off, !async);
        if (rc == AM_OK && c->nfree_send == 0) rc = wait_resources(c, 1, false, false);
        if (rc != AM_OK) {
            c->credits++;
            return unreachable(ep, t, C, h, nargs, args, rc);
        }
    }
    Slot *s = take_slot(c);
    VIPL_INSTR_END(c_bookkeeping, t0);

    const uint32_t len = build_message<C>(s, true, h, nargs, t.tag, args, src, nbytes, off);
    int rc = post_slot(c, s, len);
    if (AMVIA_UNLIKELY(rc != AM_OK)) {
        c->credits++;
        return unreachable(ep, t, C, h, nargs, args, rc);
    }
    return AM_OK;
}

#if VIASTACK_INSTR_COMPILED
// Time spent sending from inside a handler, so "Act on message" can leave it out.
struct NestedSendTimer {
    uint64_t t0 = vipl_instr_enabled() ? vipl_instr_now() : 0;
    ~NestedSendTimer() {
        if (vipl_instr_enabled() && t0) g.nested_send_cycles += vipl_instr_now() - t0;
    }
};
#else
struct NestedSendTimer {};
#endif

template <Category C>
static inline int reply(void *token, handler_t h, const void *src, size_t nbytes, uintptr_t off,
                        int nargs, const int32_t *args) {
    NestedSendTimer nested;
    VIPL_INSTR_BEGIN(t0);
    auto *t = static_cast<Token *>(token);
    if (AMVIA_UNLIKELY(!t || !t->ch || unsigned(nargs) > AMVIA_MAX_SHORT || h == 0 ||
                       (C == kMedium && nbytes > AMVIA_MAX_MEDIUM) ||
                       (C == kLong && nbytes > AMVIA_MAX_LONG) || (nbytes && !src)))
        return fail(AM_ERR_BAD_ARG, "AM_Reply", "bad token, handler %u, %d args or %zu bytes", h,
                    nargs, nbytes);
    if (AMVIA_UNLIKELY(!t->is_request))
        return fail(AM_ERR_BAD_ARG, "AM_Reply", "a reply handler may not reply");
    if (AMVIA_UNLIKELY(t->replied))
        return fail(AM_ERR_BAD_ARG, "AM_Reply", "a request handler may reply only once");
    Channel *c = t->ch;
    uint32_t need = uint32_t(sizeof(MsgHeader)) + args_bytes(unsigned(nargs)) +
                    (C == kMedium ? uint32_t(nbytes) : C == kLong ? 8u : 0u);
    if (AMVIA_UNLIKELY(need > c->bufsize))
        return fail(AM_ERR_BAD_ARG, "AM_Reply",
                    "AMVIAv1: a %u-byte reply does not fit the request's VI (%u-byte buffers); "
                    "replies travel on their request's VI",
                    need, c->bufsize);
    if constexpr (C == kLong) {
        Link *l = c->link;
        if (!l->seg_known)
            return fail(AM_ERR_RESOURCE, "AM_ReplyXfer", "the requester's segment is unknown");
        if (int st = seg_status(l->seg, nbytes, off)) {
            local_error(t->ep, st, AM_REPLY_XFER_M, h, &l->remote, t->msg->tag, nargs, args);
            return fail(AM_ERR_NOT_SENT, "AM_ReplyXfer", "%zu bytes at offset %lu exceed the segment",
                        nbytes, (unsigned long)off);
        }
        int rc = post_rdma(c, l->seg, src, nbytes, off, true);
        if (rc != AM_OK) return rc;
    }
    if (AMVIA_UNLIKELY(c->nfree_send == 0)) {
        int rc = wait_resources(c, 1, false, false);
        if (rc != AM_OK) return rc;
    }
    Slot *s = take_slot(c);
    VIPL_INSTR_END(c_bookkeeping, t0);

    const uint32_t len = build_message<C>(s, false, h, nargs, t->msg->tag, args, src, nbytes, off);
    t->replied = 1;
    return post_slot(c, s, len);
}

int send_system_request(ep_t ep, Link *l, uint8_t sys, const int32_t *args, int nargs,
                        const void *payload, uint32_t nbytes) {
    Channel *c = &l->ch[0]; // v1: the short VI
    if (l->state != LinkState::Up || c->credits == 0 || c->nfree_send == 0) {
        int rc = wait_resources(c, 1, true, false);
        if (rc != AM_OK) return rc;
    }
    c->credits--;
    Slot *s = take_slot(c);
    MsgHeader *m = s->buf;
    uint32_t len = build_header(m, flags_of(true, kMedium, true), 0, nargs, sys, nbytes, 0, args);
    if (nbytes) std::memcpy(reinterpret_cast<uint8_t *>(m) + len, payload, nbytes);
    int rc = post_slot(c, s, len + nbytes);
    if (rc != AM_OK) c->credits++;
    return rc;
}

// The layer's own reply: returns the request's credit (kSysCredit) or hands
// the request back refused (kSysReturned).  Never needs a credit.
int send_system_reply(Token *t, uint8_t sys, uint32_t nbytes_field) {
    Channel *c = t->ch;
    if (AMVIA_UNLIKELY(c->nfree_send == 0)) {
        int rc = wait_resources(c, 1, false, false);
        if (rc != AM_OK) return rc;
    }
    Slot *s = take_slot(c);
    MsgHeader *m = s->buf;
    const MsgHeader *req = t->msg;
    uint32_t len;
    if (sys == kSysReturned)
        len = build_header(m, uint8_t(kFlagSystem | (req->flags & 0x0c)), req->handler, req->nargs,
                           sys, nbytes_field, req->tag, msg_args(const_cast<MsgHeader *>(req)));
    else
        len = build_header(m, kFlagSystem, 0, 0, sys, 0, 0, nullptr);
    t->replied = 1;
    return post_slot(c, s, len);
}

} // namespace amvia

using namespace amvia;

extern "C" {

int AMVIA_Request(ep_t ep, int dest, handler_t h, int nargs, const int32_t *args) {
    return request<kShort>(ep, dest, h, nullptr, 0, 0, false, nargs, args);
}
int AMVIA_RequestI(ep_t ep, int dest, handler_t h, void *src, size_t nbytes, int nargs,
                   const int32_t *args) {
    return request<kMedium>(ep, dest, h, src, nbytes, 0, false, nargs, args);
}
int AMVIA_RequestXfer(ep_t ep, int dest, handler_t h, void *src, size_t nbytes,
                      uintptr_t dest_offset, int async, int nargs, const int32_t *args) {
    return request<kLong>(ep, dest, h, src, nbytes, dest_offset, async != 0, nargs, args);
}
int AMVIA_Reply(void *token, handler_t h, int nargs, const int32_t *args) {
    return reply<kShort>(token, h, nullptr, 0, 0, nargs, args);
}
int AMVIA_ReplyI(void *token, handler_t h, void *src, size_t nbytes, int nargs,
                 const int32_t *args) {
    return reply<kMedium>(token, h, src, nbytes, 0, nargs, args);
}
int AMVIA_ReplyXfer(void *token, handler_t h, void *src, size_t nbytes, uintptr_t dest_offset,
                    int nargs, const int32_t *args) {
    return reply<kLong>(token, h, src, nbytes, dest_offset, nargs, args);
}

} // extern "C"
