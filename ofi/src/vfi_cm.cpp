// vfi_cm.cpp - connection management over VIPL's client/server calls with
// private data (the Vipx connection extensions): passive endpoints listen by
// polling VipxConnectWaitData, fi_connect starts a request and progress
// polls VipxConnectRequestDone, fi_accept / fi_reject answer with data.
//
// The connection data carries a CmHeader (the endpoint's credit word and its
// posted-receive count, vfi_data.cpp) in front of the application's bytes;
// reject data is the application's alone.  Progress runs in every fi_eq_read.
// All of it under the control lock; an endpoint's connection state also
// under the endpoint's lock, as the data path reads it.
#include "vfi.hpp"

#include <cstdlib>
#include <map>

namespace vfi {

std::vector<Pep *> &peps();
std::vector<Ep *> &eps();

// Requests delivered as FI_CONNREQ and not yet answered: the requester's header.
static std::map<VIP_CONN_HANDLE, CmHeader> g_pending;

static VIP_ULONG connect_timeout_ms() {
    const char *s = std::getenv("FI_VIASTACK_CONNECT_TIMEOUT");
    long v = s ? std::atol(s) : 0;
    return v > 0 ? VIP_ULONG(v) : 30000;
}

// One EQ entry: an event (error false) or an error entry (fi_eq_readerr) with err.
static void push_entry(Eq *eq, bool error, uint32_t event, int err, fid_t fid, fi_info *info, const uint8_t *data,
                       size_t len) {
    if (!eq) {
        if (info) fi_freeinfo(info);
        return;
    }
    EqEntry x;
    x.error = error;
    x.event = event;
    x.err = err;
    x.fid = fid;
    x.context = fid ? fid->context : nullptr;
    x.info = info;
    x.data.assign(data, data + len);
    eq->push(std::move(x));
}

static void push_cm(Eq *eq, uint32_t event, fid_t fid, fi_info *info, const uint8_t *data, size_t len) {
    push_entry(eq, false, event, 0, fid, info, data, len);
}

static void push_err(Eq *eq, fid_t fid, int err, const uint8_t *data, size_t len) {
    push_entry(eq, true, 0, err, fid, nullptr, data, len);
}

// ---- progress ---------------------------------------------------------------------
static void poll_listener(Pep *p, Nic *n) {
    NetAddr local, remote;
    std::vector<uint8_t> lh;
    uint16_t port;
    addr_parse(&p->name, kAddrLen, &lh, &port);
    net_addr(lh, port, &local);
    uint8_t data[VIPX_CM_DATA_MAX];
    VIP_ULONG len = sizeof(data);
    VIP_VI_ATTRIBUTES ra;
    VIP_CONN_HANDLE conn;
    VIP_RETURN rc = VipxConnectWaitData(n->handle, local.get(), 0, remote.get(), &ra, &conn, data, &len);
    if (rc != VIP_SUCCESS) return;
    if (len < sizeof(CmHeader)) { // not one of ours: nothing to exchange credits with
        VipxConnectRejectData(conn, nullptr, 0);
        return;
    }
    std::vector<uint8_t> rh;
    uint16_t rport;
    sockaddr_in6 peer;
    if (!net_addr_split(remote.get(), &rh, &rport) || !addr_make(rh, rport, &peer)) {
        VipxConnectRejectData(conn, nullptr, 0);
        return;
    }
    fi_info *info = fi_dupinfo(p->info);
    if (!info) {
        VipxConnectRejectData(conn, nullptr, 0);
        return;
    }
    std::free(info->dest_addr);
    info->dest_addr = std::malloc(kAddrLen);
    std::memcpy(info->dest_addr, &peer, kAddrLen);
    info->dest_addrlen = kAddrLen;
    std::free(info->src_addr);
    info->src_addr = std::malloc(kAddrLen);
    std::memcpy(info->src_addr, &p->name, kAddrLen);
    info->src_addrlen = kAddrLen;
    info->handle = reinterpret_cast<fid_t>(conn);
    CmHeader h;
    std::memcpy(&h, data, sizeof(h));
    g_pending[conn] = h;
    push_cm(p->eq, FI_CONNREQ, &p->pep.fid, info, data + sizeof(h), len - sizeof(h));
}

static void poll_connecting(Ep *e) {
    uint8_t data[VIPX_CM_DATA_MAX];
    VIP_ULONG len = sizeof(data);
    VIP_VI_ATTRIBUTES ra;
    VIP_RETURN rc = VipxConnectRequestDone(e->vi, &ra, data, &len);
    if (rc == VIP_NOT_DONE) return;
    len = std::min<VIP_ULONG>(len, sizeof(data));
    if (rc == VIP_SUCCESS && len >= sizeof(CmHeader)) {
        CmHeader h;
        std::memcpy(&h, data, sizeof(h));
        ep_connected(e, h);
        push_cm(e->eq, FI_CONNECTED, &e->ep.fid, nullptr, data + sizeof(h), len - sizeof(h));
        return;
    }
    if (rc == VIP_SUCCESS) { // accepted by something that is not this provider
        VipDisconnect(e->vi);
        e->state = EpState::Shutdown;
        push_err(e->eq, &e->ep.fid, FI_ECONNABORTED, nullptr, 0);
        return;
    }
    e->state = EpState::Idle;
    int err = rc == VIP_REJECT ? FI_ECONNREFUSED : rc == VIP_TIMEOUT ? FI_ETIMEDOUT : FI_ECONNREFUSED;
    push_err(e->eq, &e->ep.fid, err, data, rc == VIP_REJECT ? len : 0);
}

static void poll_connected(Ep *e) {
    VIP_VI_STATE st;
    VIP_VI_ATTRIBUTES va;
    VIP_BOOLEAN se, re;
    if (VipQueryVi(e->vi, &st, &va, &se, &re) != VIP_SUCCESS || st != VIP_STATE_ERROR) return;
    e->state = EpState::Shutdown;
    push_cm(e->eq, FI_SHUTDOWN, &e->ep.fid, nullptr, nullptr, 0);
}

void progress_cm() {
    Nic *n = nic();
    if (!n) return;
    // Connection messages (requests, answers, disconnects) reach this NIC
    // only while someone steps it (nicfw inline mode).
    VipxProgress(n->handle);
    for (Pep *p : std::vector<Pep *>(peps()))
        if (p->listening) poll_listener(p, n);
    for (Ep *e : std::vector<Ep *>(eps())) {
        Guard g(e->mu);
        if (e->state == EpState::Connecting) poll_connecting(e);
        else if (e->state == EpState::Connected) poll_connected(e);
    }
}

// ---- active endpoint CM ---------------------------------------------------------------
static int ep_getname(fid_t fid, void *addr, size_t *addrlen) {
    CtlGuard g;
    if (!addrlen) return -FI_EINVAL;
    const sockaddr_in6 *a =
        fid->fclass == FI_CLASS_PEP ? &reinterpret_cast<Pep *>(fid)->name : &reinterpret_cast<Ep *>(fid)->local;
    size_t have = *addrlen;
    *addrlen = kAddrLen;
    if (!addr || have < kAddrLen) return -FI_ETOOSMALL;
    std::memcpy(addr, a, kAddrLen);
    return 0;
}

static int ep_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen) {
    Ep *e = reinterpret_cast<Ep *>(ep);
    CtlGuard g;
    Guard ge(e->mu);
    if (!addrlen) return -FI_EINVAL;
    if (e->state != EpState::Connected && e->state != EpState::Connecting && e->state != EpState::Accepting)
        return -FI_ENOTCONN;
    size_t have = *addrlen;
    *addrlen = kAddrLen;
    if (!addr || have < kAddrLen) return -FI_ETOOSMALL;
    std::memcpy(addr, &e->peer, kAddrLen);
    return 0;
}

static int no_setname(fid_t, void *, size_t) { return -FI_ENOSYS; }

static int ep_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen) {
    Ep *e = reinterpret_cast<Ep *>(ep);
    CtlGuard g;
    Guard ge(e->mu);
    if (paramlen > kCmDataMax || (paramlen && !param)) return -FI_EINVAL;
    if (!e->enabled || e->state != EpState::Idle) return -FI_EOPBADSTATE;
    std::vector<uint8_t> rh;
    uint16_t rport;
    const void *to = addr ? addr : (e->info->dest_addr ? &e->peer : nullptr);
    if (!to || !addr_parse(to, kAddrLen, &rh, &rport)) return -FI_EINVAL;
    std::memcpy(&e->peer, to, kAddrLen);
    std::vector<uint8_t> lh;
    uint16_t lport;
    addr_parse(&e->local, kAddrLen, &lh, &lport);
    NetAddr local, remote;
    net_addr(lh, lport, &local);
    net_addr(rh, rport, &remote);
    uint8_t data[VIPX_CM_DATA_MAX];
    CmHeader h;
    ep_fill_header(e, &h);
    std::memcpy(data, &h, sizeof(h));
    if (paramlen) std::memcpy(data + sizeof(h), param, paramlen);
    VIP_RETURN rc =
        VipxConnectRequestStart(e->vi, local.get(), remote.get(), connect_timeout_ms(), data, sizeof(h) + paramlen);
    if (rc != VIP_SUCCESS) return rc == VIP_INVALID_PARAMETER ? -FI_EINVAL : vip_to_fi(rc);
    e->state = EpState::Connecting;
    return 0;
}

static int ep_accept(struct fid_ep *ep, const void *param, size_t paramlen) {
    Ep *e = reinterpret_cast<Ep *>(ep);
    CtlGuard g;
    Guard ge(e->mu);
    if (paramlen > kCmDataMax || (paramlen && !param)) return -FI_EINVAL;
    if (!e->enabled || e->state != EpState::Accepting) return -FI_EOPBADSTATE;
    auto it = g_pending.find(e->conn);
    if (it == g_pending.end()) return -FI_EOPBADSTATE;
    uint8_t data[VIPX_CM_DATA_MAX];
    CmHeader h;
    ep_fill_header(e, &h);
    std::memcpy(data, &h, sizeof(h));
    if (paramlen) std::memcpy(data + sizeof(h), param, paramlen);
    VIP_RETURN rc = VipxConnectAcceptData(e->conn, e->vi, data, sizeof(h) + paramlen);
    if (rc != VIP_SUCCESS) return vip_to_fi(rc);
    CmHeader peer = it->second;
    g_pending.erase(it);
    e->conn = nullptr;
    ep_connected(e, peer);
    push_cm(e->eq, FI_CONNECTED, &e->ep.fid, nullptr, nullptr, 0);
    return 0;
}

static int ep_shutdown(struct fid_ep *ep, uint64_t flags) {
    Ep *e = reinterpret_cast<Ep *>(ep);
    CtlGuard g;
    Guard ge(e->mu);
    if (flags) return -FI_EINVAL;
    if (e->state != EpState::Connected && e->state != EpState::Connecting) return -FI_ENOTCONN;
    VipDisconnect(e->vi);
    e->state = EpState::Shutdown;
    push_cm(e->eq, FI_SHUTDOWN, &e->ep.fid, nullptr, nullptr, 0);
    return 0;
}

static int no_listen(struct fid_pep *) { return -FI_ENOSYS; }
static int no_accept(struct fid_ep *, const void *, size_t) { return -FI_ENOSYS; }
static int no_reject(struct fid_pep *, fid_t, const void *, size_t) { return -FI_ENOSYS; }
static int no_connect(struct fid_ep *, const void *, const void *, size_t) { return -FI_ENOSYS; }
static int no_shutdown(struct fid_ep *, uint64_t) { return -FI_ENOSYS; }
static int no_getpeer(struct fid_ep *, void *, size_t *) { return -FI_ENOSYS; }
static int no_join(struct fid_ep *, const void *, uint64_t, struct fid_mc **, void *) { return -FI_ENOSYS; }

// ---- passive endpoint ---------------------------------------------------------------------
static int pep_listen(struct fid_pep *pf) {
    Pep *p = reinterpret_cast<Pep *>(pf);
    CtlGuard g;
    if (!p->eq) return -FI_ENOEQ;
    if (p->listening) return 0;
    for (Pep *o : peps())
        if (o != p && o->listening && addr_port(o->name) == addr_port(p->name)) return -FI_EADDRINUSE;
    if (addr_port(p->name) == 0) p->name.sin6_port = htons(next_auto_port());
    p->listening = true;
    return 0;
}

static int pep_reject(struct fid_pep *, fid_t handle, const void *param, size_t paramlen) {
    CtlGuard g;
    if (paramlen > kCmDataMax || (paramlen && !param)) return -FI_EINVAL;
    VIP_CONN_HANDLE conn = reinterpret_cast<VIP_CONN_HANDLE>(handle);
    auto it = g_pending.find(conn);
    if (it == g_pending.end()) return -FI_EINVAL;
    g_pending.erase(it);
    VIP_RETURN rc = VipxConnectRejectData(conn, param, paramlen);
    return vip_to_fi(rc);
}

static int pep_close(struct fid *fid) {
    Pep *p = reinterpret_cast<Pep *>(fid);
    CtlGuard g;
    register_pep(p, false);
    if (p->eq) p->eq->drop_fid(&p->pep.fid);
    if (p->info) fi_freeinfo(p->info);
    delete p;
    return 0;
}

static int pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags) {
    Pep *p = reinterpret_cast<Pep *>(fid);
    CtlGuard g;
    if (bfid->fclass != FI_CLASS_EQ || flags) return -FI_EINVAL;
    p->eq = reinterpret_cast<Eq *>(bfid);
    return 0;
}

static int pep_getopt(fid_t, int level, int optname, void *optval, size_t *optlen) {
    if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE) return -FI_ENOPROTOOPT;
    if (!optval || !optlen || *optlen < sizeof(size_t)) return -FI_ETOOSMALL;
    *static_cast<size_t *>(optval) = kCmDataMax;
    *optlen = sizeof(size_t);
    return 0;
}
static int pep_setopt(fid_t, int, int, const void *, size_t) { return -FI_ENOPROTOOPT; }

static struct fi_ops pep_fi_ops = {sizeof(struct fi_ops), pep_close, pep_bind,  no_control,
                                   no_ops_open,           no_tostr,  no_ops_set};
static struct fi_ops_ep pep_ep_ops = {
    sizeof(struct fi_ops_ep), nullptr, pep_getopt, pep_setopt, nullptr, nullptr, nullptr, nullptr};
struct fi_ops_cm pep_cm_ops = {sizeof(struct fi_ops_cm),
                               no_setname,
                               ep_getname,
                               no_getpeer,
                               no_connect,
                               pep_listen,
                               no_accept,
                               pep_reject,
                               no_shutdown,
                               no_join};
struct fi_ops_cm ep_cm_ops = {sizeof(struct fi_ops_cm),
                              no_setname,
                              ep_getname,
                              ep_getpeer,
                              ep_connect,
                              no_listen,
                              ep_accept,
                              no_reject,
                              ep_shutdown,
                              no_join};

int pep_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **out, void *context) {
    if (!info || !out || (info->ep_attr && info->ep_attr->type != FI_EP_MSG)) return -FI_EINVAL;
    CtlGuard g;
    Nic *n = nic();
    if (!n) return -FI_ENODEV;
    Pep *p = new Pep;
    p->fabric = reinterpret_cast<Fabric *>(fabric);
    p->info = fi_dupinfo(info);
    addr_make(n->host, 0, &p->name);
    if (info->src_addr) {
        std::vector<uint8_t> host;
        if (!addr_parse(info->src_addr, info->src_addrlen, &host, nullptr) || host != n->host) {
            fi_freeinfo(p->info);
            delete p;
            return -FI_EINVAL;
        }
        std::memcpy(&p->name, info->src_addr, kAddrLen);
    }
    p->pep.fid.fclass = FI_CLASS_PEP;
    p->pep.fid.context = context;
    p->pep.fid.ops = &pep_fi_ops;
    p->pep.ops = &pep_ep_ops;
    p->pep.cm = &pep_cm_ops;
    register_pep(p, true);
    *out = &p->pep;
    return 0;
}

} // namespace vfi
