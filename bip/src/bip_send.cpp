// bip_send.cpp - the sending side: argument checks and the one-pending rule,
// small messages copied into a credited packet, long messages announced by
// kRts and, once the receive is posted (kCts), RDMA-written into the
// receive buffer in fragments of the adaptive size, then kFin.
#include <algorithm>
#include <cstring>

#include "bip_internal.hpp"

namespace bip {
namespace {

// A send slot with a credit on l, or null (no waiting: progress retries).
chan::Slot *credited_slot(Link *l) {
    if (!l->ch.has_credit()) return nullptr;
    if (!l->ch.has_free_send()) reap_sends(l);
    if (!l->ch.has_free_send()) return nullptr;
    l->ch.take_credit();
    return l->ch.take_send();
}

chan::Slot *free_slot(Link *l) {
    if (!l->ch.has_free_send()) reap_sends(l);
    return l->ch.has_free_send() ? l->ch.take_send() : nullptr;
}

void finish(SendOp &o, int result) {
    buffer_release(&o.reg);
    o.result = result;
    o.state = SendState::kDone;
}

// Posts the writes that free send slots allow, then kFin after the last
// (same VI: delivered after the data).
void post_writes(SendOp &o) {
    Link *l = o.link;
    while (!o.failed && o.posted < o.len) {
        chan::Slot *s = free_slot(l);
        if (!s) return;
        const uint32_t n = std::min(o.fragment, o.len - o.posted);
        VIP_RETURN rc =
            l->ch.post_rdma_write(s, o.remote_addr + o.posted, o.remote_mh, o.buf + o.posted, o.reg.mh, n, kInstr);
        if (rc != VIP_SUCCESS) {
            report("VipPostSend (RDMA write) to rank %u: %s", l->peer, VipxReturnString(rc));
            l->dead = true;
            return;
        }
        ++o.writes_out;
        o.posted += n;
    }
    if (!o.fin_sent) {
        chan::Slot *s = free_slot(l);
        if (!s) return;
        post_packet(l, s, kFin, o.tag, o.failed ? kFinFailed : o.len, o.seq, 0);
        o.fin_sent = true;
    }
}

int start(const char *fn, int dest, int tag, const void *buf, size_t len) {
    if (!g.init) return fail(BIP_ERR_NOT_INIT, fn, "call bip_init first");
    if (dest < 0 || unsigned(dest) >= g.size)
        return fail(BIP_ERR_BAD_DEST, fn, "rank %d is not in the job (0..%u)", dest, g.size - 1);
    if (tag < 0 || tag >= BIP_NTAGS) return fail(BIP_ERR_BAD_TAG, fn, "tag %d is outside 0..%d", tag, BIP_NTAGS - 1);
    if (!buf && len) return fail(BIP_ERR_NULL_BUF, fn, "NULL buffer for %zu bytes", len);
    if (len > BIP_MAX_MESSAGE) return fail(BIP_ERR_TOO_LONG, fn, "%zu bytes > BIP_MAX_MESSAGE", len);
    if (g.send.state != SendState::kIdle)
        return fail(BIP_ERR_PENDING, fn, "a send is already pending (one per process: bip_swait it first)");
    SendOp &o = g.send;
    reset_in_place(o);
    o.link = g.tx[unsigned(dest)];
    o.dest = unsigned(dest);
    o.tag = uint16_t(tag);
    o.buf = static_cast<const uint8_t *>(buf);
    o.len = uint32_t(len);
    if (o.len <= o.link->eager_max) {
        o.state = SendState::kEagerWait;
    } else {
        o.state = SendState::kRtsWait;
        o.seq = g.next_seq++;
    }
    send_advance();
    return BIP_OK;
}

// 1 done (the pending send is over), 0 not yet.
int done_result(int *rc) {
    if (g.send.state != SendState::kDone) return 0;
    *rc = g.send.result;
    reset_in_place(g.send);
    return 1;
}

} // namespace

void send_advance() {
    SendOp &o = g.send;
    Link *l = o.link;
    if (o.state == SendState::kIdle || o.state == SendState::kDone) return;
    if (l->dead) {
        finish(o, BIP_ERR_RESOURCE);
        return;
    }
    switch (o.state) {
    case SendState::kEagerWait: {
        // Blocks (stays pending) only while the receiver's buffers are full.
        chan::Slot *s = credited_slot(l);
        if (!s) return;
        if (o.len) std::memcpy(s->buf + sizeof(Header), o.buf, o.len);
        post_packet(l, s, kEager, o.tag, o.len, 0, o.len);
        finish(o, l->dead ? BIP_ERR_RESOURCE : BIP_OK);
        return;
    }
    case SendState::kRtsWait: {
        chan::Slot *s = credited_slot(l);
        if (!s) return;
        post_packet(l, s, kRts, o.tag, o.len, o.seq, 0);
        o.state = SendState::kCtsWait;
        return;
    }
    case SendState::kWriting:
        post_writes(o);
        reap_sends(l);
        if (o.fin_sent && o.writes_out == 0) finish(o, o.failed ? BIP_ERR_RESOURCE : BIP_OK);
        return;
    default: return;
    }
}

void cts_arrived(Link *l, const Header *h, const RendezvousTarget *t, bool refused) {
    SendOp &o = g.send;
    if (o.state != SendState::kCtsWait || o.dest != l->peer || o.seq != h->seq) {
        report("protocol error: %s from rank %u for long send %u, which is not waiting for it",
               refused ? "refusal" : "clear-to-send", l->peer, h->seq);
        return;
    }
    if (refused) {
        finish(o, BIP_ERR_TRUNCATED);
        return;
    }
    if (!buffer_register(&o.reg, o.buf, o.len, false)) {
        report("registering %u bytes to send to rank %u failed", o.len, o.dest);
        o.failed = true;
    }
    o.remote_addr = t->addr;
    o.remote_mh = t->mh;
    o.fragment = fragment_for(o.len);
    o.state = SendState::kWriting;
    send_advance();
}

} // namespace bip

using namespace bip;

extern "C" {

int bip_isend(int dest, int tag, const void *buf, size_t len) { return start("bip_isend", dest, tag, buf, len); }

int bip_stest(void) {
    if (!g.init) return fail(BIP_ERR_NOT_INIT, "bip_stest", "call bip_init first");
    if (g.send.state == SendState::kIdle) return fail(BIP_ERR_NO_PENDING, "bip_stest", "no send is pending");
    progress();
    int rc;
    if (!done_result(&rc)) return 0;
    return rc < 0 ? fail(rc, "bip_stest", "the send failed") : 1;
}

int bip_swait(void) {
    if (!g.init) return fail(BIP_ERR_NOT_INIT, "bip_swait", "call bip_init first");
    if (g.send.state == SendState::kIdle) return fail(BIP_ERR_NO_PENDING, "bip_swait", "no send is pending");
    int rc;
    while (!done_result(&rc)) wait_step();
    return rc < 0 ? fail(rc, "bip_swait", "the send failed") : BIP_OK;
}

int bip_send(int dest, int tag, const void *buf, size_t len) {
    int rc = start("bip_send", dest, tag, buf, len);
    if (rc != BIP_OK) return rc;
    return bip_swait();
}

} // extern "C"
