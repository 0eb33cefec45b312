// vfi_data.cpp - the data path: sends, receives and RMA as VI descriptors,
// their completions, and the credits that keep a send from ever finding no
// receive posted.
//
// VI's reliable levels break the connection when a send finds no posted
// receive; libfabric's users (rxm) expect such a send to wait.  So each
// endpoint counts the receives the application posted and tells the peer
// its cumulative count by an RDMA write of one word into a registered word
// of the peer (address and handle exchanged in the connection data).  A send
// (or a write with immediate data, which also completes a receive) goes out
// only while the endpoint's sent count is below the peer's posted count;
// otherwise it waits in the endpoint's queue of pending operations (with every
// operation posted after it, so the VI still sees them in posting order) and
// is posted by the progress that finds the peer's count advanced
// (FI_RM_ENABLED: the caller never sees the receiver not ready).  The receiver writes its count when a batch
// of new receives is posted, and at once when the peer has used everything
// advertised, so a waiting sender always hears of the next receive; and
// first right after connecting (the receives posted before).
// The application's receive buffers are the VI receive descriptors' segments
// (no copy); the credit writes complete on the VI's send queue and are
// consumed here.
//
// Threads: everything here runs under the endpoint's lock (Ep::mu); the
// completion side is entered from a CQ's drain, which already holds it.
#include "vfi.hpp"

#include <viastack/channel.hpp>

#include <algorithm>
#include <chrono>

namespace vfi {

static size_t credit_batch(const Ep *e) { return std::max<size_t>(1, e->rx_max / 4); }

static VIP_MEM_HANDLE handle_of(void *desc) { return desc ? static_cast<Mr *>(desc)->handle : 0; }

static void post_credit(Ep *e) {
    constexpr size_t kCreditSlots = 4;
    if (e->tx_credit_inflight >= kCreditSlots) {
        // The credit writes complete on the send CQ, which a receiver that is
        // only waiting for messages may never read: take its completions now
        // (the application's are queued for it).  Not from inside that very
        // drain: ep_process retries the owed write when a credit write
        // completes.  Only if no other thread is draining that CQ (holding
        // this endpoint, waiting for it could deadlock): that thread's drain
        // completes the credit writes and retries the owed one.
        if (!e->reaping) {
            e->reaping = true;
            try_progress_cq(e->tx_cq);
            e->reaping = false;
        }
        if (e->tx_credit_inflight >= kCreditSlots) {
            e->credit_owed = true;
            return;
        }
    }
    size_t i = e->tx_head % e->tx_n;
    VIP_DESCRIPTOR *d = e->tx_desc(i);
    *e->credit_src(i) = e->posted;
    std::memset(&d->CS, 0, sizeof(d->CS));
    VIP_DATA_SEGMENT *seg = viastack::channel::rdma_descriptor(d, VIP_CONTROL_OP_RDMAWRITE, e->peer_credit_addr,
                                                               e->peer_credit_handle, sizeof(uint64_t), 1);
    seg[0].Data.Address = e->credit_src(i);
    seg[0].Handle = e->block_handle;
    seg[0].Length = sizeof(uint64_t);
    VIP_RETURN rc = VipPostSend(e->vi, d, e->block_handle);
    if (rc != VIP_SUCCESS) {
        e->credit_owed = true;
        return;
    }
    e->tx_slots[i] = Slot{Op::CreditWrite, false};
    e->tx_head++;
    e->tx_credit_inflight++;
    e->advertised = e->posted;
    e->credit_owed = false;
}

// Whether the peer must hear of our posted count now: a batch of new
// receives, or the peer has used all it knows of, or an earlier write could
// not be posted.  Inline: every receive completion and every repost asks.
static inline bool credit_due(const Ep *e) {
    return e->posted > e->advertised && e->state == EpState::Connected &&
        (e->credit_owed || e->posted - e->advertised >= credit_batch(e) || e->received >= e->advertised);
}

void ep_credit_check(Ep *e) {
    if (credit_due(e)) post_credit(e);
}

void ep_fill_header(Ep *e, CmHeader *h) {
    h->credit_addr = reinterpret_cast<uintptr_t>(e->credit_word());
    h->credit_handle = e->credit_handle;
}

void ep_connected(Ep *e, const CmHeader &peer) {
    Guard g(e->mu);
    e->peer_credit_addr = peer.credit_addr;
    e->peer_credit_handle = peer.credit_handle;
    e->state = EpState::Connected;
    ep_credit_check(e);
}

// ---- completions ----------------------------------------------------------------
// The caller holds e->mu.
void ep_process(Ep *e, bool recv_queue) {
    VIP_DESCRIPTOR *d = nullptr;
    if (recv_queue) {
        if (VipRecvDone(e->vi, &d) != VIP_SUCCESS) return;
        size_t i = e->rx_tail % e->rx_n;
        Slot s = e->rx_slots[i];
        e->rx_tail++;
        uint32_t st = d->CS.Status;
        if (st & VIP_STATUS_ERROR_MASK) {
            // Receives flushed by a disconnect are dropped: the application
            // learns of the end of the connection from FI_SHUTDOWN.
            if (!(st & VIP_STATUS_DESC_FLUSHED_ERROR)) {
                CqEntry c{s.context, FI_RECV | FI_MSG, 0, s.buf, 0, status_to_fi(st), st};
                e->rx_cq->push(c);
            }
            return;
        }
        e->received++;
        CqEntry c{};
        c.context = s.context;
        if ((st & VIP_STATUS_OP_MASK) == VIP_STATUS_OP_REMOTE_RDMA_WRITE) {
            c.flags = FI_RMA | FI_REMOTE_WRITE;
        } else {
            c.flags = FI_RECV | FI_MSG;
            c.len = d->CS.Length;
            c.buf = s.buf;
        }
        if (st & VIP_STATUS_IMMEDIATE) {
            c.flags |= FI_REMOTE_CQ_DATA;
            c.data = d->CS.ImmediateData;
        }
        if (s.signal) e->rx_cq->push(c);
        if (credit_due(e)) post_credit(e);
        return;
    }
    if (VipSendDone(e->vi, &d) != VIP_SUCCESS) return;
    size_t i = e->tx_tail % e->tx_n;
    Slot s = e->tx_slots[i];
    e->tx_tail++;
    uint32_t st = d->CS.Status;
    if (s.op == Op::CreditWrite) {
        e->tx_credit_inflight--;
        if ((st & VIP_STATUS_ERROR_MASK) && !(st & VIP_STATUS_DESC_FLUSHED_ERROR)) {
            char b[96];
            warn("credit write failed: %s", VipxStatusString(st, b, sizeof(b)));
        }
        if (e->credit_owed) ep_credit_check(e);
        return;
    }
    e->tx_user_inflight--;
    if (st & VIP_STATUS_ERROR_MASK) {
        e->tx_cq->push(CqEntry{s.context, s.flags, s.len, nullptr, 0, status_to_fi(st), st});
        return;
    }
    if (s.signal) e->tx_cq->push(CqEntry{s.context, s.flags, s.len, nullptr, 0, 0, 0});
}

// ---- posting ---------------------------------------------------------------------
static int fill_segments(VIP_DATA_SEGMENT *seg, const struct iovec *iov, void **desc, size_t count, size_t *total) {
    *total = 0;
    for (size_t k = 0; k < count; k++) {
        if (iov[k].iov_len && !iov[k].iov_base) return -FI_EINVAL;
        if (iov[k].iov_len && !(desc && desc[k])) return -FI_EINVAL; // FI_MR_LOCAL: every buffer needs its registration
        seg[k].Data.Address = iov[k].iov_base;
        seg[k].Handle = iov[k].iov_len ? handle_of(desc[k]) : 0;
        seg[k].Length = uint32_t(iov[k].iov_len);
        *total += iov[k].iov_len;
    }
    return 0;
}

static int ready(Ep *e) {
    switch (e->state) {
    case EpState::Connected: return 0;
    case EpState::Connecting:
    case EpState::Accepting: return -FI_EAGAIN;
    default: return -FI_ENOTCONN;
    }
}

struct TxReq {
    Op op;
    const struct iovec *iov;
    void **desc;
    size_t count;
    bool has_data;
    uint64_t data;
    uint64_t raddr, rkey;
    void *context;
    uint64_t flags;
};

static bool uses_credit(Op op, bool has_data) { return op == Op::Send || (op == Op::Write && has_data); }

// Endpoints with a non-empty pending queue: progress looks for them only
// while there are any, so a poll that finds nothing costs no walk.  Written
// only when a queue starts or ends (the rare path), read by every drain.
static std::atomic<size_t> g_eps_pending{0};

static void queue_tx(Ep *e, const TxReq &r) {
    if (e->pending.empty()) g_eps_pending.fetch_add(1, std::memory_order_relaxed);
    Ep::PendingTx p{r.op, {}, {}, r.has_data, r.data, r.raddr, r.rkey, r.context, r.flags, {}};
    if (r.flags & FI_INJECT) {
        for (size_t k = 0; k < r.count; k++) {
            const uint8_t *b = static_cast<const uint8_t *>(r.iov[k].iov_base);
            p.inject.insert(p.inject.end(), b, b + r.iov[k].iov_len);
        }
        p.iov.push_back({p.inject.data(), p.inject.size()});
        p.desc.push_back(nullptr);
    } else {
        p.iov.assign(r.iov, r.iov + r.count);
        if (r.desc) p.desc.assign(r.desc, r.desc + r.count);
        else p.desc.assign(r.count, nullptr);
    }
    e->pending.push_back(std::move(p));
}

static ssize_t post_now(Ep *e, const TxReq &r, size_t total);

static ssize_t post_tx(Ep *e, const TxReq &r) {
    Serial serial;
    std::unique_lock<Lock> g(e->mu);
    if (int rc = ready(e)) return rc;
    if (r.count > e->info->tx_attr->iov_limit || (r.count && !r.iov)) return -FI_EINVAL;
    bool inject = r.flags & FI_INJECT;
    size_t total = 0;
    bool no_base = false, no_desc = false; // FI_MR_LOCAL: every buffer needs its registration
    for (size_t k = 0; k < r.count; k++) {
        size_t len = r.iov[k].iov_len;
        total += len;
        no_base |= len && !r.iov[k].iov_base;
        no_desc |= len && (!r.desc || !r.desc[k]);
    }
    if (total > e->info->ep_attr->max_msg_size) return -FI_EMSGSIZE;
    if (inject && (total > kInjectSize || r.op == Op::Read)) return -FI_EINVAL;
    if (no_base || (!inject && no_desc)) return -FI_EINVAL;
    if (r.op != Op::Send && r.rkey > UINT32_MAX) return -FI_EINVAL;
    if (e->tx_user_inflight + e->pending.size() >= e->tx_user_max) {
        g.unlock(); // the drain takes the CQ's lock, then this endpoint's
        progress_cq(e->tx_cq);
        g.lock();
        if (int rc = ready(e)) return rc;
        if (e->tx_user_inflight + e->pending.size() >= e->tx_user_max) return -FI_EAGAIN;
    }
    if (!e->pending.empty() || (uses_credit(r.op, r.has_data) && e->sent >= e->peer_posted())) {
        VipxProgress(nic()->handle); // the peer's count may be on its way
        ep_flush_pending(e);
        if (!e->pending.empty() || (uses_credit(r.op, r.has_data) && e->sent >= e->peer_posted())) {
            queue_tx(e, r);
            return 0;
        }
    }
    return post_now(e, r, total);
}

// Builds r's descriptor in the next transmit slot and posts it (r is valid).
static ssize_t post_now(Ep *e, const TxReq &r, size_t total) {
    bool inject = r.flags & FI_INJECT;
    size_t i = e->tx_head % e->tx_n;
    VIP_DESCRIPTOR *d = e->tx_desc(i);
    std::memset(&d->CS, 0, sizeof(d->CS));
    // Inject: the payload is copied into the slot's buffer, one segment.
    const size_t nlocal = inject ? (total ? 1 : 0) : r.count;
    VIP_DATA_SEGMENT *seg;
    if (r.op == Op::Send) {
        d->CS.Control = VIP_CONTROL_OP_SENDRECV;
        d->CS.SegCount = uint16_t(nlocal);
        d->CS.Length = uint32_t(total);
        seg = &d->DS[0].Local;
    } else {
        seg = viastack::channel::rdma_descriptor(d,
                                                 r.op == Op::Write ? VIP_CONTROL_OP_RDMAWRITE : VIP_CONTROL_OP_RDMAREAD,
                                                 r.raddr, VIP_MEM_HANDLE(r.rkey), uint32_t(total), uint16_t(nlocal));
    }
    if (inject) {
        uint8_t *b = e->inject_buf(i);
        size_t off = 0;
        for (size_t k = 0; k < r.count; k++) {
            std::memcpy(b + off, r.iov[k].iov_base, r.iov[k].iov_len);
            off += r.iov[k].iov_len;
        }
        if (total) {
            seg[0].Data.Address = b;
            seg[0].Handle = e->block_handle;
            seg[0].Length = uint32_t(total);
        }
    } else {
        size_t filled;
        if (int rc = fill_segments(seg, r.iov, r.desc, r.count, &filled)) return rc;
    }
    if (r.has_data) {
        d->CS.Control |= VIP_CONTROL_IMMEDIATE;
        d->CS.ImmediateData = uint32_t(r.data);
    }
    if (r.flags & FI_FENCE) d->CS.Control |= VIP_CONTROL_QFENCE;
    VIP_RETURN rc = VipPostSend(e->vi, d, e->block_handle);
    if (rc != VIP_SUCCESS) return rc == VIP_INVALID_STATE ? -FI_ENOTCONN : vip_to_fi(rc);
    Slot &s = e->tx_slots[i];
    s.op = r.op;
    s.signal = !inject && (!(e->tx_flags & FI_SELECTIVE_COMPLETION) || (r.flags & FI_COMPLETION));
    s.context = r.context;
    s.len = total;
    s.flags = r.op == Op::Send ? FI_SEND | FI_MSG : r.op == Op::Write ? FI_RMA | FI_WRITE : FI_RMA | FI_READ;
    e->tx_head++;
    e->tx_user_inflight++;
    if (uses_credit(r.op, r.has_data)) e->sent++;
    return 0;
}

void ep_flush_pending(Ep *e) {
    while (!e->pending.empty()) {
        Ep::PendingTx &p = e->pending.front();
        if (e->state == EpState::Connected && uses_credit(p.op, p.has_data) && e->sent >= e->peer_posted()) return;
        TxReq r{p.op,   p.iov.data(), p.desc.data(), p.iov.size(), p.has_data,
                p.data, p.raddr,      p.rkey,        p.context,    p.flags};
        size_t total = 0;
        for (const auto &v : p.iov) total += v.iov_len;
        ssize_t rc = ready(e) ? ready(e) : post_now(e, r, total);
        if (rc) { // the connection ended (or the VI refused it): the operation completes in error
            uint64_t fl = p.op == Op::Send ? FI_SEND | FI_MSG
                : p.op == Op::Write        ? FI_RMA | FI_WRITE
                                           : FI_RMA | FI_READ;
            e->tx_cq->push(CqEntry{p.context, fl, 0, nullptr, 0, int(rc == -FI_ENOTCONN ? FI_ECANCELED : -rc), 0});
        }
        e->pending.pop_front();
        if (e->pending.empty()) g_eps_pending.fetch_sub(1, std::memory_order_relaxed);
    }
}

// A CQ's progress flushes the queues of every endpoint with a queue on it:
// the application may wait on its receive CQ for the answer to a send still
// queued here (fi_pingpong does), and nothing else would post it.  The
// caller holds cq->drain.
void flush_pending_on(Cq *cq) {
    if (!g_eps_pending.load(std::memory_order_relaxed)) return;
    for (Ep *e : cq->eps) {
        Guard g(e->mu);
        if (!e->pending.empty()) ep_flush_pending(e);
    }
}

void ep_drop_pending(Ep *e) {
    if (!e->pending.empty()) g_eps_pending.fetch_sub(1, std::memory_order_relaxed);
    e->pending.clear();
}

static ssize_t post_rx(Ep *e, const struct iovec *iov, void **desc, size_t count, void *context, uint64_t flags) {
    Serial serial;
    Guard g(e->mu);
    if (!e->enabled) return -FI_EOPBADSTATE;
    if (count > e->info->rx_attr->iov_limit || (count && !iov)) return -FI_EINVAL;
    if (e->rx_head - e->rx_tail >= e->rx_max) return -FI_EAGAIN;
    size_t i = e->rx_head % e->rx_n;
    VIP_DESCRIPTOR *d = e->rx_desc(i);
    std::memset(&d->CS, 0, sizeof(d->CS));
    size_t total;
    if (int rc = fill_segments(&d->DS[0].Local, iov, desc, count, &total)) return rc;
    if (total > e->info->ep_attr->max_msg_size) return -FI_EMSGSIZE;
    d->CS.SegCount = uint16_t(count);
    d->CS.Length = uint32_t(total);
    VIP_RETURN rc = VipPostRecv(e->vi, d, e->block_handle);
    if (rc != VIP_SUCCESS) return vip_to_fi(rc);
    Slot &s = e->rx_slots[i];
    s.op = Op::Recv;
    s.signal = !(e->rx_flags & FI_SELECTIVE_COMPLETION) || (flags & FI_COMPLETION);
    s.context = context;
    s.buf = count ? iov[0].iov_base : nullptr;
    s.len = total;
    e->rx_head++;
    e->posted++;
    if (credit_due(e)) post_credit(e);
    return 0;
}

// ---- fi_ops_msg -------------------------------------------------------------------
static Ep *EP(struct fid_ep *ep) { return reinterpret_cast<Ep *>(ep); }

static ssize_t m_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t, void *ctx) {
    struct iovec iov {
        buf, len
    };
    return post_rx(EP(ep), &iov, &desc, 1, ctx, EP(ep)->rx_op_flags);
}
static ssize_t m_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t, void *ctx) {
    return post_rx(EP(ep), iov, desc, count, ctx, EP(ep)->rx_op_flags);
}
static ssize_t m_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags) {
    if (!msg) return -FI_EINVAL;
    return post_rx(EP(ep), msg->msg_iov, msg->desc, msg->iov_count, msg->context, flags);
}
static ssize_t send1(struct fid_ep *ep, const void *buf, size_t len, void *desc, bool has_data, uint64_t data,
                     void *ctx, uint64_t flags) {
    struct iovec iov {
        const_cast<void *>(buf), len
    };
    return post_tx(EP(ep), TxReq{Op::Send, &iov, &desc, 1, has_data, data, 0, 0, ctx, flags});
}
static ssize_t m_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t, void *ctx) {
    return send1(ep, buf, len, desc, false, 0, ctx, EP(ep)->tx_op_flags);
}
static ssize_t m_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t, void *ctx) {
    return post_tx(EP(ep), TxReq{Op::Send, iov, desc, count, false, 0, 0, 0, ctx, EP(ep)->tx_op_flags});
}
static ssize_t m_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags) {
    if (!msg) return -FI_EINVAL;
    return post_tx(EP(ep),
                   TxReq{Op::Send, msg->msg_iov, msg->desc, msg->iov_count, bool(flags & FI_REMOTE_CQ_DATA), msg->data,
                         0, 0, msg->context, flags});
}
static ssize_t m_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t) {
    return send1(ep, buf, len, nullptr, false, 0, nullptr, FI_INJECT);
}
static ssize_t m_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t,
                          void *ctx) {
    return send1(ep, buf, len, desc, true, data, ctx, EP(ep)->tx_op_flags);
}
static ssize_t m_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t) {
    return send1(ep, buf, len, nullptr, true, data, nullptr, FI_INJECT);
}

struct fi_ops_msg ep_msg_ops = {sizeof(struct fi_ops_msg),
                                m_recv,
                                m_recvv,
                                m_recvmsg,
                                m_send,
                                m_sendv,
                                m_sendmsg,
                                m_inject,
                                m_senddata,
                                m_injectdata};

// ---- fi_ops_rma ---------------------------------------------------------------------
static ssize_t rma1(struct fid_ep *ep, Op op, const void *buf, size_t len, void *desc, bool has_data, uint64_t data,
                    uint64_t addr, uint64_t key, void *ctx, uint64_t flags) {
    struct iovec iov {
        const_cast<void *>(buf), len
    };
    return post_tx(EP(ep), TxReq{op, &iov, &desc, 1, has_data, data, addr, key, ctx, flags});
}
static ssize_t r_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t, uint64_t addr, uint64_t key,
                      void *ctx) {
    return rma1(ep, Op::Read, buf, len, desc, false, 0, addr, key, ctx, EP(ep)->tx_op_flags);
}
static ssize_t r_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t, uint64_t addr,
                       uint64_t key, void *ctx) {
    return post_tx(EP(ep), TxReq{Op::Read, iov, desc, count, false, 0, addr, key, ctx, EP(ep)->tx_op_flags});
}
static ssize_t rma_msg(struct fid_ep *ep, Op op, const struct fi_msg_rma *msg, uint64_t flags) {
    if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov) return -FI_EINVAL; // rma_iov_limit 1
    return post_tx(EP(ep),
                   TxReq{op, msg->msg_iov, msg->desc, msg->iov_count, op == Op::Write && (flags & FI_REMOTE_CQ_DATA),
                         msg->data, msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->context, flags});
}
static ssize_t r_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags) {
    return rma_msg(ep, Op::Read, msg, flags);
}
static ssize_t r_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t, uint64_t addr,
                       uint64_t key, void *ctx) {
    return rma1(ep, Op::Write, buf, len, desc, false, 0, addr, key, ctx, EP(ep)->tx_op_flags);
}
static ssize_t r_writev(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t, uint64_t addr,
                        uint64_t key, void *ctx) {
    return post_tx(EP(ep), TxReq{Op::Write, iov, desc, count, false, 0, addr, key, ctx, EP(ep)->tx_op_flags});
}
static ssize_t r_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags) {
    return rma_msg(ep, Op::Write, msg, flags);
}
static ssize_t r_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t, uint64_t addr, uint64_t key) {
    return rma1(ep, Op::Write, buf, len, nullptr, false, 0, addr, key, nullptr, FI_INJECT);
}
static ssize_t r_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t,
                           uint64_t addr, uint64_t key, void *ctx) {
    return rma1(ep, Op::Write, buf, len, desc, true, data, addr, key, ctx, EP(ep)->tx_op_flags);
}
static ssize_t r_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t, uint64_t addr,
                            uint64_t key) {
    return rma1(ep, Op::Write, buf, len, nullptr, true, data, addr, key, nullptr, FI_INJECT);
}

struct fi_ops_rma ep_rma_ops = {sizeof(struct fi_ops_rma),
                                r_read,
                                r_readv,
                                r_readmsg,
                                r_write,
                                r_writev,
                                r_writemsg,
                                r_inject,
                                r_writedata,
                                r_injectdata};

} // namespace vfi
