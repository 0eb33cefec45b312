// vfi_fabric.cpp - the NIC, the fabric and domain objects, the lock, the
// registries progress walks, and the thread behind FI_GETWAIT descriptors.
#include "vfi.hpp"

#include "vipl_boot.h"

#include <rdma/providers/fi_log.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <thread>

namespace vfi {

Lock g_ctl_lock;
Lock g_serial_lock;
std::atomic<bool> g_serialise{true};

void Lock::lock_slow(pthread_t me) {
    for (unsigned spin = 0;; spin++) {
        pthread_t none = 0;
        if (owner_.load(std::memory_order_relaxed) == 0 &&
            owner_.compare_exchange_weak(none, me, std::memory_order_acquire, std::memory_order_relaxed))
            return;
        if (spin < 64) __builtin_ia32_pause();
        else if (spin < 1024) sched_yield();
        else std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

void warn(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    FI_WARN(&provider, FI_LOG_CORE, "%s\n", buf);
}

// ---- the NIC ---------------------------------------------------------------
static Nic g_nic;
static std::atomic<Nic *> g_nic_open{nullptr}; // &g_nic once open: the data path's lock-free look-up
static bool g_nic_tried = false;
static bool g_boot_ref = false;

Nic *nic() {
    if (Nic *n = g_nic_open.load(std::memory_order_acquire)) return n;
    Guard g(ctl_lock());
    if (g_nic.handle) return &g_nic;
    if (g_nic_tried) return nullptr;
    g_nic_tried = true;
    // A reference to the job for as long as the NIC is open (vipl_boot.h): the
    // VIPL providers only look the job up, and under mpirun the process must
    // leave it (PMIx_Finalize) before it exits.
    g_boot_ref = vipl_boot_init() == VIPL_BOOT_OK;
    const char *dev = std::getenv("FI_VIASTACK_DEVICE");
    VIP_RETURN rc = VipOpenNic(dev && *dev ? dev : nullptr, &g_nic.handle);
    if (rc != VIP_SUCCESS) {
        warn("VipOpenNic(%s): %s", dev ? dev : "default", VipxReturnString(rc));
        g_nic.handle = nullptr;
        return nullptr;
    }
    VipQueryNic(g_nic.handle, &g_nic.attr);
    g_nic.host.assign(g_nic.attr.LocalNicAddress, g_nic.attr.LocalNicAddress + g_nic.attr.NicAddressLen);
    if (g_nic.host.size() > kMaxHostLen) {
        warn("NIC %s: host address of %zu bytes does not fit an endpoint name (at most %zu)", g_nic.attr.Name,
             g_nic.host.size(), kMaxHostLen);
        VipCloseNic(g_nic.handle);
        g_nic.handle = nullptr;
        return nullptr;
    }
    if (VipCreatePtag(g_nic.handle, &g_nic.ptag) != VIP_SUCCESS) {
        warn("VipCreatePtag failed");
        VipCloseNic(g_nic.handle);
        g_nic.handle = nullptr;
        return nullptr;
    }
    // Serialise the provider's callers exactly when VIPL asks for it.
    g_serialise.store(g_nic.attr.ThreadSafe != VIP_TRUE, std::memory_order_relaxed);
    g_nic_open.store(&g_nic, std::memory_order_release);
    return &g_nic;
}

// The NIC holds the process's reference to the job (vipl_boot; under mpirun
// a PMIx client that must be finalized before the process exits), so it is
// closed when the last fabric is: libfabric users close their fabric before
// they leave (MPI_Finalize does), and the provider's cleanup runs too late.
static int g_fabrics = 0;

static void nic_release() {
    if (!g_nic.handle || g_fabrics > 0) return;
    g_nic_open.store(nullptr, std::memory_order_release);
    VipDestroyPtag(g_nic.handle, g_nic.ptag);
    VIP_RETURN rc = VipCloseNic(g_nic.handle);
    if (rc != VIP_SUCCESS) warn("VipCloseNic: %s", VipxReturnString(rc));
    g_nic = Nic{};
    g_nic_tried = false;
    if (g_boot_ref) vipl_boot_finalize(); // the last reference leaves the job (a barrier of its ranks)
    g_boot_ref = false;
}

VIP_RELIABILITY_LEVEL reliability() {
    Nic *n = nic();
    if (n && (n->attr.ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY)) return VIP_SERVICE_RELIABLE_DELIVERY;
    return VIP_SERVICE_RELIABLE_RECEPTION;
}

int vip_to_fi(VIP_RETURN rc) {
    switch (rc) {
    case VIP_SUCCESS: return 0;
    case VIP_NOT_DONE: return -FI_EAGAIN;
    case VIP_INVALID_PARAMETER: return -FI_EINVAL;
    case VIP_ERROR_RESOURCE: return -FI_ENOMEM;
    case VIP_TIMEOUT: return -FI_ETIMEDOUT;
    case VIP_REJECT: return -FI_ECONNREFUSED;
    case VIP_INVALID_STATE: return -FI_EOPBADSTATE;
    case VIP_NOT_REACHABLE: return -FI_EHOSTUNREACH;
    case VIP_ERROR_NOT_SUPPORTED: return -FI_ENOSYS;
    default: return -FI_EOTHER;
    }
}

int status_to_fi(uint32_t s) {
    if (s & VIP_STATUS_DESC_FLUSHED_ERROR) return FI_ECANCELED;
    if (s & (VIP_STATUS_PROTECTION_ERROR | VIP_STATUS_RDMA_PROT_ERROR)) return FI_EACCES;
    if (s & VIP_STATUS_LENGTH_ERROR) return FI_ETRUNC;
    if (s & VIP_STATUS_TRANSPORT_ERROR) return FI_EIO;
    if (s & VIP_STATUS_REMOTE_DESC_ERROR) return FI_EREMOTEIO;
    return FI_EIO;
}

// ---- generic fid operations --------------------------------------------------
int no_bind(struct fid *, struct fid *, uint64_t) { return -FI_ENOSYS; }
int no_control(struct fid *, int, void *) { return -FI_ENOSYS; }
int no_ops_open(struct fid *, const char *, uint64_t, void **, void *) { return -FI_ENOSYS; }
int no_tostr(const struct fid *, char *, size_t) { return -FI_ENOSYS; }
int no_ops_set(struct fid *, const char *, uint64_t, void *, void *) { return -FI_ENOSYS; }

fi_info *info_dup(const fi_info *i) { return fi_dupinfo(i); }

// ---- registries ------------------------------------------------------------------
static std::vector<Pep *> g_peps;
static std::vector<Ep *> g_eps;
static std::vector<Cq *> g_cqs;
static std::vector<Eq *> g_eqs;

template <class T>
static void reg(std::vector<T *> &v, T *p, bool on) {
    Guard g(ctl_lock());
    if (on) v.push_back(p);
    else v.erase(std::remove(v.begin(), v.end(), p), v.end());
}
void register_pep(Pep *p, bool on) { reg(g_peps, p, on); }

static void cq_bind_ep(Cq *c, Ep *e, bool on) {
    Guard g(c->drain);
    if (on) {
        if (std::find(c->eps.begin(), c->eps.end(), e) == c->eps.end()) c->eps.push_back(e);
        return;
    }
    if (c->last == e) c->last = nullptr;
    c->eps.erase(std::remove(c->eps.begin(), c->eps.end(), e), c->eps.end());
}

void register_ep(Ep *e, bool on) {
    Guard g(ctl_lock());
    reg(g_eps, e, on);
    if (e->tx_cq) cq_bind_ep(e->tx_cq, e, on);
    if (e->rx_cq && e->rx_cq != e->tx_cq) cq_bind_ep(e->rx_cq, e, on);
}
void register_cq(Cq *c, bool on) { reg(g_cqs, c, on); }
void register_eq(Eq *e, bool on) { reg(g_eqs, e, on); }
void all_cqs(std::vector<Cq *> *out) { *out = g_cqs; }
void all_eqs(std::vector<Eq *> *out) { *out = g_eqs; }
std::vector<Pep *> &peps() { return g_peps; }
std::vector<Ep *> &eps() { return g_eps; }

// The last endpoint first: an MPI rank's completions come in runs from one
// peer, and the walk grows with the number of peers.
Ep *Cq::ep_of_vi(VIP_VI_HANDLE vi) {
    if (last && last->vi == vi) return last;
    for (Ep *e : eps)
        if (e->vi == vi) return last = e;
    return nullptr;
}

void progress_all() {
    Guard g(ctl_lock());
    progress_cm();
    for (Cq *c : g_cqs) progress_cq(c);
}

// ---- wait objects ------------------------------------------------------------------
void Waitable::signal_change(bool pending) {
    uint64_t v = 1;
    if (pending) {
        [[maybe_unused]] ssize_t n = write(fd, &v, sizeof(v));
    } else {
        [[maybe_unused]] ssize_t n = read(fd, &v, sizeof(v));
    }
    fd_signalled = pending;
}

int Waitable::control(int cmd, void *arg) {
    switch (cmd) {
    case FI_GETWAIT:
        if (fd < 0 || !arg) return -FI_ENODATA;
        start_wait_thread();
        *static_cast<int *>(arg) = fd;
        return 0;
    case FI_GETWAITOBJ:
        if (!arg) return -FI_EINVAL;
        *static_cast<fi_wait_obj *>(arg) = wait_obj;
        return 0;
    default: return -FI_ENOSYS;
    }
}

void Waitable::close_fd() {
    if (fd >= 0) close(fd);
    fd = -1;
}

// With the nicfw provider in inline mode nothing moves unless someone calls
// VIPL, so a descriptor handed out by FI_GETWAIT would never become readable
// while its owner sleeps in poll().  The first FI_GETWAIT starts this thread:
// every millisecond it runs the provider's progress, which queues entries
// and signals the eventfds.  Programs that only poll (fi_cq_read, fi_eq_read,
// fi_cq_sread) never start it and pay nothing.
static bool g_wait_thread = false;

void start_wait_thread() {
    CtlGuard g;
    if (g_wait_thread) return;
    g_wait_thread = true;
    std::thread([] {
        for (;;) {
            {
                CtlGuard g2;
                if (g_nic.handle) progress_all();
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }).detach();
}

// ---- fabric ----------------------------------------------------------------------
static int fabric_close(struct fid *fid) {
    CtlGuard g;
    delete reinterpret_cast<Fabric *>(fid);
    g_fabrics--;
    nic_release();
    return 0;
}

static int fabric_trywait(struct fid_fabric *, struct fid **fids, int count) {
    CtlGuard g;
    progress_all();
    for (int i = 0; i < count; i++) {
        if (fids[i]->fclass == FI_CLASS_CQ) {
            Cq *c = reinterpret_cast<Cq *>(fids[i]);
            if (c->queued()) return -FI_EAGAIN;
        } else if (fids[i]->fclass == FI_CLASS_EQ) {
            Eq *e = reinterpret_cast<Eq *>(fids[i]);
            if (!e->q.empty()) return -FI_EAGAIN;
        } else {
            return -FI_EINVAL;
        }
    }
    return 0;
}

static int wait_open(struct fid_fabric *, struct fi_wait_attr *, struct fid_wait **) { return -FI_ENOSYS; }

static struct fi_ops fabric_fi_ops = {sizeof(struct fi_ops), fabric_close, no_bind,   no_control,
                                      no_ops_open,           no_tostr,     no_ops_set};
static struct fi_ops_fabric fabric_ops = {
    sizeof(struct fi_ops_fabric), domain_open, pep_open, eq_open, wait_open, fabric_trywait, nullptr};

int fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context) {
    if (!attr || !attr->name || std::strcmp(attr->name, kFabricName) != 0) return -FI_EINVAL;
    if (!nic()) return -FI_ENODEV;
    CtlGuard g;
    g_fabrics++;
    Fabric *f = new Fabric;
    f->fab.fid.fclass = FI_CLASS_FABRIC;
    f->fab.fid.context = context;
    f->fab.fid.ops = &fabric_fi_ops;
    f->fab.ops = &fabric_ops;
    *fabric = &f->fab;
    return 0;
}

// ---- domain ----------------------------------------------------------------------
static int domain_close(struct fid *fid) {
    Domain *d = reinterpret_cast<Domain *>(fid);
    CtlGuard g;
    if (d->refs > 0) return -FI_EBUSY;
    delete d;
    return 0;
}

static int av_open(struct fid_domain *, struct fi_av_attr *, struct fid_av **, void *) {
    return -FI_ENOSYS; // connected endpoints only (rxm provides the AV)
}
static int cntr_open(struct fid_domain *, struct fi_cntr_attr *, struct fid_cntr **, void *) { return -FI_ENOSYS; }
static int scalable_ep(struct fid_domain *, struct fi_info *, struct fid_ep **, void *) { return -FI_ENOSYS; }
static int poll_open(struct fid_domain *, struct fi_poll_attr *, struct fid_poll **) { return -FI_ENOSYS; }
static int stx_ctx(struct fid_domain *, struct fi_tx_attr *, struct fid_stx **, void *) { return -FI_ENOSYS; }
static int srx_ctx(struct fid_domain *, struct fi_rx_attr *, struct fid_ep **, void *) { return -FI_ENOSYS; }
static int query_atomic(struct fid_domain *, enum fi_datatype, enum fi_op, struct fi_atomic_attr *, uint64_t) {
    return -FI_ENOSYS;
}
static int query_collective(struct fid_domain *, enum fi_collective_op, struct fi_collective_attr *, uint64_t) {
    return -FI_ENOSYS;
}

static struct fi_ops domain_fi_ops = {sizeof(struct fi_ops), domain_close, no_bind,   no_control,
                                      no_ops_open,           no_tostr,     no_ops_set};
static struct fi_ops_domain domain_ops = {sizeof(struct fi_ops_domain),
                                          av_open,
                                          cq_open,
                                          ep_open,
                                          scalable_ep,
                                          cntr_open,
                                          poll_open,
                                          stx_ctx,
                                          srx_ctx,
                                          query_atomic,
                                          query_collective,
                                          nullptr};

int domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom, void *context) {
    Nic *n = nic();
    if (!n) return -FI_ENODEV;
    if (info && info->domain_attr && info->domain_attr->name && std::strcmp(info->domain_attr->name, n->attr.Name) != 0)
        return -FI_EINVAL;
    Domain *d = new Domain;
    d->fabric = reinterpret_cast<Fabric *>(fabric);
    d->dom.fid.fclass = FI_CLASS_DOMAIN;
    d->dom.fid.context = context;
    d->dom.fid.ops = &domain_fi_ops;
    d->dom.ops = &domain_ops;
    d->dom.mr = &mr_ops;
    *dom = &d->dom;
    return 0;
}

} // namespace vfi
