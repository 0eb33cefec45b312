// verbs_vi.cpp - VI <-> queue pair: creation, QP state changes, query, errors.
#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <chrono>
#include <thread>

#include "verbs_cm.hpp"
#include "viastack_log.hpp"
#include "verbs_provider.hpp"

namespace vipl::verbs {

namespace {

uint32_t pow2_at_least(uint32_t n) {
    uint32_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

int qp_access(const prov::ViAttr &a) {
    int f = 0;
    if (a.rdma_write) f |= IBV_ACCESS_REMOTE_WRITE;
    if (a.rdma_read) f |= IBV_ACCESS_REMOTE_READ;
    return f;
}

VIP_RETURN make_private_cq(VerbsNic &nic, uint32_t depth, WorkQueue &q) {
    q.channel = ibv_create_comp_channel(nic.ctx);
    if (!q.channel) return VIP_ERROR_RESOURCE;
    fcntl(q.channel->fd, F_SETFL, fcntl(q.channel->fd, F_GETFL) | O_NONBLOCK);
    q.cq = ibv_create_cq(nic.ctx, int(depth), &q, q.channel, 0);
    return q.cq ? VIP_SUCCESS : VIP_ERROR_RESOURCE;
}

} // namespace

VIP_RETURN check_vi_attr(VerbsNic &nic, const prov::ViAttr &a) {
    if (a.reliability != VIP_SERVICE_UNRELIABLE && a.reliability != VIP_SERVICE_RELIABLE_DELIVERY &&
        a.reliability != VIP_SERVICE_RELIABLE_RECEPTION)
        return VIP_INVALID_RELIABILITY_LEVEL;
    if (a.qos != nullptr) return VIP_INVALID_QOS;
    if (a.ptag == nullptr) return VIP_INVALID_PTAG;
    {
        std::lock_guard<std::mutex> g(nic.ctl_mu);
        if (std::find(nic.ptags.begin(), nic.ptags.end(), a.ptag) == nic.ptags.end()) return VIP_INVALID_PTAG;
    }
    if (a.max_transfer == 0 || a.max_transfer > nic.port_attr.max_msg_sz) return VIP_INVALID_MTU;
    if (a.rdma_read && a.reliability == VIP_SERVICE_UNRELIABLE)
        return VIP_INVALID_RDMAREAD; // UC queue pairs have no RDMA read
    return VIP_SUCCESS;
}

VerbsVi::VerbsVi(VerbsNic &n) : nic(n) {}

VIP_RETURN VerbsVi::init(const prov::ViAttr &a, VerbsCq *send_cq, VerbsCq *recv_cq) {
    VIP_RETURN rc = check_vi_attr(nic, a);
    if (rc != VIP_SUCCESS) return rc;
    attr = a;
    const uint32_t depth = pow2_at_least(nic.queue_depth);
    for (WorkQueue *q : {&sq, &rq}) {
        q->vi = this;
        q->is_recv = q == &rq;
        q->ring.reset(depth);
        for (uint32_t i = 0; i < depth; i++) q->ring.slot(i).info.queue = q;
    }
    sq.bound = send_cq;
    rq.bound = recv_cq;
    for (WorkQueue *q : {&sq, &rq}) {
        if (q->bound) {
            rc = q->bound->bind(depth);
            if (rc != VIP_SUCCESS) {
                q->bound = nullptr;
                return rc;
            }
            q->cq = q->bound->cq;
        } else if ((rc = make_private_cq(nic, depth, *q)) != VIP_SUCCESS) {
            return rc;
        }
    }
    max_sge = nic.max_sge;
    VIP_RETURN qrc = create_qp();
    if (qrc != VIP_SUCCESS) return qrc;
    static_cast<VerbsPtag *>(attr.ptag)->users++;
    return VIP_SUCCESS;
}

// The QP type (RC/UC) and protection domain come from the attributes; both are
// fixed for the life of a QP, so changing them on an idle VI makes a new QP.
VIP_RETURN VerbsVi::create_qp() {
    ibv_qp_init_attr ia{};
    ia.qp_context = this;
    ia.send_cq = sq.cq;
    ia.recv_cq = rq.cq;
    ia.cap.max_send_wr = sq.depth();
    ia.cap.max_recv_wr = rq.depth();
    ia.cap.max_send_sge = max_sge;
    ia.cap.max_recv_sge = max_sge;
    ia.cap.max_inline_data = 256; // small sends skip the gather of the payload
    ia.qp_type = reliable() ? IBV_QPT_RC : IBV_QPT_UC;
    ia.sq_sig_all = 1;
    auto *pd = static_cast<VerbsPtag *>(attr.ptag)->pd;
    ibv_qp *q = ibv_create_qp(pd, &ia);
    if (!q) {
        ia.cap.max_inline_data = 0;
        q = ibv_create_qp(pd, &ia);
    }
    if (!q) return VIP_ERROR_RESOURCE;
    if (qp) ibv_destroy_qp(qp);
    qp = q;
    max_inline = ia.cap.max_inline_data;
    return reset_qp();
}

VerbsVi::~VerbsVi() {
    if (cm_id) rdma_destroy_id(cm_id);
    if (qp) {
        ibv_destroy_qp(qp);
        static_cast<VerbsPtag *>(attr.ptag)->users--;
    }
    for (WorkQueue *q : {&sq, &rq}) {
        if (q->bound) {
            q->bound->forget(this);
            q->bound->unbind(q->depth());
        } else {
            if (q->cq) ibv_destroy_cq(q->cq);
            if (q->channel) ibv_destroy_comp_channel(q->channel);
        }
    }
}

VIP_RETURN VerbsVi::reset_qp() {
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_RESET;
    if (ibv_modify_qp(qp, &qa, IBV_QP_STATE) != 0) return VIP_ERROR_RESOURCE;
    qa = {};
    qa.qp_state = IBV_QPS_INIT;
    qa.pkey_index = 0;
    qa.port_num = nic.port;
    qa.qp_access_flags = qp_access(attr);
    if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        return VIP_ERROR_RESOURCE;
    qp_needs_reset = false;
    return VIP_SUCCESS;
}

// rdma_cm computes the path, MTU, PSNs and timeouts; we keep our access flags,
// a short RNR timer and, for UC, only the attributes UC accepts.
VIP_RETURN VerbsVi::bring_up(rdma_cm_id *id, bool *peer_gone) {
    const bool rc_qp = reliable();
    if (peer_gone) *peer_gone = false;
    for (ibv_qp_state st : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
        ibv_qp_attr qa{};
        int mask = 0;
        qa.qp_state = st;
        static const char *const names[] = {"RESET", "INIT", "RTR", "RTS"};
        if (rdma_init_qp_attr(id, &qa, &mask) != 0) {
            if (peer_gone) *peer_gone = true; // (typically: the peer withdrew its request)
            return VIP_ERROR_RESOURCE;
        }
        if (st == IBV_QPS_INIT) {
            qa.qp_access_flags = qp_access(attr);
            mask &= IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
        } else if (st == IBV_QPS_RTR) {
            if (rc_qp) {
                qa.min_rnr_timer = nic.min_rnr_timer;
                mask |= IBV_QP_MIN_RNR_TIMER;
            } else {
                mask &= IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_ALT_PATH |
                    IBV_QP_PKEY_INDEX;
            }
        } else {
            if (rc_qp) {
                qa.rnr_retry = nic.rnr_retry;
                mask |= IBV_QP_RNR_RETRY;
            } else {
                mask &= IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE;
            }
        }
        if (int e = ibv_modify_qp(qp, &qa, mask); e != 0) {
            viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR, "moving the QP to %s failed: %s", names[st],
                         std::strerror(e));
            return VIP_ERROR_RESOURCE;
        }
    }
    return VIP_SUCCESS;
}

bool VerbsVi::break_connection() {
    VIP_VI_STATE expect = VIP_STATE_CONNECTED;
    if (!state.compare_exchange_strong(expect, VIP_STATE_ERROR)) return false;
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(qp, &qa, IBV_QP_STATE);
    qp_needs_reset = true;
    // The connection is broken for both ends (the spec's reliable levels): tell
    // the peer, whose VI then enters the error state too.
    if (cm_id) rdma_disconnect(cm_id);
    return true;
}

namespace {
// Completion errors that mean the connection itself is gone (not just this descriptor).
bool is_transport_loss(ibv_wc_status s) {
    return s == IBV_WC_RETRY_EXC_ERR || s == IBV_WC_RNR_RETRY_EXC_ERR || s == IBV_WC_FATAL_ERR ||
        s == IBV_WC_RESP_TIMEOUT_ERR || s == IBV_WC_REM_ABORT_ERR || s == IBV_WC_GENERAL_ERR;
}
} // namespace

void VerbsVi::fail(ibv_wc_status s, VIP_DESCRIPTOR *d, bool recv_queue) {
    if (reliable()) {
        // Several completions of one loss may fail on several threads at once:
        // the one that breaks the connection reports it (one callback).
        const bool was_connected = break_connection();
        // The descriptor's status tells its owner what went wrong; the callback is
        // for what the owner cannot see: the connection is gone.
        if (was_connected && s == IBV_WC_RNR_RETRY_EXC_ERR) {
            // The receiver had no receive posted (the spec's RECVQ_EMPTY).  The
            // device told only the sender; name the receiving VI when it is one of
            // this NIC's, else the sender's VI.
            nic.report_error(VIP_ERROR_RECVQ_EMPTY, VIP_RESOURCE_VI, local_peer() ? local_peer() : this, nullptr, 0);
        } else if (was_connected && is_transport_loss(s)) {
            nic.report_error(VIP_ERROR_CONN_LOST, VIP_RESOURCE_VI, this, d,
                             recv_queue ? VIP_STATUS_OP_RECEIVE : VIP_STATUS_OP_SEND);
        }
        return;
    }
    ibv_qp_attr qa{};
    ibv_qp_init_attr ia{};
    if (ibv_query_qp(qp, &qa, IBV_QP_STATE, &ia) == 0 && qa.qp_state == IBV_QPS_ERR && cm_id) needs_recovery = true;
}

// A post looks regions up under its queue's post lock, a completion under its
// ibv_cq's poll lock: once each has been free after the region left the
// table, no thread still holds it.
void VerbsVi::quiesce_region_readers() {
    for (WorkQueue *q : {&sq, &rq}) {
        { common::SpinGuard g(q->ring.post_lock); }
        { common::SpinGuard g(q->poll_lock()); }
    }
}

VerbsVi *VerbsVi::local_peer() {
    ibv_qp_attr qa{};
    ibv_qp_init_attr ia{};
    if (ibv_query_qp(qp, &qa, IBV_QP_DEST_QPN, &ia) != 0) return nullptr;
    // (The notify thread may hold the lock while it polls and lands here.)
    std::unique_lock<std::mutex> g(nic.ctl_mu, std::try_to_lock);
    if (!g.owns_lock()) return nullptr;
    for (VerbsVi *v : nic.vis) // QP numbers are unique on the device this NIC drives
        if (v != this && v->qp && v->qp->qp_num == qa.dest_qp_num) return v;
    return nullptr;
}

void VerbsVi::recover() {
    // Posters of both queues may find the flag: one recovers, the other waits.
    std::lock_guard<std::mutex> g(recovery_mu);
    if (!needs_recovery.exchange(false)) return;
    // Let the device flush what was posted before the error, so that every slot
    // completes before the queue pair is reset.
    drain_after_error(*this);
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_RESET;
    if (ibv_modify_qp(qp, &qa, IBV_QP_STATE) != 0 || !cm_id || bring_up(cm_id) != VIP_SUCCESS) break_connection();
}

void VerbsVi::check_qp_state() {
    if (state.load() != VIP_STATE_CONNECTED) return;
    ibv_qp_attr qa{};
    ibv_qp_init_attr ia{};
    if (ibv_query_qp(qp, &qa, IBV_QP_STATE, &ia) != 0 || qa.qp_state != IBV_QPS_ERR) return;
    if (!reliable()) {
        needs_recovery = cm_id != nullptr;
        return;
    }
    if (!break_connection()) return; // another thread broke it (and reported it)
    // Nothing of ours failed: the peer did something this VI refused (typically an
    // RDMA outside what this side enabled) and the device dropped the connection.
    nic.report_error(VIP_ERROR_CONN_LOST, VIP_RESOURCE_VI, this, nullptr, 0);
}

VIP_RETURN VerbsVi::query(VIP_VI_STATE *st, prov::ViAttr *a, bool *sendq_empty, bool *recvq_empty) {
    nic.pump_cm(0); // connection events change the state
    check_qp_state();
    if (st) *st = state.load();
    if (a) *a = attr;
    if (sendq_empty) *sendq_empty = sq.empty();
    if (recvq_empty) *recvq_empty = rq.empty();
    return VIP_SUCCESS;
}

VIP_RETURN VerbsVi::set_attributes(const prov::ViAttr &a) {
    if (state.load() != VIP_STATE_IDLE) return VIP_INVALID_STATE;
    VIP_RETURN rc = check_vi_attr(nic, a);
    if (rc != VIP_SUCCESS) return rc;
    const bool new_qp = a.ptag != attr.ptag ||
        (a.reliability == VIP_SERVICE_UNRELIABLE) != (attr.reliability == VIP_SERVICE_UNRELIABLE);
    if (new_qp) {
        if (!sq.empty() || !rq.empty()) return VIP_INVALID_STATE; // posted descriptors belong to the current QP
        prov::ViAttr old = attr;
        attr = a;
        if (create_qp() != VIP_SUCCESS) {
            attr = old;
            return VIP_ERROR_RESOURCE;
        }
        static_cast<VerbsPtag *>(old.ptag)->users--;
        static_cast<VerbsPtag *>(attr.ptag)->users++;
        return VIP_SUCCESS;
    }
    attr = a;
    if (!qp_needs_reset) {
        ibv_qp_attr qa{};
        qa.qp_access_flags = qp_access(attr);
        if (ibv_modify_qp(qp, &qa, IBV_QP_ACCESS_FLAGS) != 0) return VIP_ERROR_RESOURCE;
    }
    return VIP_SUCCESS;
}

// Arms a one-shot notify handler on one work queue (one pending per queue).
static VIP_RETURN arm_notify(VerbsNic &nic, WorkQueue &q, VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) {
    {
        std::lock_guard<std::mutex> g(nic.ctl_mu);
        if (q.notify_fn) return VIP_INVALID_STATE;
        q.notify_ctx = ctx;
        q.notify_fn = h;
    }
    nic.notify_armed();
    return VIP_SUCCESS;
}

VIP_RETURN VerbsVi::send_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) { return arm_notify(nic, sq, ctx, h); }

VIP_RETURN VerbsVi::recv_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) { return arm_notify(nic, rq, ctx, h); }

// Drains the completions of a QP that was moved to the error state, so that
// every posted descriptor is marked (flushed) before the caller reaps them.
void drain_after_error(VerbsVi &vi) {
    const auto t0 = std::chrono::steady_clock::now();
    auto outstanding = [&] { return !vi.sq.ring.all_complete() || !vi.rq.ring.all_complete(); };
    while (outstanding() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2)) {
        if (vi.sq.poll() + vi.rq.poll() == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

} // namespace vipl::verbs
