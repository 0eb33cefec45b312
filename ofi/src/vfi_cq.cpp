// vfi_cq.cpp - completion queues over VI completion queues.
//
// Each CQ owns a VIP CQ; the VIs of the endpoints bound to it name it as
// their send or receive CQ.  Progress (every read) takes VI completions off
// the VIP CQ, pulls the descriptor from its VI queue (ep_process) and queues
// what the application sees; the provider's own descriptors (credit writes)
// are consumed there and never reach the application.
//
// Threads: the drain lock makes one thread at a time take completions off a
// CQ (each completion must reach its endpoint in its VI queue's order); a
// reader that finds another thread draining does not wait for it but reads
// what is queued.  The entries lock guards only the queues the application
// reads.
#include "vfi.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sys/eventfd.h>
#include <thread>

namespace vfi {

void Cq::push(const CqEntry &e) {
    Guard g(entries);
    (e.err ? errq : q).push_back(e);
    wait.signal_if(true);
}

int Cq::reserve(size_t n) {
    Guard g(drain);
    if (needed + n > capacity) {
        VIP_RETURN rc = VipResizeCQ(vcq, needed + n);
        if (rc != VIP_SUCCESS) {
            warn("VipResizeCQ(%zu): %s", needed + n, VipxReturnString(rc));
            return -FI_ENOSPC;
        }
        capacity = needed + n;
    }
    needed += n;
    return 0;
}

// The caller holds cq->drain.
static void drain(Cq *cq, size_t want) {
    for (int i = 0; i < 64 && (want == kDrainAll || cq->queued() < want); i++) {
        VIP_VI_HANDLE vi = nullptr;
        VIP_BOOLEAN recv = VIP_FALSE;
        VIP_RETURN rc = VipCQDone(cq->vcq, &vi, &recv);
        if (rc != VIP_SUCCESS) break;
        Ep *e = cq->ep_of_vi(vi);
        if (!e) { // an endpoint closed under its completions: drop the descriptor
            VIP_DESCRIPTOR *d;
            if (recv) VipRecvDone(vi, &d);
            else VipSendDone(vi, &d);
            continue;
        }
        Guard ge(e->mu);
        ep_process(e, recv == VIP_TRUE);
    }
    flush_pending_on(cq);
    Guard g(cq->entries);
    cq->wait.signal_if(!cq->q.empty() || !cq->errq.empty());
}

void progress_cq(Cq *cq, size_t want) {
    Guard g(cq->drain);
    drain(cq, want);
}

bool try_progress_cq(Cq *cq, size_t want) {
    if (!cq->drain.try_lock()) return false;
    drain(cq, want);
    cq->drain.unlock();
    return true;
}

static int cq_close(struct fid *fid) {
    Cq *c = reinterpret_cast<Cq *>(fid);
    CtlGuard g;
    if (c->refs > 0) return -FI_EBUSY;
    register_cq(c, false);
    VIP_RETURN rc = VipDestroyCQ(c->vcq);
    if (rc != VIP_SUCCESS) warn("VipDestroyCQ: %s", VipxReturnString(rc));
    c->wait.close_fd();
    c->domain->refs--;
    delete c;
    return 0;
}

static int cq_control(struct fid *fid, int cmd, void *arg) {
    Cq *c = reinterpret_cast<Cq *>(fid);
    CtlGuard g; // not the entries lock, a leaf: FI_GETWAIT may start the wait thread (control lock)
    return c->wait.control(cmd, arg);
}

static void fill(const Cq *c, const CqEntry &e, void *out, size_t i) {
    switch (c->format) {
    case FI_CQ_FORMAT_CONTEXT: static_cast<fi_cq_entry *>(out)[i] = {e.context}; break;
    case FI_CQ_FORMAT_MSG: static_cast<fi_cq_msg_entry *>(out)[i] = {e.context, e.flags, e.len}; break;
    default: static_cast<fi_cq_data_entry *>(out)[i] = {e.context, e.flags, e.len, e.buf, e.data}; break;
    }
}

static ssize_t cq_read(struct fid_cq *cqf, void *buf, size_t count) {
    Cq *c = reinterpret_cast<Cq *>(cqf);
    Serial s;
    if (!c->queued()) try_progress_cq(c, count ? count : 1); // if another thread drains, what it finds is queued for us
    Guard g(c->entries);
    if (!c->errq.empty()) return -FI_EAVAIL;
    if (c->q.empty()) return -FI_EAGAIN;
    if (!buf && count) return -FI_EINVAL;
    size_t n = 0;
    while (n < count && !c->q.empty()) {
        fill(c, c->q.front(), buf, n++);
        c->q.pop_front();
    }
    c->wait.signal_if(!c->q.empty() || !c->errq.empty());
    return ssize_t(n);
}

static ssize_t cq_readfrom(struct fid_cq *cqf, void *buf, size_t count, fi_addr_t *src) {
    ssize_t n = cq_read(cqf, buf, count);
    if (src)
        for (ssize_t i = 0; i < n; i++) src[i] = FI_ADDR_NOTAVAIL; // connected endpoints: no source addresses
    return n;
}

static ssize_t cq_readerr(struct fid_cq *cqf, struct fi_cq_err_entry *buf, uint64_t flags) {
    Cq *c = reinterpret_cast<Cq *>(cqf);
    Serial s;
    Guard g(c->entries);
    if (!buf) return -FI_EINVAL;
    if (c->errq.empty()) return -FI_EAGAIN;
    const CqEntry &e = c->errq.front();
    buf->op_context = e.context;
    buf->flags = e.flags;
    buf->len = e.len;
    buf->buf = e.buf;
    buf->data = e.data;
    buf->tag = 0;
    buf->olen = 0;
    buf->err = e.err;
    buf->prov_errno = int(e.vip_status);
    buf->err_data_size = 0;
    if (!(flags & FI_PEEK)) {
        c->errq.pop_front();
        c->wait.signal_if(!c->q.empty() || !c->errq.empty());
    }
    return 1;
}

static ssize_t cq_sread(struct fid_cq *cqf, void *buf, size_t count, const void *cond, int timeout) {
    auto start = std::chrono::steady_clock::now();
    for (unsigned spin = 0;; spin++) {
        ssize_t rc = cq_read(cqf, buf, count);
        if (rc != -FI_EAGAIN) return rc;
        if (timeout >= 0 && std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(timeout))
            return -FI_EAGAIN;
        if (spin > 1024) // a waiting reader must not starve the other ranks of CPU
            std::this_thread::yield();
    }
}

static ssize_t cq_sreadfrom(struct fid_cq *cqf, void *buf, size_t count, fi_addr_t *src, const void *cond,
                            int timeout) {
    ssize_t n = cq_sread(cqf, buf, count, cond, timeout);
    if (src)
        for (ssize_t i = 0; i < n; i++) src[i] = FI_ADDR_NOTAVAIL;
    return n;
}

static int cq_signal(struct fid_cq *) { return -FI_ENOSYS; }

static const char *cq_strerror(struct fid_cq *, int prov_errno, const void *, char *buf, size_t len) {
    static thread_local char tmp[128];
    char *out = buf && len ? buf : tmp;
    size_t n = buf && len ? len : sizeof(tmp);
    char st[96];
    std::snprintf(out, n, "VI descriptor status %s", VipxStatusString(uint32_t(prov_errno), st, sizeof(st)));
    return out;
}

static struct fi_ops cq_fi_ops = {sizeof(struct fi_ops), cq_close, no_bind,   cq_control,
                                  no_ops_open,           no_tostr, no_ops_set};
static struct fi_ops_cq cq_ops = {
    sizeof(struct fi_ops_cq), cq_read, cq_readfrom, cq_readerr, cq_sread, cq_sreadfrom, cq_signal, cq_strerror};

int cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **out, void *context) {
    if (!attr || !out) return -FI_EINVAL;
    if (attr->flags & ~uint64_t(FI_AFFINITY)) return -FI_EINVAL;
    if (attr->format == FI_CQ_FORMAT_TAGGED || attr->format > FI_CQ_FORMAT_TAGGED) return -FI_ENOSYS;
    if (attr->wait_cond != FI_CQ_COND_NONE) return -FI_ENOSYS;
    if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_FD)
        return -FI_ENOSYS;
    CtlGuard g;
    Nic *n = nic();
    if (!n) return -FI_ENODEV;
    size_t size = attr->size ? attr->size : 2 * kDefaultQueue;
    if (n->attr.MaxCQEntries && size > n->attr.MaxCQEntries) size = n->attr.MaxCQEntries;
    Cq *c = new Cq;
    VIP_RETURN rc = VipCreateCQ(n->handle, size, &c->vcq);
    if (rc != VIP_SUCCESS) {
        delete c;
        return vip_to_fi(rc);
    }
    c->capacity = size;
    if (attr->wait_obj != FI_WAIT_NONE) {
        c->wait.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        c->wait.wait_obj = FI_WAIT_FD;
    }
    c->domain = reinterpret_cast<Domain *>(domain);
    c->domain->refs++;
    c->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
    c->cq.fid.fclass = FI_CLASS_CQ;
    c->cq.fid.context = context;
    c->cq.fid.ops = &cq_fi_ops;
    c->cq.ops = &cq_ops;
    register_cq(c, true);
    *out = &c->cq;
    return 0;
}

} // namespace vfi
