// fm_extract.cpp - the receiving side: extraction from the receive CQ,
// dispatch of packets to handlers (started on a message's first packet,
// resumed as later packets arrive), FM_receive, credit return.
#include <cstring>
#include <memory>
#include <new>

#include "fm_internal.hpp"

namespace fm {
namespace {

Link *link_of_vi(VIP_VI_HANDLE vi) {
    for (Link *l : g.links)
        if (l->ch.vi() == vi) return l;
    return nullptr;
}

Inbound *inbound_new(Link *l, unsigned handler, uint32_t length) {
    Inbound *in;
    if (!g.free_inbound.empty()) {
        in = g.free_inbound.back();
        g.free_inbound.pop_back();
    } else {
        in = new Inbound();
        in->inbound = true;
    }
    // Every packet of the message can be queued at once: at most the link's receive slots.
    if (in->ring.size() < l->ch.nrecv()) in->ring.resize(l->ch.nrecv());
    in->link = l;
    in->sender = l->peer;
    in->fn = g.handlers[handler].fn;
    in->co = nullptr;
    in->length = length;
    in->consumed = in->offset = 0;
    in->complete = in->done = in->waiting = in->rdma_pending = in->rv_owed = false;
    in->reg_entry = -1;
    in->head = in->count = 0;
    return in;
}

void inbound_free(Inbound *in) {
    if (in->co) co_put(in->co);
    in->co = nullptr;
    g.free_inbound.push_back(in);
}

// Posts the answer to in's rendezvous: t names the buffer for the rest of
// the message, or (len 0) declines it.  It takes no credit (each link keeps
// a receive slot for it, and a sender has one rendezvous per link waiting),
// but needs a send slot: we wait for one, extracting, since the sender
// waits for this answer.
void answer_rendezvous(Inbound *in, RdmaTarget t) {
    in->rv_owed = false;
    Link *l = g.tx[in->sender];
    while (!l->ch.has_free_send() && !l->dead) {
        reap_sends(l);
        if (!l->ch.has_free_send()) progress_wait();
    }
    if (l->dead) return;
    t.answer = 1;
    chan::Slot *s = l->ch.take_send();
    std::memcpy(s->buf + sizeof(PacketHeader), &t, sizeof t);
    post_packet(l, s, 0, kRdmaTarget, in->sid, 0, sizeof t);
}

void decline_rendezvous(Inbound *in) {
    if (in->rv_owed) answer_rendezvous(in, RdmaTarget{});
}

// The handler returned: its unread packets go back to the NIC; the message's
// later packets (if any) are dropped as they arrive.
void finish(Inbound *in) {
    in->done = true;
    decline_rendezvous(in); // the rest comes as packets, and is dropped
    while (in->count) {
        release_slot(in->link, in->front(), true);
        in->pop();
    }
    if (in->complete) inbound_free(in);
}

void run_direct(Inbound *in) {
    Inbound *prev = g.current;
    g.current = in;
    in->fn(in, in->sender);
    g.current = prev;
    finish(in);
}

void resume(Inbound *in) {
    Inbound *prev = g.current;
    g.current = in;
    co_resume(in->co);
    g.current = prev;
    if (in->co->finished) finish(in);
}

// One received packet.  Returns the message bytes it carried.
uint32_t deliver(Link *l, chan::Slot *s) {
    const auto *h = reinterpret_cast<const PacketHeader *>(s->buf);
    if (h->credits) l->ch.return_credits(int(h->credits));
    const uint8_t flags = h->flags;
    if (flags & kRdmaTarget) {
        RdmaTarget t;
        std::memcpy(&t, s->buf + sizeof(PacketHeader), sizeof t);
        const PacketHeader hc = *h;
        release_slot(l, s, !t.answer); // a rendezvous answer took no credit
        rdma_target_arrived(l, &hc, t);
        return 0;
    }
    if (flags & (kCreditOnly | kBye)) {
        if (flags & kBye) l->bye = true;
        release_slot(l, s, (flags & kBye) != 0); // a bye took a credit
        return 0;
    }
    const uint32_t len = h->len;
    if (flags & kBuffer) {
        // The credit is owed before the handler runs, so a reply it sends
        // carries it back (as an AM reply does); the buffer is reposted just
        // after.  The receive queue has room for one such buffer per link:
        // 2k + 1 buffers for k credits (channel.hpp, layout_for).
        FM_buffer_handler fn = g.handlers[h->handler].bfn;
        if (!fn) {
            report("node %u sent a message for buffer handler %u, which is not registered here; dropped", l->peer,
                   h->handler);
            release_slot(l, s, true);
            return len;
        }
        if (!l->early_credit) {
            l->early_credit = true;
            owe_credit(l);
            fn(s->buf + sizeof(PacketHeader), len, l->peer);
            l->early_credit = false;
            release_slot(l, s, false);
            return len;
        }
        // Nested: a buffer handler of this link is waiting for credits in a
        // send and extracting.  Owing this credit early too would let the
        // peer send one packet more than the receive queue holds per nesting
        // level (VIP_ERROR_RECVQ_EMPTY, the link lost); holding the buffer
        // until the handler returns could leave every buffer held by handlers
        // that wait for credits on both sides (deadlock).  So the message is
        // copied out and its buffer reposted before the handler runs (only
        // on this rare path: no copy for a handler that is not nested).
        std::unique_ptr<uint8_t[]> copy(new (std::nothrow) uint8_t[len ? len : 1]);
        if (!copy) {
            report("no memory to copy a nested handler's message (%u bytes) from node %u; dropped", len, l->peer);
            release_slot(l, s, true);
            return len;
        }
        std::memcpy(copy.get(), s->buf + sizeof(PacketHeader), len);
        release_slot(l, s, true);
        fn(copy.get(), len, l->peer);
        return len;
    }
    Inbound *in;
    if (flags & kFirst) {
        in = inbound_new(l, h->handler, h->msg_len);
        in->sid = h->stream;
        in->rv_owed = (flags & kRendezvous) != 0;
        if (!in->fn) {
            report("node %u sent a message for handler %u, which is not registered here; dropped", l->peer, h->handler);
            in->done = true;
        }
        if (!(flags & kLast)) l->current[h->stream] = in;
    } else {
        in = l->current[h->stream];
        if (!in) {
            report("protocol error: packet of stream %u from node %u without a first packet", h->stream, l->peer);
            release_slot(l, s, true);
            return len;
        }
    }
    if (flags & kLast) {
        in->complete = true;
        l->current[h->stream] = nullptr;
    }
    if (in->done) { // the handler returned before this packet (or does not exist)
        decline_rendezvous(in);
        release_slot(l, s, true);
        if (in->complete) inbound_free(in);
        return len;
    }
    in->push(s);
    if (flags & kFirst) {
        if (in->complete) {
            // The whole message is here: FM_receive can never wait, so the
            // handler runs on this stack (no context switch).
            run_direct(in);
        } else {
            in->co = co_get();
            if (!in->co) {
                report("no memory for a handler stack (%zu bytes); message from node %u dropped", g.stack_size,
                       l->peer);
                finish(in);
                return len;
            }
            in->co->in = in;
            resume(in);
        }
    } else if (in->waiting) {
        resume(in);
    }
    return len;
}

// Message bytes queued in `in` and not yet read.
uint32_t queued_bytes(const Inbound *in) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < in->count; i++)
        n += reinterpret_cast<const PacketHeader *>(in->ring[(in->head + i) % in->ring.size()]->buf)->len;
    return n - in->offset;
}

// Layer interleaving [FM2]: the handler has named the buffer for len bytes
// of which most have not arrived.  Register it and tell the sender to write
// the missing part there by RDMA; the bytes already here (or already sent)
// are copied from their packets as usual (the sender may have sent more
// packets before the request reaches it).  Only while at least (k + 2)
// packets of the message are still to come (g.rdma_min): the sender cannot
// have finished the message before the request reaches it.  Any failure
// leaves the message on the packet path.
// The named buffer is registered RDMA-write enabled for the transfer, through
// the cache of such registrations where registering pins nothing (a buffer
// received into again costs a table scan, not VipRegisterMem and
// VipDeregisterMem); where it pins, a cached entry could name pages the
// program has since unmapped and the bytes would be lost, so each transfer
// registers its own.
bool register_target(Inbound *in, void *buf, uint32_t len) {
    in->reg_base = buf;
    in->reg_entry = -1;
    if (g.cache_dst) {
        in->reg_entry = g.dst_regs.acquire(buf, len, &in->reg_mh, [] { progress_wait(); });
        return in->reg_entry != chan::RegCache::kNone;
    }
    VIP_MEM_ATTRIBUTES ma{};
    ma.Ptag = g.ptag;
    ma.EnableRdmaWrite = VIP_TRUE;
    ma.EnableRdmaRead = VIP_FALSE;
    return VipRegisterMem(g.nic, buf, len, &ma, &in->reg_mh) == VIP_SUCCESS;
}

void release_target(Inbound *in) {
    if (in->reg_entry >= 0) g.dst_regs.release(in->reg_entry);
    else VipDeregisterMem(g.nic, in->reg_base, in->reg_mh);
    in->reg_entry = -1;
}

void request_rdma(Inbound *in, void *buf, uint32_t len) {
    const uint32_t queued = queued_bytes(in);
    if (queued >= len || len - queued < g.rdma_min || in->length - in->consumed - queued < g.rdma_min) return;
    Link *t = g.tx[in->sender];
    if (!in->rv_owed) {
        // Without a rendezvous the request takes a credit, but never waits
        // for one: the credits to the sender may be exactly those this
        // handler has yet to give back by reading (a node sending to
        // itself), and waiting would deadlock.
        if (!t->ch.has_free_send()) reap_sends(t);
        if (t->dead || !t->ch.has_credit() || !t->ch.has_free_send()) return;
    }
    if (!register_target(in, buf, len)) return; // a rendezvous is declined when the handler waits
    RdmaTarget rt{};                            // from the first byte not here yet to the end of buf
    rt.addr = reinterpret_cast<uint64_t>(buf) + queued;
    rt.mh = uint32_t(in->reg_mh);
    rt.offset = in->consumed + queued;
    rt.len = len - queued;
    in->rdma_pending = true;
    if (in->rv_owed) {
        answer_rendezvous(in, rt);
        if (t->dead) { // never sent: nothing will be written
            in->rdma_pending = false;
            release_target(in);
        }
        return;
    }
    t->ch.take_credit();
    chan::Slot *s = t->ch.take_send();
    std::memcpy(s->buf + sizeof(PacketHeader), &rt, sizeof rt);
    post_packet(t, s, 0, kRdmaTarget, in->sid, 0, sizeof rt);
}

} // namespace

void release_slot(Link *l, chan::Slot *s, bool owe) {
    if (l->dead) return;
    VIP_RETURN rc = l->ch.repost_recv(s, kInstr);
    if (rc != VIP_SUCCESS) {
        if (!g.finalizing) report("VipPostRecv (node %u): %s", l->peer, VipxReturnString(rc));
        l->dead = true;
        return;
    }
    if (owe) owe_credit(l);
}

void owe_credit(Link *l) {
    if (l->ch.owe_one(g.credit_every) && !l->credit_due) {
        l->credit_due = true;
        ++g.credit_due_links;
    }
}

int extract(uint32_t maxbytes) {
    uint64_t bytes = 0;
    // At most one receive queue's worth per link per call: a sender that
    // never stops cannot keep FM_extract(FM_EXTRACT_ALL) from returning.
    size_t budget = g.links.size() * g.layout.nrecv;
    while (budget--) {
        VIP_VI_HANDLE vi = g.stash_vi;
        if (vi) g.stash_vi = nullptr;
        else if (chan::Channel::cq_done(g.rcq, &vi, kInstr.cq_recv) != VIP_SUCCESS) break;
        Link *l = link_of_vi(vi);
        VIP_DESCRIPTOR *d;
        if (!l || chan::Channel::recv_done(vi, &d, kInstr) != VIP_SUCCESS) continue;
        chan::Slot *s = chan::slot_of(d);
        if (s->desc.CS.Status & VIP_STATUS_ERROR_MASK) {
            // Flushed at the peer's disconnect, or a transport error: the link is gone.
            if (!l->dead && !g.finalizing && !l->bye) {
                char why[128];
                report("receive from node %u failed: %s", l->peer,
                       VipxStatusString(s->desc.CS.Status, why, sizeof why));
            }
            l->dead = true;
            continue;
        }
        bytes += deliver(l, s);
        if (bytes >= maxbytes) break;
    }
    if (g.credit_due_links)
        for (Link *l : g.links) try_send_credits(l);
    return int(bytes > uint64_t(INT32_MAX) ? INT32_MAX : bytes);
}

namespace {
// Whether everything a wait can be waiting for arrives as a receive: no send
// or RDMA write of ours is in flight (its completion is reaped by polling the
// send queue, not signalled on the receive CQ; the completed ones are reaped
// here) and no credit is owed.
bool only_receives_pending() {
    if (g.credit_due_links) return false;
    for (Link *l : g.links) {
        if (l->dead || !l->ch.in_flight()) continue;
        reap_sends(l); // completed sends stay counted until reaped
        if (l->ch.in_flight()) return false;
    }
    return true;
}
} // namespace

// One idle step of every FM wait (credits, send slots, FM_receive of bytes
// not yet here, finalize): extract, and when the window of idle polls is used
// up give the CPU away by the policy of vipl_wait.h.  In block mode the wait
// sleeps in VipCQWait on the receive CQ (at most 1 ms, so a caller waiting on
// something else still gets to look) when only a receive can end it; the
// completion it takes is handled first by the next extract.
void progress_wait() { after_poll(extract(FM_EXTRACT_ALL)); }

void after_poll(int got) {
    if (got > 0) {
        vipl_wait::progress(g.wait);
        return;
    }
    if (!vipl_wait::idle(g.wait)) return;
    vipl_wait::give_up_cpu(g.wait, [] {
        if (g.wait.mode == vipl_wait::Mode::block && !g.stash_vi && only_receives_pending()) {
            VIP_VI_HANDLE vi;
            VIP_BOOLEAN is_recv;
            if (VipCQWait(g.rcq, 1, &vi, &is_recv) == VIP_SUCCESS) g.stash_vi = vi;
            ++g.blocked_waits;
        } else {
            sched_yield();
        }
    });
}

} // namespace fm

using namespace fm;

extern "C" {

int FM_extract(unsigned maxbytes) {
    if (!g.init) return fail(FM_ERR_NOT_INIT, "FM_extract", "call FM_initialize first");
    // The program's own polling loop: the waiting policy applies to it as to
    // FM's internal waits (a loop of empty FM_extract calls gives the CPU away
    // once the window is used up, as an empty AM_Poll does).
    const int got = extract(maxbytes);
    after_poll(got);
    return got;
}

int FM_receive(void *buf, FM_stream *stream, unsigned len) {
    if (!g.init) return fail(FM_ERR_NOT_INIT, "FM_receive", "call FM_initialize first");
    if (!stream || !stream->inbound) return fail(FM_ERR_BAD_ARG, "FM_receive", "not the stream passed to a handler");
    auto *in = static_cast<Inbound *>(stream);
    if (in != g.current || in->done)
        return fail(FM_ERR_STATE, "FM_receive", "called outside the handler of this stream");
    if (len && !buf) return fail(FM_ERR_BAD_ARG, "FM_receive", "NULL buffer");
    if (len > in->length - in->consumed)
        return fail(FM_ERR_TOO_LONG, "FM_receive", "%u bytes asked, the message holds %u more", len,
                    in->length - in->consumed);
    auto *p = static_cast<uint8_t *>(buf);
    if (g.rdma_min && len >= g.rdma_min && in->co && !in->complete && !in->rdma_pending) request_rdma(in, buf, len);
    while (len) {
        if (in->count == 0) {
            if (!in->co) return fail(FM_ERR_STATE, "FM_receive", "message data missing");
            // Not arrived yet: back to the extraction that resumed us; it
            // resumes us when the next packet of this message is delivered.
            // A sender waiting on our rendezvous answer sends them once we
            // decline.
            decline_rendezvous(in);
            in->waiting = true;
            ++g.suspended;
            co_suspend(in->co);
            --g.suspended;
            in->waiting = false;
            continue;
        }
        chan::Slot *s = in->front();
        const auto *h = reinterpret_cast<const PacketHeader *>(s->buf);
        if (h->flags & kRdmaDone) {
            // The sender wrote the next h->len bytes straight into buf.
            const uint32_t n = h->len;
            if (!in->rdma_pending || n > len) {
                report("protocol error: RDMA completion of %u bytes from node %u not asked for", n, in->sender);
                return fail(FM_ERR_RESOURCE, "FM_receive", "protocol error");
            }
            in->pop();
            in->offset = 0;
            release_slot(in->link, s, true);
            release_target(in);
            in->rdma_pending = false;
            g.rdma_bytes += n;
            p += n;
            len -= n;
            in->consumed += n;
            continue;
        }
        uint32_t n = std::min<uint32_t>(len, h->len - in->offset);
        std::memcpy(p, s->buf + sizeof(PacketHeader) + in->offset, n);
        p += n;
        len -= n;
        in->offset += n;
        in->consumed += n;
        if (in->offset == h->len) {
            in->pop();
            in->offset = 0;
            release_slot(in->link, s, true);
        }
    }
    return FM_OK;
}

unsigned FM_suspended_handlers(void) { return g.suspended; }

unsigned long long FM_rdma_bytes(void) { return g.rdma_bytes; }
unsigned long long FM_blocked_waits(void) { return g.blocked_waits; }

} // extern "C"
