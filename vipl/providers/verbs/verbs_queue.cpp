// verbs_queue.cpp - the data path: descriptors -> work requests -> completions.
//
// Hot path rules: no allocation, no logging, no lock but the queue's own spin
// locks.  ibv_post_send/recv is the doorbell (on rxe it is a system call: the
// kernel is the NIC).  Every work request is signaled, and completions of one
// queue arrive in posting order, so a ring of slots per queue gives back
// descriptors in posting order.  With threads: a post holds its queue's post
// lock from the ring slot to the doorbell, so ring order is the device's
// order; a poll holds its ibv_cq's poll lock while it completes descriptors.
#include <arpa/inet.h>
#include <poll.h>

#include <chrono>

#include "connection_rules.hpp"
#include "viastack_env.hpp"
#include "viastack_log.hpp"
#include "verbs_cm.hpp"
#include "verbs_device_order.hpp"
#include "verbs_provider.hpp"

namespace vipl::verbs {

namespace {

// Finishes a descriptor the provider rejected before it reached the device.  It
// still takes its place in the ring so descriptors come back in posting order.
// A descriptor error breaks a reliable connection, as a NIC-detected one would.
// The caller holds the queue's post lock.
void finish_in_software(WorkQueue &q, Slot &s, uint32_t status) {
    common::complete_descriptor(s.desc, status);
    q.ring.publish();                      // seen by a Wait on another thread
    if (q.bound) q.bound->push_locked(&q); // a poller of the CQ may be pushing too
    if ((status & VIP_STATUS_ERROR_MASK & ~VIP_STATUS_DESC_FLUSHED_ERROR) && q.vi->reliable()) q.vi->break_connection();
}

// Scatter/gather list of a descriptor, filled by the descriptor check for each
// non-empty data segment it accepts (at most max_sge <= kMaxSegments).
struct SgeList {
    ibv_sge sge[kMaxSegments];
    int n = 0;
    void operator()(const Region &r, const VIP_DATA_SEGMENT &ds) {
        sge[n].addr = ds.Data.AddressBits;
        sge[n].length = ds.Length;
        sge[n].lkey = r.mr->lkey;
        n++;
    }
};

long spin_ns() {
    static const long ns =
        viastack::env::integer(viastack::log::Layer::verbs, "VIPL_VERBS_SPIN_US", 50, 0, 60'000'000) * 1000;
    return ns;
}

} // namespace

// The regions a descriptor of this VI may use: registered on this NIC under
// the VI's protection tag.
const Region *VerbsVi::region(VIP_MEM_HANDLE h) const {
    const Region *r = nic.mem.find(h);
    return r != nullptr && r->ptag == attr.ptag ? r : nullptr;
}

VIP_RETURN VerbsVi::post_send(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    WorkQueue &q = sq;
    // Nothing to send to yet: refused, as on every provider (docs/vipl.md).  An
    // accepting VI may send before ESTABLISHED is seen (below).
    const VIP_VI_STATE st = state.load(std::memory_order_relaxed);
    if (__builtin_expect(
            st == VIP_STATE_IDLE || (st == VIP_STATE_CONNECT_PENDING && !accepted.load(std::memory_order_relaxed)), 0))
        return VIP_INVALID_STATE;
    common::SpinGuard posting(q.ring.post_lock);
    if (q.ring.full()) return VIP_ERROR_RESOURCE;
    Slot &s = q.ring.claim(d);
    const uint16_t ctl = d->CS.Control;
    const uint16_t op = ctl & VIP_CONTROL_OP_MASK;
    s.info.op_status = common::op_status(ctl);

    if (__builtin_expect(needs_recovery.load(std::memory_order_relaxed), 0)) recover();
    if (state.load(std::memory_order_relaxed) != VIP_STATE_CONNECTED &&
        !(accepted.load(std::memory_order_relaxed) &&
          state.load(std::memory_order_relaxed) == VIP_STATE_CONNECT_PENDING)) {
        // (An accepting VI may send before ESTABLISHED is seen: its QP is in RTS,
        // and a program answers only what the requester, already up, sent.)
        finish_in_software(q, s, s.info.op_status | VIP_STATUS_DESC_FLUSHED_ERROR);
        return VIP_SUCCESS;
    }
    SgeList sgl;
    uint64_t total = 0;
    if (uint32_t bad = common::check_send(
            d, mh, rules(), [this](VIP_MEM_HANDLE h) { return region(h); }, sgl, &total)) {
        finish_in_software(q, s, s.info.op_status | bad);
        return VIP_SUCCESS;
    }
    if (op == VIP_CONTROL_OP_RDMAWRITE && !remote_attr.EnableRdmaWrite && !reliable()) {
        // A UC target drops a write its QP does not allow without telling anyone
        // (IB class D).  The peer said at connect time that its VI takes no RDMA
        // write: refuse it here, as RC's target would (docs/security.md).
        finish_in_software(q, s, s.info.op_status | VIP_STATUS_RDMA_PROT_ERROR);
        return VIP_SUCCESS;
    }
    const bool rdma = op != VIP_CONTROL_OP_SENDRECV;
    const bool imm = ctl & VIP_CONTROL_IMMEDIATE;

    ibv_send_wr wr;
    wr.wr_id = reinterpret_cast<uint64_t>(&s);
    wr.next = nullptr;
    wr.sg_list = sgl.sge;
    wr.num_sge = sgl.n;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (ctl & VIP_CONTROL_QFENCE) wr.send_flags |= IBV_SEND_FENCE;
    if (op != VIP_CONTROL_OP_RDMAREAD && total <= max_inline) wr.send_flags |= IBV_SEND_INLINE;
    wr.imm_data = imm ? htonl(d->CS.ImmediateData) : 0;
    switch (op) {
    case VIP_CONTROL_OP_SENDRECV: wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND; break;
    case VIP_CONTROL_OP_RDMAWRITE: wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE; break;
    default: wr.opcode = IBV_WR_RDMA_READ; break;
    }
    if (rdma) {
        wr.wr.rdma.remote_addr = d->DS[0].Remote.Data.AddressBits;
        wr.wr.rdma.rkey = d->DS[0].Remote.Handle;
    }
    ibv_send_wr *bad_wr = nullptr;
    device_order::posting(&s);
    if (ibv_post_send(qp, &wr, &bad_wr) != 0) return VIP_ERROR_RESOURCE;
    q.ring.publish(); // seen by a Wait on another thread
    return VIP_SUCCESS;
}

VIP_RETURN VerbsVi::post_recv(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    WorkQueue &q = rq;
    // A stopped QP is reset under the connection lock (another thread may be
    // connecting the VI), taken before the post lock as renew_qp takes them.
    std::unique_lock<std::mutex> connecting(nic.cm_mu, std::defer_lock);
    if (__builtin_expect(qp_needs_reset.load(std::memory_order_relaxed), 0)) connecting.lock();
    common::SpinGuard posting(q.ring.post_lock);
    if (q.ring.full()) return VIP_ERROR_RESOURCE;
    if (__builtin_expect(needs_recovery.load(std::memory_order_relaxed), 0)) recover();
    Slot &s = q.ring.claim(d);
    s.info.op_status = VIP_STATUS_OP_RECEIVE;
    if (__builtin_expect(qp_needs_reset.load(std::memory_order_relaxed), 0)) {
        // The QP is stopped (error state, or idle after a disconnect) and the
        // device would keep the receive forever without completing it.  An idle
        // VI with nothing posted gets a fresh QP so the receive waits for the next
        // connection; otherwise the receive is flushed like its neighbours.
        // (A QP stopped since the check above: only if the lock is free now.)
        if ((connecting.owns_lock() || connecting.try_lock()) && state.load() == VIP_STATE_IDLE && sq.empty() &&
            rq.empty() && !connector && reset_qp() == VIP_SUCCESS) {
        } else if (qp_needs_reset) {
            finish_in_software(q, s, VIP_STATUS_OP_RECEIVE | VIP_STATUS_DESC_FLUSHED_ERROR);
            return VIP_SUCCESS;
        }
    }
    SgeList sgl;
    if (uint32_t bad = common::check_recv(
            d, mh, rules(), [this](VIP_MEM_HANDLE h) { return region(h); }, sgl)) {
        finish_in_software(q, s, VIP_STATUS_OP_RECEIVE | bad);
        return VIP_SUCCESS;
    }
    ibv_recv_wr wr;
    wr.wr_id = reinterpret_cast<uint64_t>(&s);
    wr.next = nullptr;
    wr.sg_list = sgl.sge;
    wr.num_sge = sgl.n;
    ibv_recv_wr *bad_wr = nullptr;
    device_order::posting(&s);
    if (ibv_post_recv(qp, &wr, &bad_wr) != 0) return VIP_ERROR_RESOURCE;
    q.ring.publish(); // seen by a Wait on another thread
    return VIP_SUCCESS;
}

// ---- a new queue pair for a VI whose connection attempt failed --------------------
//
// Why a new QP rather than RESET: the IB spec empties both work queues on
// RESET, but rxe empties only the send queue (rxe_qp_reset resets sq.queue and
// keeps the receive queue), so receives posted again after a RESET would be
// there twice on rxe and once elsewhere.  A new QP starts empty on every device.

namespace {

// Moves every completion already on the queue's ibv_cq to its descriptor (a
// batch of 16 that comes back short emptied it).
void harvest(WorkQueue &q) {
    while (q.poll() == 16) {}
}

// Completes a descriptor that is in the ring already (published) in software.
void complete_posted(WorkQueue &q, Slot &s, uint32_t status) {
    common::complete_descriptor(s.desc, status);
    if (q.bound) q.bound->push_locked(&q);
}

} // namespace

VIP_RETURN VerbsVi::renew_qp() {
    // Completions polled here may be other VIs' failures (a shared CQ): their
    // error callbacks run after the post locks are released.
    std::vector<std::pair<VerbsNic *, VIP_ERROR_DESCRIPTOR>> held;
    const bool hold = deferred_errors == nullptr;
    if (hold) deferred_errors = &held;
    VIP_RETURN rc = VIP_SUCCESS;
    {
        // No post reaches either QP meanwhile, and a receive posted after this
        // lands behind the ones posted again: posting order holds.
        common::SpinGuard sending(sq.ring.post_lock), receiving(rq.ring.post_lock);
        harvest(sq); // (a device may drop the CQ entries of a destroyed QP)
        harvest(rq);
        if (create_qp() != VIP_SUCCESS) { // (create_qp destroys the old QP)
            ibv_qp_attr qa{};
            qa.qp_state = IBV_QPS_ERR;
            ibv_modify_qp(qp, &qa, IBV_QP_STATE);
            qp_needs_reset = true;
            drain_after_error(*this);
            rc = VIP_ERROR_RESOURCE;
        } else {
            harvest(sq); // what the old QP completed before it was destroyed
            harvest(rq);
            sq.ring.for_each_incomplete(
                [&](Slot &s) { complete_posted(sq, s, s.info.op_status | VIP_STATUS_DESC_FLUSHED_ERROR); });
            const common::DescriptorRules r = rules();
            unsigned reposted = 0;
            rq.ring.for_each_incomplete([&](Slot &s) {
                VIP_DESCRIPTOR *d = s.desc;
                SgeList sgl;
                uint64_t total = 0;
                uint32_t bad = common::check_recv_control(d->CS, r);
                if (!bad)
                    bad = common::check_data_segments(
                        d->DS, d->CS.SegCount, [this](VIP_MEM_HANDLE h) { return region(h); }, sgl, &total);
                if (bad) { // its memory was deregistered while it was posted
                    complete_posted(rq, s, VIP_STATUS_OP_RECEIVE | bad);
                    return;
                }
                ibv_recv_wr wr{};
                wr.wr_id = reinterpret_cast<uint64_t>(&s);
                wr.sg_list = sgl.sge;
                wr.num_sge = sgl.n;
                ibv_recv_wr *bad_wr = nullptr;
                device_order::posting(&s);
                if (ibv_post_recv(qp, &wr, &bad_wr) != 0)
                    complete_posted(rq, s, VIP_STATUS_OP_RECEIVE | VIP_STATUS_DESC_FLUSHED_ERROR);
                else reposted++;
            });
            viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_DEBUG,
                         "a connection attempt failed after the QP left INIT: new QP %u, %u receives posted again",
                         qp->qp_num, reposted);
        }
    }
    if (hold) {
        deferred_errors = nullptr;
        for (auto &e : held) e.first->deliver_error(e.second);
    }
    return rc;
}

namespace {

// A completion that failed, kept to be handled once the poll lock is released
// (the slot may be reused by then: its queue and descriptor are copied).
struct Failure {
    WorkQueue *queue;
    VIP_DESCRIPTOR *desc;
    ibv_wc_status status;
};

// Fills a completed slot from a work completion (status bits, length,
// immediate) and reports it to the bound CQ; the poll lock is held.
void complete_slot(const ibv_wc &wc) {
    Slot *s = reinterpret_cast<Slot *>(wc.wr_id);
    WorkQueue *q = s->info.queue;
    VIP_DESCRIPTOR *d = s->desc;
    uint32_t st = VIP_STATUS_DONE | s->info.op_status;
    if (wc.status == IBV_WC_SUCCESS) {
        if (q->is_recv) {
            if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) st = VIP_STATUS_DONE | VIP_STATUS_OP_REMOTE_RDMA_WRITE;
            d->CS.Length = wc.byte_len;
            // Data from the requester proves the connection is up even if the
            // ESTABLISHED event has not been read yet (IB's "communication established").
            if (__builtin_expect(q->vi->accepted.load(std::memory_order_relaxed), 0)) {
                VIP_VI_STATE pending = VIP_STATE_CONNECT_PENDING;
                if (q->vi->state.compare_exchange_strong(pending, VIP_STATE_CONNECTED)) q->vi->established = true;
            }
            if (wc.wc_flags & IBV_WC_WITH_IMM) {
                st |= VIP_STATUS_IMMEDIATE;
                d->CS.ImmediateData = ntohl(wc.imm_data);
            }
        }
    } else if (q->is_recv && (wc.status == IBV_WC_LOC_LEN_ERR || wc.status == IBV_WC_LOC_QP_OP_ERR)) {
        // A receive WQE that cannot hold the message: rxe reports LOC_QP_OP_ERR
        // (its "malformed WQE" path), other devices LOC_LEN_ERR.  rxe says the
        // same of a receive whose memory was deregistered while it was posted:
        // that one is a protection error (common::receive_memory_gone).
        const VerbsVi *vi = q->vi;
        uint32_t gone = common::receive_memory_gone(d, [vi](VIP_MEM_HANDLE h) { return vi->region(h); });
        st |= gone ? gone : VIP_STATUS_LENGTH_ERROR;
    } else if (wc.status == IBV_WC_REM_INV_REQ_ERR &&
               (s->info.op_status == VIP_STATUS_OP_RDMA_READ || s->info.op_status == VIP_STATUS_OP_RDMA_WRITE)) {
        // The target refused the RDMA itself (its VI does not enable it): on rxe an
        // invalid request, in VIPL terms an RDMA protection error.
        st |= VIP_STATUS_RDMA_PROT_ERROR;
    } else {
        st |= status_bits(wc.status);
    }
    common::complete_descriptor(d, st);
    if (q->bound) q->bound->push(q);
}

} // namespace

int poll_cq(ibv_cq *cq, common::SpinLock &lock) {
    ibv_wc wc[16];
    Failure failed[16];
    int n, nfailed = 0;
    {
        common::SpinGuard g(lock);
        n = ibv_poll_cq(cq, 16, wc);
        for (int i = 0; i < n; i++) {
            device_order::completed(reinterpret_cast<const void *>(wc[i].wr_id));
            if (wc[i].status != IBV_WC_SUCCESS && wc[i].status != IBV_WC_WR_FLUSH_ERR) {
                const Slot *s = reinterpret_cast<const Slot *>(wc[i].wr_id);
                failed[nfailed++] = {s->info.queue, s->desc, wc[i].status};
            }
            complete_slot(wc[i]);
        }
    }
    for (int i = 0; i < nfailed; i++)
        failed[i].queue->vi->fail(failed[i].status, failed[i].desc, failed[i].queue->is_recv);
    return n;
}

common::SpinLock &WorkQueue::poll_lock() { return bound ? bound->poll_lock : own_poll_lock; }

int WorkQueue::poll() { return bound ? bound->poll() : poll_cq(cq, own_poll_lock); }

VIP_RETURN WorkQueue::done(VIP_DESCRIPTOR **d) {
    return ring.reap(d, [this] {
        if (poll() == 0) vi->nic.idle_poll();
    });
}

// Blocks on a completion channel: poll for spin_ns first (cheapest when the
// answer is microseconds away), then arm the CQ and sleep on its channel.  While
// asleep it also reads the NIC's connection events: when the peer breaks the
// connection, only that event stops this VI's queue pair (the device alone may
// never complete a send whose NAK it dropped), and the wait must see it.
VIP_RETURN block_on_cq(VerbsNic &nic, ibv_cq *cq, ibv_comp_channel *ch, VIP_ULONG timeout_ms,
                       const std::function<VIP_RETURN()> &try_once) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    VIP_RETURN rc = try_once();
    if (rc != VIP_NOT_DONE) return rc;
    const long spin = timeout_ms == 0 ? 0 : spin_ns();
    while (std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count() < spin) {
        rc = try_once();
        if (rc != VIP_NOT_DONE) return rc;
    }
    for (;;) {
        nic.pump_cm(0);
        ibv_req_notify_cq(cq, 0);
        rc = try_once();
        if (rc != VIP_NOT_DONE) return rc;
        long left = 100;
        if (timeout_ms != VIP_INFINITE) {
            long elapsed = long(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
            if (elapsed >= long(timeout_ms)) return VIP_TIMEOUT;
            left = std::min<long>(100, long(timeout_ms) - elapsed);
        }
        // Short slices: another thread may consume the event, or post to an empty queue.
        pollfd pfd[2] = {{ch->fd, POLLIN, 0}, {nic.cm_channel->fd, POLLIN, 0}};
        if (::poll(pfd, 2, int(left)) > 0 && (pfd[0].revents & POLLIN)) {
            ibv_cq *ev_cq = nullptr;
            void *ev_ctx = nullptr;
            if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0) ibv_ack_cq_events(ev_cq, 1);
        }
    }
}

// A wait on an empty queue waits for a descriptor to be posted (by another
// thread: cLAN- and M-VIA-era programs block a receive thread in
// VipRecvWait(VIP_INFINITE) before anything is posted) and to complete.  It ends
// with VIP_INVALID_STATE if the VI breaks while nothing is posted: then nothing
// can complete.
VIP_RETURN WorkQueue::wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) {
    ibv_cq *c = bound ? bound->cq : cq;
    ibv_comp_channel *ch = bound ? bound->channel : channel;
    return block_on_cq(vi->nic, c, ch, timeout_ms, [&] {
        VIP_RETURN rc = done(d);
        if (rc == VIP_NOT_DONE && ring.empty() && vi->state.load() == VIP_STATE_ERROR) rc = VIP_INVALID_STATE;
        if (rc == VIP_NOT_DONE && vi->closing()) rc = VIP_INVALID_STATE; // another thread is destroying the VI
        return rc;
    });
}

} // namespace vipl::verbs
