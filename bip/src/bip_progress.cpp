// bip_progress.cpp - what every BIP call runs to make progress: packets from
// the receive CQ (queued per tag, or matched to the pending receive), credit
// return, the pending send and receive moved on, send slots reaped.
#include <sched.h>

#include <cstring>

#include "bip_internal.hpp"

namespace bip {
namespace {

Link *link_of_vi(VIP_VI_HANDLE vi) {
    for (Link *l : g.links)
        if (l->ch.vi() == vi) return l;
    return nullptr;
}

// Credits are counted on, and returned through, the link we send to the
// peer on (for the self-connection that is not the one packets arrive on).
void owe_credit(Link *from) {
    Link *t = g.tx[from->peer];
    ++t->owed;
    if (t->ch.owe_one(t->credit_every)) t->credit_due = true;
}

void send_credits(Link *t) {
    if (t->dead || !t->up) return;
    if (!t->ch.has_free_send()) reap_sends(t);
    if (!t->ch.has_free_send()) return;
    post_packet(t, t->ch.take_send(), kCredit, 0, 0, 0, 0);
}

void deliver(Link *l, chan::Slot *s) {
    const auto *h = reinterpret_cast<const Header *>(s->buf);
    if (h->credits) g.tx[l->peer]->ch.return_credits(int(h->credits));
    switch (h->type) {
    case kEager:
    case kRts: {
        if (h->tag >= BIP_NTAGS) {
            report("protocol error: rank %u sent tag %u; dropped", l->peer, h->tag);
            release_slot(l, s, true);
            return;
        }
        const Queued q{l, s};
        TagQueue &tq = g.queues[h->tag];
        // Straight to the pending receive only if nothing of this tag is
        // queued before it: messages are received in order per tag.
        if (tq.count == 0 && try_match(g.recv, q)) return;
        tq.push(q);
        return;
    }
    case kCts:
    case kRefuse: {
        RendezvousTarget t{};
        std::memcpy(&t, s->buf + sizeof(Header), sizeof t);
        const Header hc = *h;
        release_slot(l, s, false);
        cts_arrived(l, &hc, &t, hc.type == kRefuse);
        return;
    }
    case kFin: {
        const Header hc = *h;
        release_slot(l, s, false);
        fin_arrived(l, &hc);
        return;
    }
    case kBye:
        l->bye = true;
        release_slot(l, s, false);
        return;
    case kCredit: release_slot(l, s, false); return;
    default:
        report("protocol error: packet of type %u from rank %u; dropped", h->type, l->peer);
        release_slot(l, s, false);
    }
}

} // namespace

void release_slot(Link *l, chan::Slot *s, bool owe) {
    if (!l->dead) {
        VIP_RETURN rc = l->ch.repost_recv(s, kInstr);
        if (rc != VIP_SUCCESS && !g.finalizing) {
            report("VipPostRecv (from rank %u): %s", l->peer, VipxReturnString(rc));
            l->dead = true;
        }
    }
    if (owe) owe_credit(l);
}

void reap_sends(Link *l) {
    VIP_DESCRIPTOR *d;
    while (l->ch.in_flight() && chan::Channel::send_done(l->ch.vi(), &d, kInstr) == VIP_SUCCESS) {
        l->ch.recycle_send(chan::slot_of(d), kInstr, [l](chan::Slot *s) {
            if (s->rdma && g.send.writes_out && g.send.link == l) --g.send.writes_out;
            if ((s->desc.CS.Status & VIP_STATUS_ERROR_MASK) && !l->dead && !g.finalizing) {
                char why[128];
                l->dead = true;
                report("send to rank %u failed: %s", l->peer, VipxStatusString(s->desc.CS.Status, why, sizeof why));
            }
        });
    }
}

void post_packet(Link *l, chan::Slot *s, uint8_t type, uint16_t tag, uint32_t len, uint32_t seq, uint32_t payload) {
    auto *h = reinterpret_cast<Header *>(s->buf);
    h->type = type;
    h->pad = 0;
    h->tag = tag;
    h->credits = l->ch.take_owed(); // piggy-back whatever we owe the peer
    l->owed = 0;
    l->credit_due = false;
    h->len = len;
    h->seq = seq;
    chan::Channel::set_message(s, uint32_t(sizeof(Header)) + payload);
    VIP_RETURN rc = l->ch.post_send(s, kInstr);
    if (rc != VIP_SUCCESS) {
        report("VipPostSend to rank %u: %s", l->peer, VipxReturnString(rc));
        l->dead = true;
        l->ch.untake_send(s);
    }
}

bool try_match(RecvOp &r, const Queued &q) {
    const auto *h = reinterpret_cast<const Header *>(q.slot->buf);
    if (r.state != RecvState::kWaiting || r.tag != h->tag) return false;
    r.source = q.link->peer;
    r.len = h->len;
    if (h->type == kEager) {
        // BIP's small-message path: the receiver's buffer, then a copy into
        // the user's.
        const uint32_t n = h->len <= r.maxlen ? h->len : r.maxlen;
        if (n) std::memcpy(r.buf, q.slot->buf + sizeof(Header), n);
        r.result = h->len <= r.maxlen ? BIP_OK : BIP_ERR_TRUNCATED;
        r.state = RecvState::kDone;
        release_slot(q.link, q.slot, true);
        return true;
    }
    // A long message: the receive is posted, so its sender may write now.
    r.seq = h->seq;
    r.refuse = h->len > r.maxlen;
    r.state = RecvState::kCtsWait;
    release_slot(q.link, q.slot, true);
    recv_advance();
    return true;
}

bool progress() {
    bool work = false;
    // At most one receive queue's worth per call, so a sender that never
    // stops cannot keep a test call from returning.
    for (int i = 0; i < 64; i++) {
        VIP_VI_HANDLE vi;
        if (chan::Channel::cq_done(g.rcq, &vi, kInstr.cq_recv) != VIP_SUCCESS) break;
        Link *l = link_of_vi(vi);
        VIP_DESCRIPTOR *d;
        if (!l || chan::Channel::recv_done(vi, &d, kInstr) != VIP_SUCCESS) continue;
        work = true;
        chan::Slot *s = chan::slot_of(d);
        if (s->desc.CS.Status & VIP_STATUS_ERROR_MASK) {
            if (!l->dead && !g.finalizing) {
                char why[128];
                report("receive from rank %u failed: %s", l->peer,
                       VipxStatusString(s->desc.CS.Status, why, sizeof why));
            }
            l->dead = true;
            continue;
        }
        deliver(l, s);
    }
    const SendState ss = g.send.state;
    if (ss != SendState::kIdle && ss != SendState::kDone) { // (kCtsWait: only the peer's death moves it)
        send_advance();
        work |= g.send.state != ss;
    }
    if (g.recv.state == RecvState::kCtsWait) recv_advance();
    for (Link *t : g.tx)
        if (t->credit_due) send_credits(t);
    if (work) {
        g.idle_polls = 0;
    } else if (++g.idle_polls >= 256) {
        // Idle for a while: credits owed below the batch size go back now,
        // so a sender waiting for them blocks only while our buffers are
        // really full.
        for (Link *t : g.tx)
            if (t->owed) send_credits(t);
    }
    return work;
}

void wait_step() {
    if (progress()) {
        vipl_wait::progress(g.wait);
        return;
    }
    vipl_wait::idle_yield(g.wait);
}

} // namespace bip
