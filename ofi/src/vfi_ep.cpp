// vfi_ep.cpp - active endpoints: one VI each, created at fi_enable with the
// CQs bound to the endpoint, and the registered block that holds its
// descriptors, its inject buffers and the sources of its credit writes.
#include "vfi.hpp"

#include <cstdlib>

namespace vfi {

constexpr size_t kDescBytes = 128; // control segment + 1 address + kIovLimit data segments, rounded
constexpr size_t kCreditSlots = 4; // send descriptors kept for credit writes
static_assert(sizeof(VIP_CONTROL_SEGMENT) + (1 + kIovLimit) * sizeof(VIP_DESCRIPTOR_SEGMENT) <= kDescBytes);

VIP_DESCRIPTOR *Ep::tx_desc(size_t i) { return reinterpret_cast<VIP_DESCRIPTOR *>(block + i * kDescBytes); }
VIP_DESCRIPTOR *Ep::rx_desc(size_t i) { return reinterpret_cast<VIP_DESCRIPTOR *>(block + (tx_n + i) * kDescBytes); }
uint8_t *Ep::inject_buf(size_t i) { return block + (tx_n + rx_n) * kDescBytes + i * kInjectSize; }
uint64_t *Ep::credit_src(size_t i) {
    return reinterpret_cast<uint64_t *>(block + (tx_n + rx_n) * kDescBytes + tx_n * kInjectSize) + i;
}
static size_t block_bytes(size_t tx_n, size_t rx_n) {
    return (tx_n + rx_n) * kDescBytes + tx_n * kInjectSize + tx_n * sizeof(uint64_t);
}

// The word the peer writes sits right after the block, in a registration of
// its own, the only one with RDMA write enabled: a peer can never write the
// descriptors.
struct CreditPage {
    alignas(64) volatile uint64_t word;
};

static CreditPage *credit_page(Ep *e) { return reinterpret_cast<CreditPage *>(e->block + e->block_len); }
volatile uint64_t *Ep::credit_word() { return &credit_page(this)->word; }

uint64_t Ep::peer_posted() const { return const_cast<Ep *>(this)->credit_word()[0]; }

// The block is VipxAllocMem memory: on nicfw a segment the peer's NIC maps
// once, so the peer's credit writes into our credit word, and ours from the
// block's sources, are a memcpy instead of a cross-memory-attach system call
// (about 2 us each, logp's mpi breakdown).
static uint8_t *block_alloc(Nic *n, size_t len) {
    void *p = nullptr;
    if (VipxAllocMem(n->handle, VIP_ULONG(len), &p) != VIP_SUCCESS) return nullptr;
    return static_cast<uint8_t *>(p);
}
static void block_free(Ep *e, Nic *n) {
    if (e->block && n) VipxFreeMem(n->handle, e->block);
    e->block = nullptr;
}

int ep_create_vi(Ep *e) {
    Nic *n = nic();
    if (!n) return -FI_ENODEV;
    if (!e->tx_cq || !e->rx_cq) return -FI_ENOCQ;
    e->tx_user_max = e->info->tx_attr->size;
    e->rx_max = e->info->rx_attr->size;
    e->tx_n = e->tx_user_max + kCreditSlots;
    e->rx_n = e->rx_max;
    e->block_len = (block_bytes(e->tx_n, e->rx_n) + 63) & ~size_t(63);
    size_t total = e->block_len + sizeof(CreditPage);
    e->block = block_alloc(n, (total + 4095) & ~size_t(4095));
    if (!e->block) return -FI_ENOMEM;
    std::memset(e->block, 0, total);
    VIP_MEM_ATTRIBUTES ma{n->ptag, VIP_FALSE, VIP_FALSE};
    VIP_RETURN rc = VipRegisterMem(n->handle, e->block, e->block_len, &ma, &e->block_handle);
    if (rc != VIP_SUCCESS) {
        block_free(e, n);
        return vip_to_fi(rc);
    }
    VIP_MEM_ATTRIBUTES wa{n->ptag, VIP_TRUE, VIP_FALSE};
    VIP_MEM_HANDLE ch;
    rc = VipRegisterMem(n->handle, (void *)credit_page(e), sizeof(CreditPage), &wa, &ch);
    if (rc != VIP_SUCCESS) {
        VipDeregisterMem(n->handle, e->block, e->block_handle);
        block_free(e, n);
        return vip_to_fi(rc);
    }
    e->credit_handle = ch;
    int grow = e->tx_cq->reserve(e->tx_n);
    if (grow == 0 && (grow = e->rx_cq->reserve(e->rx_n)) != 0) e->tx_cq->release(e->tx_n);
    if (grow) {
        VipDeregisterMem(n->handle, (void *)credit_page(e), ch);
        VipDeregisterMem(n->handle, e->block, e->block_handle);
        block_free(e, n);
        return grow;
    }
    e->tx_slots.assign(e->tx_n, Slot{});
    e->rx_slots.assign(e->rx_n, Slot{});
    VIP_VI_ATTRIBUTES va{};
    va.ReliabilityLevel = reliability();
    va.MaxTransferSize = e->info->ep_attr->max_msg_size;
    va.QoS = nullptr;
    va.Ptag = n->ptag;
    va.EnableRdmaWrite = VIP_TRUE;
    va.EnableRdmaRead = (n->attr.RDMAReadSupport & va.ReliabilityLevel) ? VIP_TRUE : VIP_FALSE;
    rc = VipCreateVi(n->handle, &va, e->tx_cq->vcq, e->rx_cq->vcq, &e->vi);
    if (rc != VIP_SUCCESS) {
        e->tx_cq->release(e->tx_n);
        e->rx_cq->release(e->rx_n);
        VipDeregisterMem(n->handle, (void *)credit_page(e), ch);
        VipDeregisterMem(n->handle, e->block, e->block_handle);
        block_free(e, n);
        return vip_to_fi(rc);
    }
    return 0;
}

static int ep_close(struct fid *fid) {
    Ep *e = reinterpret_cast<Ep *>(fid);
    CtlGuard g;
    // Off the CQs first: a drain running now finishes before this returns,
    // and no later one finds the endpoint.
    register_ep(e, false);
    std::unique_lock<Lock> ge(e->mu);
    Nic *n = nic();
    ep_drop_pending(e);
    if (e->vi) {
        // Descriptors that completed before the close are the application's
        // completions: queue them (rxm reads its CQ after closing a
        // connection's endpoint for exactly these).  What the disconnect then
        // flushes is dropped.
        if (e->tx_cq && e->rx_cq) {
            size_t n = e->tx_head - e->tx_tail;
            while (n-- && e->tx_head != e->tx_tail) ep_process(e, false);
            n = e->rx_head - e->rx_tail;
            while (n-- && e->rx_head != e->rx_tail) ep_process(e, true);
        }
        VIP_VI_STATE st;
        VIP_VI_ATTRIBUTES va;
        VIP_BOOLEAN se, re;
        if (VipQueryVi(e->vi, &st, &va, &se, &re) == VIP_SUCCESS && st != VIP_STATE_IDLE) VipDisconnect(e->vi);
        // Drop what the VI still holds (flushed by the disconnect): the
        // application's buffers are its own again once fi_close returns.
        VIP_DESCRIPTOR *d;
        while (VipSendDone(e->vi, &d) == VIP_SUCCESS) {}
        while (VipRecvDone(e->vi, &d) == VIP_SUCCESS) {}
        VIP_RETURN rc = VipDestroyVi(e->vi);
        if (rc != VIP_SUCCESS) warn("VipDestroyVi: %s", VipxReturnString(rc));
    }
    if (e->block && n) {
        VipDeregisterMem(n->handle, (void *)credit_page(e), e->credit_handle);
        VipDeregisterMem(n->handle, e->block, e->block_handle);
    }
    block_free(e, n);
    if (e->eq) e->eq->drop_fid(&e->ep.fid);
    if (e->tx_cq) {
        e->tx_cq->refs--;
        if (e->vi) e->tx_cq->release(e->tx_n);
    }
    if (e->rx_cq) {
        e->rx_cq->refs--;
        if (e->vi) e->rx_cq->release(e->rx_n);
    }
    e->domain->refs--;
    if (e->info) fi_freeinfo(e->info);
    // The endpoint stays as a stub until its domain closes: ofi_rxm handles the
    // receive completions queued above after this close returns, and reposts
    // the buffer of each on the endpoint it has just closed; the stub refuses
    // that post (-FI_EOPBADSTATE, -FI_ENOTCONN for sends) instead of it
    // landing in freed memory.  A stub holds no VI, memory or CQ space.
    e->info = nullptr;
    e->vi = nullptr;
    e->block = nullptr;
    e->enabled = false;
    e->state = EpState::Shutdown;
    e->tx_cq = e->rx_cq = nullptr;
    e->eq = nullptr;
    e->domain->closed_eps.push_back(e);
    return 0;
}

Domain::~Domain() {
    for (Ep *e : closed_eps) delete e;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags) {
    Ep *e = reinterpret_cast<Ep *>(fid);
    CtlGuard g;
    if (e->enabled) return -FI_EOPBADSTATE;
    switch (bfid->fclass) {
    case FI_CLASS_EQ: e->eq = reinterpret_cast<Eq *>(bfid); return 0;
    case FI_CLASS_CQ: {
        Cq *c = reinterpret_cast<Cq *>(bfid);
        if (!(flags & (FI_TRANSMIT | FI_RECV)) || flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
            return -FI_EINVAL;
        if (flags & FI_TRANSMIT) {
            if (e->tx_cq) return -FI_EINVAL;
            e->tx_cq = c;
            c->refs++;
            e->tx_flags = flags & FI_SELECTIVE_COMPLETION;
        }
        if (flags & FI_RECV) {
            if (e->rx_cq) return -FI_EINVAL;
            e->rx_cq = c;
            c->refs++;
            e->rx_flags = flags & FI_SELECTIVE_COMPLETION;
        }
        return 0;
    }
    case FI_CLASS_SRX_CTX:
    case FI_CLASS_STX_CTX:
    case FI_CLASS_CNTR:
    case FI_CLASS_AV:
    default: return -FI_ENOSYS;
    }
}

static int ep_control(struct fid *fid, int cmd, void *arg) {
    Ep *e = reinterpret_cast<Ep *>(fid);
    CtlGuard g;
    switch (cmd) {
    case FI_ENABLE: {
        if (e->enabled) return 0;
        if (!e->eq) return -FI_ENOEQ;
        int rc = ep_create_vi(e);
        if (rc) return rc;
        {
            Guard ge(e->mu);
            e->enabled = true;
        }
        register_ep(e, true);
        return 0;
    }
    case FI_GETOPSFLAG: {
        uint64_t *f = static_cast<uint64_t *>(arg);
        if (!f) return -FI_EINVAL;
        *f = (*f & FI_TRANSMIT) ? e->tx_op_flags : e->rx_op_flags;
        return 0;
    }
    case FI_SETOPSFLAG: {
        uint64_t *f = static_cast<uint64_t *>(arg);
        if (!f) return -FI_EINVAL;
        if (*f & FI_TRANSMIT) e->tx_op_flags = *f & ~FI_TRANSMIT;
        else e->rx_op_flags = *f & ~FI_RECV;
        return 0;
    }
    default: return -FI_ENOSYS;
    }
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen) {
    if (level != FI_OPT_ENDPOINT) return -FI_ENOPROTOOPT;
    if (optname != FI_OPT_CM_DATA_SIZE) return -FI_ENOPROTOOPT;
    if (!optval || !optlen || *optlen < sizeof(size_t)) return -FI_ETOOSMALL;
    *static_cast<size_t *>(optval) = kCmDataMax;
    *optlen = sizeof(size_t);
    return 0;
}

static int ep_setopt(fid_t, int level, int, const void *, size_t) {
    return level == FI_OPT_ENDPOINT ? -FI_ENOPROTOOPT : -FI_ENOPROTOOPT;
}

static ssize_t ep_cancel(fid_t, void *) { return -FI_ENOENT; } // posted VI descriptors cannot be taken back

static ssize_t ep_rx_size_left(struct fid_ep *ep) {
    Ep *e = reinterpret_cast<Ep *>(ep);
    Serial s;
    Guard g(e->mu);
    return ssize_t(e->rx_max - (e->rx_head - e->rx_tail));
}
static ssize_t ep_tx_size_left(struct fid_ep *ep) {
    Ep *e = reinterpret_cast<Ep *>(ep);
    Serial s;
    Guard g(e->mu);
    return ssize_t(e->tx_user_max - e->tx_user_inflight - e->pending.size());
}

static int ep_no_txctx(struct fid_ep *, int, struct fi_tx_attr *, struct fid_ep **, void *) { return -FI_ENOSYS; }
static int ep_no_rxctx(struct fid_ep *, int, struct fi_rx_attr *, struct fid_ep **, void *) { return -FI_ENOSYS; }

static struct fi_ops ep_fi_ops = {sizeof(struct fi_ops), ep_close, ep_bind,   ep_control,
                                  no_ops_open,           no_tostr, no_ops_set};
struct fi_ops_ep ep_ep_ops = {sizeof(struct fi_ops_ep), ep_cancel,      ep_getopt, ep_setopt, ep_no_txctx, ep_no_rxctx,
                              ep_rx_size_left,          ep_tx_size_left};

// Tagged, atomic and collective operations are not offered (rxm provides
// tagged messages over FI_MSG): every entry answers -FI_ENOSYS.
// The tables are filled with one function: every slot returns an ssize_t or
// an int in rax on x86-64 and the arguments are ignored, which is how the
// tables of libfabric's own providers' unsupported operations behave.
static ssize_t no_op() { return -FI_ENOSYS; }
template <class Table>
static Table unsupported_table() {
    Table t;
    auto **slot = reinterpret_cast<void (**)()>(&t);
    for (size_t i = 0; i < sizeof(Table) / sizeof(void *); i++) slot[i] = reinterpret_cast<void (*)()>(no_op);
    t.size = sizeof(Table);
    return t;
}
static struct fi_ops_tagged no_tagged = unsupported_table<fi_ops_tagged>();
static struct fi_ops_atomic no_atomic = unsupported_table<fi_ops_atomic>();
static struct fi_ops_collective no_coll = unsupported_table<fi_ops_collective>();

int ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **out, void *context) {
    if (!info || !out || !info->ep_attr || info->ep_attr->type != FI_EP_MSG || !info->tx_attr || !info->rx_attr)
        return -FI_EINVAL;
    CtlGuard g;
    Nic *n = nic();
    if (!n) return -FI_ENODEV;
    if (info->tx_attr->size == 0 || info->rx_attr->size == 0 ||
        info->tx_attr->size + kCreditSlots > n->attr.MaxDescriptorsPerQueue ||
        info->rx_attr->size > n->attr.MaxDescriptorsPerQueue || info->tx_attr->iov_limit > kIovLimit ||
        info->rx_attr->iov_limit > kIovLimit)
        return -FI_EINVAL;
    if (info->dest_addr && !addr_parse(info->dest_addr, info->dest_addrlen, nullptr, nullptr)) return -FI_EINVAL;
    Ep *e = new Ep;
    e->info = fi_dupinfo(info);
    e->domain = reinterpret_cast<Domain *>(domain);
    e->domain->refs++;
    e->tx_op_flags = info->tx_attr->op_flags;
    e->rx_op_flags = info->rx_attr->op_flags;
    addr_make(n->host, 0, &e->local);
    if (info->src_addr && addr_parse(info->src_addr, info->src_addrlen, nullptr, nullptr))
        std::memcpy(&e->local, info->src_addr, kAddrLen);
    if (info->dest_addr) std::memcpy(&e->peer, info->dest_addr, kAddrLen);
    if (info->handle) { // from an FI_CONNREQ: the request this endpoint will answer
        e->conn = reinterpret_cast<VIP_CONN_HANDLE>(info->handle);
        e->state = EpState::Accepting;
    }
    e->ep.fid.fclass = FI_CLASS_EP;
    e->ep.fid.context = context;
    e->ep.fid.ops = &ep_fi_ops;
    e->ep.ops = &ep_ep_ops;
    e->ep.cm = &ep_cm_ops;
    e->ep.msg = &ep_msg_ops;
    e->ep.rma = &ep_rma_ops;
    e->ep.tagged = &no_tagged;
    e->ep.atomic = &no_atomic;
    e->ep.collective = &no_coll;
    *out = &e->ep;
    return 0;
}

} // namespace vfi
