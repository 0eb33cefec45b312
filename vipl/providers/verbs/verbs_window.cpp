// verbs_window.cpp - a region's RDMA rights as a memory window (verbs_mem.hpp).
//
// VipSetMemAttributes keeps the region's handle, and an RDMA-enabled region's
// handle is what a peer puts in an address segment: the device's rkey.  rxe
// cannot re-register a region in place, and a new registration gets a new
// rkey.  A type-1 memory window can be re-bound under the rkey it already has,
// with other access rights, so the handle of a region is its window's rkey and
// the rights are re-bound in place (docs/verbs.md, "Memory handles").  Binding
// is a work request: each protection tag has a queue pair connected to itself
// that only binds windows (made on first use).
#include <chrono>
#include <cstring>

#include "verbs_provider.hpp"
#include "viastack_log.hpp"

namespace vipl::verbs {

namespace {

constexpr int kBindTimeoutMs = 5000;

// The port's GID to loop back to: the IPv4-mapped one on RoCE, else index 0.
int loopback_gid(ibv_context *ctx, uint8_t port, const ibv_port_attr &pa, ibv_gid *out) {
    for (int i = 0; i < pa.gid_tbl_len; i++) {
        ibv_gid g{};
        if (ibv_query_gid(ctx, port, i, &g) != 0) continue;
        static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (std::memcmp(g.raw, v4_prefix, 12) == 0) {
            *out = g;
            return i;
        }
    }
    return ibv_query_gid(ctx, port, 0, out) == 0 ? 0 : -1;
}

// INIT -> RTR -> RTS with the queue pair as its own destination.
bool connect_to_self(VerbsNic &nic, ibv_qp *qp) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = nic.port;
    a.qp_access_flags = IBV_ACCESS_MW_BIND;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) return false;
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = nic.port_attr.active_mtu;
    a.dest_qp_num = qp->qp_num;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = nic.port;
    if (nic.port_attr.link_layer == IBV_LINK_LAYER_ETHERNET) {
        int gi = loopback_gid(nic.ctx, nic.port, nic.port_attr, &a.ah_attr.grh.dgid);
        if (gi < 0) return false;
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.sgid_index = uint8_t(gi);
        a.ah_attr.grh.hop_limit = 1;
    } else {
        a.ah_attr.dlid = nic.port_attr.lid;
    }
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
        return false;
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 6;
    a.rnr_retry = 6;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                             IBV_QP_MAX_QP_RD_ATOMIC) == 0;
}

int window_access(bool rdma_write, bool rdma_read) {
    return (rdma_write ? IBV_ACCESS_REMOTE_WRITE : 0) | (rdma_read ? IBV_ACCESS_REMOTE_READ : 0);
}

} // namespace

bool WindowBinder::ready(VerbsNic &nic, ibv_pd *pd) {
    if (qp) return true;
    if (failed || nic.dev_attr.max_mw <= 0) return false;
    failed = true; // until it works
    cq = ibv_create_cq(nic.ctx, 4, nullptr, nullptr, 0);
    if (!cq) return false;
    ibv_qp_init_attr ia{};
    ia.send_cq = cq;
    ia.recv_cq = cq;
    ia.cap.max_send_wr = 2;
    ia.cap.max_recv_wr = 1;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    ia.qp_type = IBV_QPT_RC;
    ia.sq_sig_all = 1;
    qp = ibv_create_qp(pd, &ia);
    if (!qp || !connect_to_self(nic, qp)) {
        viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_WARN,
                     "%s: no memory windows (the binding queue pair does not come up); a region's RDMA "
                     "rights are then fixed at registration",
                     nic.name.c_str());
        close();
        return false;
    }
    failed = false;
    return true;
}

void WindowBinder::close() {
    if (qp) ibv_destroy_qp(qp);
    if (cq) ibv_destroy_cq(cq);
    qp = nullptr;
    cq = nullptr;
}

bool WindowBinder::bind(ibv_mw *mw, ibv_mr *mr, bool rdma_write, bool rdma_read) {
    ibv_send_wr wr{}, *bad = nullptr;
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = mw->rkey; // the same rkey: the handle peers hold stays valid
    wr.bind_mw.bind_info.mr = mr;
    wr.bind_mw.bind_info.addr = uintptr_t(mr->addr);
    wr.bind_mw.bind_info.length = mr->length;
    wr.bind_mw.bind_info.mw_access_flags = unsigned(window_access(rdma_write, rdma_read));
    if (ibv_post_send(qp, &wr, &bad) != 0) return false;
    ibv_wc wc{};
    int n = 0;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBindTimeoutMs);
         (n = ibv_poll_cq(cq, 1, &wc)) == 0 && std::chrono::steady_clock::now() < until;) {}
    return n == 1 && wc.status == IBV_WC_SUCCESS;
}

ibv_mw *WindowBinder::open_window(VerbsNic &nic, ibv_pd *pd, ibv_mr *mr, bool rdma_write, bool rdma_read) {
    if (!ready(nic, pd)) return nullptr;
    ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
    if (!mw) return nullptr;
    if (!bind(mw, mr, rdma_write, rdma_read)) {
        ibv_dealloc_mw(mw);
        return nullptr;
    }
    return mw;
}

} // namespace vipl::verbs
