// verbs_queue.cpp - the data path: descriptors -> work requests -> completions.
//
// Hot path rules: no allocation, no locks, no logging.  ibv_post_send/recv is the
// doorbell (on rxe it is a system call: the kernel is the NIC).  Every work
// request is signaled, and completions of one queue arrive in posting order, so
// a ring of slots per queue gives back descriptors in posting order.
#include <arpa/inet.h>
#include <poll.h>

#include <chrono>
#include <cstdlib>

#include "verbs_provider.hpp"

namespace vipl::verbs {

namespace {

uint32_t op_status_of(uint16_t op) {
    switch (op) {
    case VIP_CONTROL_OP_RDMAWRITE: return VIP_STATUS_OP_RDMA_WRITE;
    case VIP_CONTROL_OP_RDMAREAD: return VIP_STATUS_OP_RDMA_READ;
    default: return VIP_STATUS_OP_SEND;
    }
}

// Finishes a descriptor the provider rejected before it reached the device.  It
// still takes its place in the ring so descriptors come back in posting order.
// A descriptor error breaks a reliable connection, as a NIC-detected one would.
void finish_in_software(WorkQueue &q, Slot &s, uint32_t status) {
    s.done = true;
    __atomic_store_n(&s.desc->CS.Status, VIP_STATUS_DONE | status, __ATOMIC_RELEASE);
    __atomic_store_n(&q.tail, q.tail + 1, __ATOMIC_RELEASE); // seen by a Wait on another thread
    if (q.bound)
        q.bound->push(&q);
    if ((status & VIP_STATUS_ERROR_MASK & ~VIP_STATUS_DESC_FLUSHED_ERROR) && q.vi->reliable())
        q.vi->break_connection();
}

// Translates SegCount data segments into SGEs; 0 or the error status bits.
uint32_t build_sges(VerbsNic &nic, VerbsPtag *ptag, const VIP_DATA_SEGMENT *segs,
                    uint32_t nseg, ibv_sge *sge, int *nsge, uint64_t *total) {
    int n = 0;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < nseg; i++) {
        const VIP_DATA_SEGMENT &ds = segs[i];
        if (ds.Length == 0)
            continue;
        const uintptr_t a = uintptr_t(ds.Data.AddressBits);
        const Region *r = nic.mem.find(ds.Handle);
        if (r == nullptr || r->ptag != ptag || !r->covers(a, ds.Length))
            return VIP_STATUS_PROTECTION_ERROR;
        sge[n].addr = a;
        sge[n].length = ds.Length;
        sge[n].lkey = r->mr->lkey;
        n++;
        sum += ds.Length;
    }
    *nsge = n;
    *total = sum;
    return 0;
}

long spin_ns() {
    static const long ns = [] {
        const char *e = std::getenv("VIPL_VERBS_SPIN_US");
        return e ? std::atol(e) * 1000 : 50'000L;
    }();
    return ns;
}

} // namespace

VIP_RETURN VerbsVi::post_send(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    WorkQueue &q = sq;
    if (q.tail - q.head >= q.depth())
        return VIP_ERROR_RESOURCE;
    Slot &s = q.slots[q.tail & q.mask];
    s.desc = d;
    s.done = false;
    d->CS.Status = 0;
    const uint16_t ctl = d->CS.Control;
    const uint16_t op = ctl & VIP_CONTROL_OP_MASK;
    s.op_status = op_status_of(op);

    if (__builtin_expect(needs_recovery, 0))
        recover();
    if (state.load(std::memory_order_relaxed) != VIP_STATE_CONNECTED &&
        !(accepted.load(std::memory_order_relaxed) &&
          state.load(std::memory_order_relaxed) == VIP_STATE_CONNECT_PENDING)) {
        // (An accepting VI may send before ESTABLISHED is seen: its QP is in RTS,
        // and a program answers only what the requester, already up, sent.)
        finish_in_software(q, s, s.op_status | VIP_STATUS_DESC_FLUSHED_ERROR);
        return VIP_SUCCESS;
    }
    // The descriptor itself must lie in registered memory under the VI's tag.
    const Region *dr = nic.mem.find(mh);
    if (dr == nullptr || dr->ptag != attr.ptag ||
        !dr->covers(uintptr_t(d), sizeof(VIP_CONTROL_SEGMENT))) {
        finish_in_software(q, s, s.op_status | VIP_STATUS_PROTECTION_ERROR);
        return VIP_SUCCESS;
    }
    const bool rdma = op != VIP_CONTROL_OP_SENDRECV;
    const uint32_t first = rdma ? 1 : 0;
    const bool imm = ctl & VIP_CONTROL_IMMEDIATE;
    if (op == VIP_CONTROL_OP_RESERVED || (ctl & VIP_CONTROL_RESERVED) ||
        d->CS.SegCount < first || d->CS.SegCount - first > max_sge ||
        (op == VIP_CONTROL_OP_RDMAREAD && (imm || !reliable()))) {
        finish_in_software(q, s, s.op_status | VIP_STATUS_FORMAT_ERROR);
        return VIP_SUCCESS;
    }
    if (!dr->covers(uintptr_t(d), sizeof(VIP_CONTROL_SEGMENT) +
                                      sizeof(VIP_DESCRIPTOR_SEGMENT) * d->CS.SegCount)) {
        finish_in_software(q, s, s.op_status | VIP_STATUS_PROTECTION_ERROR);
        return VIP_SUCCESS;
    }
    ibv_sge sge[kMaxSegments];
    int nsge = 0;
    uint64_t total = 0;
    uint32_t bad = build_sges(nic, static_cast<VerbsPtag *>(attr.ptag), &d->DS[first].Local,
                              d->CS.SegCount - first, sge, &nsge, &total);
    if (!bad && total != d->CS.Length)
        bad = VIP_STATUS_FORMAT_ERROR;
    if (!bad && total > attr.max_transfer)
        bad = VIP_STATUS_LENGTH_ERROR;
    if (bad) {
        finish_in_software(q, s, s.op_status | bad);
        return VIP_SUCCESS;
    }

    ibv_send_wr wr;
    wr.wr_id = reinterpret_cast<uint64_t>(&s);
    wr.next = nullptr;
    wr.sg_list = sge;
    wr.num_sge = nsge;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (ctl & VIP_CONTROL_QFENCE)
        wr.send_flags |= IBV_SEND_FENCE;
    if (op != VIP_CONTROL_OP_RDMAREAD && total <= max_inline)
        wr.send_flags |= IBV_SEND_INLINE;
    wr.imm_data = imm ? htonl(d->CS.ImmediateData) : 0;
    switch (op) {
    case VIP_CONTROL_OP_SENDRECV:
        wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
        break;
    case VIP_CONTROL_OP_RDMAWRITE:
        wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
        break;
    default:
        wr.opcode = IBV_WR_RDMA_READ;
        break;
    }
    if (rdma) {
        wr.wr.rdma.remote_addr = d->DS[0].Remote.Data.AddressBits;
        wr.wr.rdma.rkey = d->DS[0].Remote.Handle;
    }
    ibv_send_wr *bad_wr = nullptr;
    if (ibv_post_send(qp, &wr, &bad_wr) != 0)
        return VIP_ERROR_RESOURCE;
    __atomic_store_n(&q.tail, q.tail + 1, __ATOMIC_RELEASE); // seen by a Wait on another thread
    return VIP_SUCCESS;
}

VIP_RETURN VerbsVi::post_recv(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    WorkQueue &q = rq;
    if (q.tail - q.head >= q.depth())
        return VIP_ERROR_RESOURCE;
    if (__builtin_expect(needs_recovery, 0))
        recover();
    Slot &s = q.slots[q.tail & q.mask];
    s.desc = d;
    s.done = false;
    s.op_status = VIP_STATUS_OP_RECEIVE;
    d->CS.Status = 0;
    if (__builtin_expect(qp_needs_reset, 0)) {
        // The QP is stopped (error state, or idle after a disconnect) and the
        // device would keep the receive forever without completing it.  An idle
        // VI with nothing posted gets a fresh QP so the receive waits for the next
        // connection; otherwise the receive is flushed like its neighbours.
        if (state.load() == VIP_STATE_IDLE && sq.empty() && rq.empty() && !connector &&
            reset_qp() == VIP_SUCCESS) {
        } else {
            finish_in_software(q, s, VIP_STATUS_OP_RECEIVE | VIP_STATUS_DESC_FLUSHED_ERROR);
            return VIP_SUCCESS;
        }
    }
    const Region *dr = nic.mem.find(mh);
    if (dr == nullptr || dr->ptag != attr.ptag ||
        !dr->covers(uintptr_t(d), sizeof(VIP_CONTROL_SEGMENT))) {
        finish_in_software(q, s, VIP_STATUS_OP_RECEIVE | VIP_STATUS_PROTECTION_ERROR);
        return VIP_SUCCESS;
    }
    if ((d->CS.Control & VIP_CONTROL_RESERVED) || d->CS.SegCount > max_sge) {
        finish_in_software(q, s, VIP_STATUS_OP_RECEIVE | VIP_STATUS_FORMAT_ERROR);
        return VIP_SUCCESS;
    }
    if (!dr->covers(uintptr_t(d), sizeof(VIP_CONTROL_SEGMENT) +
                                      sizeof(VIP_DESCRIPTOR_SEGMENT) * d->CS.SegCount)) {
        finish_in_software(q, s, VIP_STATUS_OP_RECEIVE | VIP_STATUS_PROTECTION_ERROR);
        return VIP_SUCCESS;
    }
    ibv_sge sge[kMaxSegments];
    int nsge = 0;
    uint64_t total = 0;
    uint32_t bad = build_sges(nic, static_cast<VerbsPtag *>(attr.ptag), &d->DS[0].Local,
                              d->CS.SegCount, sge, &nsge, &total);
    if (bad) {
        finish_in_software(q, s, VIP_STATUS_OP_RECEIVE | bad);
        return VIP_SUCCESS;
    }
    ibv_recv_wr wr;
    wr.wr_id = reinterpret_cast<uint64_t>(&s);
    wr.next = nullptr;
    wr.sg_list = sge;
    wr.num_sge = nsge;
    ibv_recv_wr *bad_wr = nullptr;
    if (ibv_post_recv(qp, &wr, &bad_wr) != 0)
        return VIP_ERROR_RESOURCE;
    __atomic_store_n(&q.tail, q.tail + 1, __ATOMIC_RELEASE); // seen by a Wait on another thread
    return VIP_SUCCESS;
}

void complete_slot(const ibv_wc &wc) {
    Slot *s = reinterpret_cast<Slot *>(wc.wr_id);
    WorkQueue *q = s->queue;
    VIP_DESCRIPTOR *d = s->desc;
    uint32_t st = VIP_STATUS_DONE | s->op_status;
    if (wc.status == IBV_WC_SUCCESS) {
        if (q->is_recv) {
            if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM)
                st = VIP_STATUS_DONE | VIP_STATUS_OP_REMOTE_RDMA_WRITE;
            d->CS.Length = wc.byte_len;
            // Data from the requester proves the connection is up even if the
            // ESTABLISHED event has not been read yet (IB's "communication established").
            if (__builtin_expect(q->vi->accepted.load(std::memory_order_relaxed), 0)) {
                VIP_VI_STATE pending = VIP_STATE_CONNECT_PENDING;
                if (q->vi->state.compare_exchange_strong(pending, VIP_STATE_CONNECTED))
                    q->vi->established = true;
            }
            if (wc.wc_flags & IBV_WC_WITH_IMM) {
                st |= VIP_STATUS_IMMEDIATE;
                d->CS.ImmediateData = ntohl(wc.imm_data);
            }
        }
    } else if (q->is_recv && (wc.status == IBV_WC_LOC_LEN_ERR || wc.status == IBV_WC_LOC_QP_OP_ERR)) {
        // A receive WQE that cannot hold the message: rxe reports LOC_QP_OP_ERR
        // (its "malformed WQE" path), other devices LOC_LEN_ERR.
        st |= VIP_STATUS_LENGTH_ERROR;
    } else if (wc.status == IBV_WC_REM_INV_REQ_ERR && (s->op_status == VIP_STATUS_OP_RDMA_READ ||
                                                     s->op_status == VIP_STATUS_OP_RDMA_WRITE)) {
        // The target refused the RDMA itself (its VI does not enable it): on rxe an
        // invalid request, in VIPL terms an RDMA protection error.
        st |= VIP_STATUS_RDMA_PROT_ERROR;
    } else {
        st |= status_bits(wc.status);
    }
    s->done = true;
    __atomic_store_n(&d->CS.Status, st, __ATOMIC_RELEASE);
    if (q->bound)
        q->bound->push(q);
    if (wc.status != IBV_WC_SUCCESS && wc.status != IBV_WC_WR_FLUSH_ERR)
        q->vi->fail(wc.status, d, q->is_recv);
}

int WorkQueue::poll() {
    if (bound)
        return bound->poll();
    ibv_wc wc[16];
    int n = ibv_poll_cq(cq, 16, wc);
    for (int i = 0; i < n; i++)
        complete_slot(wc[i]);
    return n;
}

VIP_RETURN WorkQueue::done(VIP_DESCRIPTOR **d) {
    // tail is advanced by Post, possibly on another thread (a plain load on x86)
    if (head == __atomic_load_n(&tail, __ATOMIC_ACQUIRE))
        return VIP_NOT_DONE;
    Slot &s = slots[head & mask];
    if (!s.done) {
        poll();
        if (!s.done)
            return VIP_NOT_DONE;
    }
    s.done = false;
    head++;
    *d = s.desc;
    return VIP_SUCCESS;
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
    if (rc != VIP_NOT_DONE)
        return rc;
    const long spin = timeout_ms == 0 ? 0 : spin_ns();
    while (std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count() < spin) {
        rc = try_once();
        if (rc != VIP_NOT_DONE)
            return rc;
    }
    for (;;) {
        nic.pump_cm(0);
        ibv_req_notify_cq(cq, 0);
        rc = try_once();
        if (rc != VIP_NOT_DONE)
            return rc;
        long left = 100;
        if (timeout_ms != VIP_INFINITE) {
            long elapsed = long(
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
            if (elapsed >= long(timeout_ms))
                return VIP_TIMEOUT;
            left = std::min<long>(100, long(timeout_ms) - elapsed);
        }
        // Short slices: another thread may consume the event, or post to an empty queue.
        pollfd pfd[2] = {{ch->fd, POLLIN, 0}, {nic.cm_channel->fd, POLLIN, 0}};
        if (::poll(pfd, 2, int(left)) > 0 && (pfd[0].revents & POLLIN)) {
            ibv_cq *ev_cq = nullptr;
            void *ev_ctx = nullptr;
            if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0)
                ibv_ack_cq_events(ev_cq, 1);
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
        if (rc == VIP_NOT_DONE && head == __atomic_load_n(&tail, __ATOMIC_ACQUIRE) &&
            vi->state.load() == VIP_STATE_ERROR)
            rc = VIP_INVALID_STATE;
        return rc;
    });
}

} // namespace vipl::verbs
