// bip_recv.cpp - the receiving side: argument checks and the one-pending
// rule, matching the tag's queue, a long message's kCts (the receive buffer,
// registered for RDMA write) or kRefuse, its kFin.
#include <cstring>

#include "bip_internal.hpp"

namespace bip {

void recv_advance() {
    RecvOp &r = g.recv;
    if (r.state != RecvState::kCtsWait) return;
    Link *t = g.tx[r.source];
    if (t->dead) {
        r.result = BIP_ERR_RESOURCE;
        r.state = RecvState::kDone;
        return;
    }
    // kCts and kRefuse take no credit (one receive pending per process:
    // at most one in flight per link), only a send slot.
    if (!t->ch.has_free_send()) reap_sends(t);
    if (!t->ch.has_free_send()) return;
    bool refuse = r.refuse;
    if (!refuse) {
        if (!buffer_register(&r.reg, r.buf, r.len, true)) {
            report("registering the %u-byte receive buffer for rank %u failed; the message is refused", r.len,
                   r.source);
            refuse = true;
            r.result = BIP_ERR_RESOURCE;
        }
    }
    chan::Slot *s = t->ch.take_send();
    if (refuse) {
        if (r.result == BIP_OK) r.result = BIP_ERR_TRUNCATED;
        post_packet(t, s, kRefuse, r.tag, r.len, r.seq, uint32_t(sizeof(RendezvousTarget)));
        r.state = RecvState::kDone;
        return;
    }
    RendezvousTarget tg{};
    tg.addr = reinterpret_cast<uint64_t>(r.buf);
    tg.mh = uint32_t(r.reg.mh);
    std::memcpy(s->buf + sizeof(Header), &tg, sizeof tg);
    post_packet(t, s, kCts, r.tag, r.len, r.seq, uint32_t(sizeof tg));
    r.state = RecvState::kData;
}

void fin_arrived(Link *l, const Header *h) {
    RecvOp &r = g.recv;
    if (r.state != RecvState::kData || r.source != l->peer || r.seq != h->seq) {
        report("protocol error: end of long message %u from rank %u, which this rank is not receiving", h->seq,
               l->peer);
        return;
    }
    buffer_release(&r.reg);
    if (h->len == kFinFailed) {
        r.result = BIP_ERR_RESOURCE;
    } else {
        g.rdma_bytes += r.len;
        r.result = BIP_OK;
    }
    r.state = RecvState::kDone;
}

} // namespace bip

using namespace bip;

namespace {

int check_done(int *source, size_t *len) {
    RecvOp &r = g.recv;
    if (r.state == RecvState::kData && g.tx[r.source]->dead) {
        buffer_release(&r.reg);
        r.result = BIP_ERR_RESOURCE;
        r.state = RecvState::kDone;
    }
    if (r.state != RecvState::kDone) return 0;
    if (source) *source = int(r.source);
    if (len) *len = r.len;
    const int rc = r.result;
    reset_in_place(r);
    return rc < 0 ? rc : 1;
}

} // namespace

extern "C" {

int bip_irecv(int tag, void *buf, size_t maxlen) {
    const char *fn = "bip_irecv";
    if (!g.init) return fail(BIP_ERR_NOT_INIT, fn, "call bip_init first");
    if (tag < 0 || tag >= BIP_NTAGS) return fail(BIP_ERR_BAD_TAG, fn, "tag %d is outside 0..%d", tag, BIP_NTAGS - 1);
    if (!buf && maxlen) return fail(BIP_ERR_NULL_BUF, fn, "NULL buffer for %zu bytes", maxlen);
    if (g.recv.state != RecvState::kIdle)
        return fail(BIP_ERR_PENDING, fn, "a receive is already pending (one per process: bip_rwait it first)");
    RecvOp &r = g.recv;
    reset_in_place(r);
    r.state = RecvState::kWaiting;
    r.tag = uint16_t(tag);
    r.buf = static_cast<uint8_t *>(buf);
    r.maxlen = uint32_t(maxlen < BIP_MAX_MESSAGE ? maxlen : BIP_MAX_MESSAGE);
    TagQueue &q = g.queues[tag];
    if (q.count) {
        const Queued m = q.front();
        q.pop();
        try_match(r, m);
    }
    return BIP_OK;
}

int bip_rtest(int *source, size_t *len) {
    if (!g.init) return fail(BIP_ERR_NOT_INIT, "bip_rtest", "call bip_init first");
    if (g.recv.state == RecvState::kIdle) return fail(BIP_ERR_NO_PENDING, "bip_rtest", "no receive is pending");
    progress();
    const int rc = check_done(source, len);
    return rc < 0 ? fail(rc, "bip_rtest", "the receive failed") : rc;
}

int bip_rwait(size_t *len) {
    if (!g.init) return fail(BIP_ERR_NOT_INIT, "bip_rwait", "call bip_init first");
    if (g.recv.state == RecvState::kIdle) return fail(BIP_ERR_NO_PENDING, "bip_rwait", "no receive is pending");
    int source = -1;
    int rc;
    while ((rc = check_done(&source, len)) == 0) wait_step();
    return rc < 0 ? fail(rc, "bip_rwait", "the receive failed") : source;
}

int bip_recv(int tag, void *buf, size_t maxlen, size_t *len) {
    int rc = bip_irecv(tag, buf, maxlen);
    if (rc != BIP_OK) return rc;
    return bip_rwait(len);
}

} // extern "C"
