// verbs_nic.cpp - the NIC: device and port, listener, protection tags, memory,
// VI/CQ lifetimes, attributes, error callback.
#include <arpa/inet.h>
#include <fcntl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "verbs_cm.hpp"
#include "viastack_env.hpp"
#include "viastack_log.hpp"
#include "verbs_provider.hpp"

namespace vipl::verbs {

namespace {

namespace env = viastack::env;
constexpr auto kLog = viastack::log::Layer::verbs; // this provider's configuration warnings

int mtu_bytes(ibv_mtu m) {
    switch (m) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
    default: return 0;
    }
}

} // namespace

VIP_RETURN VerbsNic::open(const char *device, prov::Nic **out) {
    int n = 0;
    ibv_context **list = rdma_get_devices(&n);
    if (!list || n == 0) {
        if (list) rdma_free_devices(list);
        viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR,
                     "no RDMA device found (is rdma_rxe loaded and rxe0 "
                     "created? see docs/rxe.md)");
        return VIP_INVALID_PARAMETER;
    }
    // "verbs" (the provider's default) means $VIPL_VERBS_DEVICE or the first device
    // with an active port.
    std::string want = device;
    if (want == "verbs") want = env::str("VIPL_VERBS_DEVICE", want);
    ibv_context *pick = nullptr;
    std::string names;
    for (int i = 0; i < n; i++) {
        const char *nm = ibv_get_device_name(list[i]->device);
        names += (names.empty() ? "" : ", ") + std::string(nm);
        if (want == nm) {
            pick = list[i];
        } else if (want == "verbs" && !pick) {
            ibv_port_attr pa{};
            if (ibv_query_port(list[i], 1, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) pick = list[i];
        }
    }
    rdma_free_devices(list); // librdmacm keeps its contexts open
    if (!pick) {
        viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR, "no RDMA device '%s' (available: %s)", want.c_str(),
                     names.c_str());
        return VIP_INVALID_PARAMETER;
    }
    auto nic = std::make_unique<VerbsNic>();
    VIP_RETURN rc = nic->init(pick, ibv_get_device_name(pick->device));
    if (rc != VIP_SUCCESS) return rc;
    *out = nic.release();
    return VIP_SUCCESS;
}

VIP_RETURN VerbsNic::init(ibv_context *c, const char *device) {
    ctx = c;
    name = device;
    if (ibv_query_device(ctx, &dev_attr) != 0) {
        viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR, "ibv_query_device(%s) failed", device);
        return VIP_ERROR_RESOURCE;
    }
    port = uint8_t(env::integer(kLog, "VIPL_VERBS_IB_PORT", 1, 1, dev_attr.phys_port_cnt));
    if (ibv_query_port(ctx, port, &port_attr) != 0 || port_attr.state != IBV_PORT_ACTIVE) {
        viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR, "port %u of %s is not active", port, device);
        return VIP_ERROR_RESOURCE;
    }
    queue_depth = env::integer(kLog, "VIPL_VERBS_QUEUE_DEPTH", 256, 2, 1u << 16);
    queue_depth = std::min<uint32_t>(queue_depth, uint32_t(dev_attr.max_qp_wr));
    max_sge = std::min<uint32_t>({kMaxSegments, uint32_t(dev_attr.max_sge)});
    // A send that finds no receive posted breaks a reliable connection (the spec);
    // a few RNR retries first forgive a receiver that is a moment late.
    rnr_retry = uint8_t(env::integer(kLog, "VIPL_VERBS_RNR_RETRY", 4, 0, 7));
    min_rnr_timer = uint8_t(env::integer(kLog, "VIPL_VERBS_MIN_RNR_TIMER", 12, 0, 31));
    if (!common::discover_job(kLog, &job_)) return VIP_ERROR_RESOURCE;

    std::string why;
    if (const char *a = env::raw("VIPL_VERBS_ADDR")) {
        std::vector<HostAddr> addrs;
        if (!resolve_name(std::string(a).find(':') == std::string::npos ? std::string(a) + ":1" : std::string(a), 1,
                          &addrs, &why)) {
            viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR, "VIPL_VERBS_ADDR=%s: %s", a, why.c_str());
            return VIP_INVALID_PARAMETER;
        }
        local_addr = addrs[0];
    } else if (!device_ip(ctx, port, &local_addr, &why)) {
        viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR, "%s: %s", device, why.c_str());
        return VIP_ERROR_RESOURCE;
    }
    local_addr.port = uint16_t(env::integer(kLog, "VIPL_VERBS_PORT", 0, 0, 65535));
    VIP_RETURN rc = start_listener();
    if (rc != VIP_SUCCESS) return rc;
    local_addr_bytes = local_addr.bytes();
    // Within a job on one host, the name service finds a rank's NIC by rank
    // (vipl/src/names.hpp): each NIC publishes its address for the others.
    directory_ = std::make_unique<common::RankDirectory>("verbs", name, job_);
    if (!directory_->publish(local_addr_bytes, &why)) {
        viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR, "%s", why.c_str());
        return VIP_ERROR_RESOURCE;
    }
    return VIP_SUCCESS;
}

VIP_RETURN VerbsNic::start_listener() {
    cm_channel = rdma_create_event_channel();
    if (!cm_channel) {
        std::perror("vipl verbs: rdma_create_event_channel (is rdma_ucm loaded?)");
        return VIP_ERROR_RESOURCE;
    }
    fcntl(cm_channel->fd, F_SETFL, fcntl(cm_channel->fd, F_GETFL) | O_NONBLOCK);
    if (rdma_create_id(cm_channel, &listen_id, nullptr, RDMA_PS_TCP) != 0) {
        std::perror("vipl verbs: rdma_create_id");
        return VIP_ERROR_RESOURCE;
    }
    sockaddr_storage ss = local_addr.sockaddr_of();
    if (rdma_bind_addr(listen_id, reinterpret_cast<sockaddr *>(&ss)) != 0) {
        viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR, "cannot bind rdma_cm to %s: %s",
                     local_addr.to_string().c_str(), std::strerror(errno));
        return VIP_ERROR_RESOURCE;
    }
    if (listen_id->verbs != ctx) {
        viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR, "address %s does not belong to %s (set VIPL_VERBS_ADDR)",
                     local_addr.to_string().c_str(), name.c_str());
        return VIP_ERROR_RESOURCE;
    }
    if (rdma_listen(listen_id, 128) != 0) {
        std::perror("vipl verbs: rdma_listen");
        return VIP_ERROR_RESOURCE;
    }
    local_addr.port = ntohs(rdma_get_src_port(listen_id));
    return VIP_SUCCESS;
}

VerbsNic::~VerbsNic() {
    notifier_.reset();
    for (VerbsVi *vi : vis) delete vi;
    for (VerbsCq *cq : cqs) delete cq;
    {
        std::lock_guard<std::mutex> g(cm_mu);
        for (PendingRequest *r : pending) {
            if (r->id) rdma_destroy_id(r->id);
            delete r;
        }
        for (rdma_cm_id *id : doomed_) rdma_destroy_id(id);
    }
    mem.for_each([](Region *r) {
        if (r->mw) ibv_dealloc_mw(r->mw);
        ibv_dereg_mr(r->mr);
        delete r;
    });
    for (VerbsPtag *p : ptags) {
        p->windows.close();
        ibv_dealloc_pd(p->pd);
        delete p;
    }
    if (listen_id) rdma_destroy_id(listen_id);
    if (cm_channel) rdma_destroy_event_channel(cm_channel);
}

VIP_RETURN VerbsNic::query(VIP_NIC_ATTRIBUTES *a) {
    std::memset(a, 0, sizeof *a);
    std::snprintf(a->Name, sizeof a->Name, "%s", name.c_str());
    a->HardwareVersion = dev_attr.hw_ver;
    a->ProviderVersion = 1;
    a->NicAddressLen = uint16_t(local_addr_bytes.size());
    a->LocalNicAddress = local_addr_bytes.data();
    a->ThreadSafe = VIP_TRUE; // docs/verbs.md "Threads"
    a->MaxDiscriminatorLen = kMaxDiscriminator;
    a->MaxRegisterBytes = dev_attr.max_mr_size;
    a->MaxRegisterRegions = std::min<VIP_ULONG>(dev_attr.max_mr, MemTable::kMaxRegions);
    a->MaxRegisterBlockBytes = dev_attr.max_mr_size;
    a->MaxVI = dev_attr.max_qp;
    a->MaxDescriptorsPerQueue = queue_depth;
    a->MaxSegmentsPerDesc = max_sge;
    a->MaxCQ = dev_attr.max_cq;
    a->MaxCQEntries = dev_attr.max_cqe;
    a->MaxTransferSize = port_attr.max_msg_sz;
    a->NativeMTU = mtu_bytes(port_attr.active_mtu);
    a->MaxPtags = dev_attr.max_pd;
    a->ReliabilityLevelSupport =
        VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY | VIP_SERVICE_RELIABLE_RECEPTION;
    a->RDMAReadSupport = VIP_SERVICE_RELIABLE_DELIVERY | VIP_SERVICE_RELIABLE_RECEPTION;
    return VIP_SUCCESS;
}

// ---- protection tags and memory -----------------------------------------------

VIP_RETURN VerbsNic::create_ptag(prov::Ptag **out) {
    auto *p = new VerbsPtag;
    p->pd = ibv_alloc_pd(ctx);
    if (!p->pd) {
        delete p;
        return VIP_ERROR_RESOURCE;
    }
    std::lock_guard<std::mutex> g(ctl_mu);
    ptags.push_back(p);
    *out = p;
    return VIP_SUCCESS;
}

VIP_RETURN VerbsNic::destroy_ptag(prov::Ptag *pt) {
    std::lock_guard<std::mutex> g(ctl_mu);
    auto it = std::find(ptags.begin(), ptags.end(), pt);
    if (it == ptags.end()) return VIP_INVALID_PTAG;
    VerbsPtag *p = *it;
    if (p->users.load() > 0) return VIP_INVALID_STATE;
    p->windows.close();
    if (ibv_dealloc_pd(p->pd) != 0) return VIP_INVALID_STATE;
    ptags.erase(it);
    delete p;
    return VIP_SUCCESS;
}

namespace {
int mr_access(const prov::MemAttr &a) {
    return IBV_ACCESS_LOCAL_WRITE | (a.rdma_write ? IBV_ACCESS_REMOTE_WRITE : 0) |
        (a.rdma_read ? IBV_ACCESS_REMOTE_READ : 0);
}
// The handle a peer names the region with: the rkey once RDMA is enabled.
VIP_MEM_HANDLE handle_of(const ibv_mr *mr, const prov::MemAttr &a) {
    return (a.rdma_write || a.rdma_read) ? mr->rkey : mr->lkey;
}
} // namespace

VIP_RETURN VerbsNic::register_mem(void *addr, VIP_ULONG len, const prov::MemAttr &a, VIP_MEM_HANDLE *out) {
    std::lock_guard<std::mutex> g(ctl_mu);
    if (std::find(ptags.begin(), ptags.end(), a.ptag) == ptags.end()) return VIP_INVALID_PTAG;
    if (len == 0 || addr == nullptr) return VIP_INVALID_PARAMETER;
    if (mem.size() >= MemTable::kMaxRegions) return VIP_ERROR_RESOURCE;
    auto *pt = static_cast<VerbsPtag *>(a.ptag);
    // Reached through a memory window where the device has them (verbs_window.cpp).
    ibv_mr *mr = nullptr;
    ibv_mw *mw = nullptr;
    if (dev_attr.max_mw > 0) {
        mr = ibv_reg_mr(pt->pd, addr, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
        if (!mr) return errno == EFAULT ? VIP_INVALID_PARAMETER : VIP_ERROR_RESOURCE;
        mw = pt->windows.open_window(*this, pt->pd, mr, a.rdma_write, a.rdma_read);
        if (!mw) {
            ibv_dereg_mr(mr);
            mr = nullptr;
        }
    }
    if (!mr) mr = ibv_reg_mr(pt->pd, addr, len, mr_access(a));
    if (!mr) return errno == EFAULT ? VIP_INVALID_PARAMETER : VIP_ERROR_RESOURCE;
    auto *r = new Region{
        mw ? mw->rkey : handle_of(mr, a), mr, mw, uintptr_t(addr), size_t(len), pt, a.rdma_write, a.rdma_read};
    if (mem.find(r->handle) || !mem.insert(r)) {
        if (mw) ibv_dealloc_mw(mw);
        ibv_dereg_mr(mr);
        delete r;
        return VIP_ERROR_RESOURCE;
    }
    pt->users++;
    *out = r->handle;
    return VIP_SUCCESS;
}

VIP_RETURN VerbsNic::deregister_mem(void *addr, VIP_MEM_HANDLE mh) {
    std::lock_guard<std::mutex> g(ctl_mu);
    Region *r = mem.find(mh);
    if (!r || r->base != uintptr_t(addr)) return VIP_INVALID_PARAMETER;
    if (r->mw && ibv_dealloc_mw(r->mw) != 0) return VIP_ERROR_RESOURCE;
    r->mw = nullptr;
    if (ibv_dereg_mr(r->mr) != 0) return VIP_ERROR_RESOURCE;
    mem.erase(r);
    // A post or completion on another thread may have found r just before:
    // it is freed once none can still be reading it.
    for (VerbsVi *vi : vis) vi->quiesce_region_readers();
    r->ptag->users--;
    delete r;
    return VIP_SUCCESS;
}

VIP_RETURN VerbsNic::query_mem(void *addr, VIP_MEM_HANDLE mh, prov::MemAttr *out) {
    std::lock_guard<std::mutex> g(ctl_mu);
    Region *r = mem.find(mh);
    if (!r || !r->covers(uintptr_t(addr), 1)) return VIP_INVALID_PARAMETER;
    out->ptag = r->ptag;
    out->rdma_write = r->rdma_write;
    out->rdma_read = r->rdma_read;
    return VIP_SUCCESS;
}

// The handle must not change (the application and its peers hold it).  New
// rights under the same tag re-bind the region's memory window under its rkey.
// A new tag (or a device without windows) needs a new registration, swapped in
// only if it can keep the handle's meaning: always when RDMA ends up disabled
// (the handle then stays a local alias), and when RDMA is enabled only if the
// device gives the new registration the same rkey.  Otherwise the old
// registration stays and VIP_ERROR_RESOURCE is returned (docs/verbs.md).
VIP_RETURN VerbsNic::set_mem_attributes(void *addr, VIP_MEM_HANDLE mh, const prov::MemAttr &a) {
    std::lock_guard<std::mutex> g(ctl_mu);
    Region *r = mem.find(mh);
    if (!r || !r->covers(uintptr_t(addr), 1)) return VIP_INVALID_PARAMETER;
    if (std::find(ptags.begin(), ptags.end(), a.ptag) == ptags.end()) return VIP_INVALID_PTAG;
    if (a.ptag == r->ptag && a.rdma_write == r->rdma_write && a.rdma_read == r->rdma_read) return VIP_SUCCESS;
    if (VIP_RETURN rc = common::check_tag_change(r->moved, a.ptag != r->ptag, a.rdma_write || a.rdma_read);
        rc != VIP_SUCCESS)
        return rc;
    auto *pt = static_cast<VerbsPtag *>(a.ptag);
    if (r->mw && a.ptag == r->ptag) { // new rights, same window, same rkey
        if (!pt->windows.bind(r->mw, r->mr, a.rdma_write, a.rdma_read)) return VIP_ERROR_RESOURCE;
        r->rdma_write = a.rdma_write;
        r->rdma_read = a.rdma_read;
        return VIP_SUCCESS;
    }
    ibv_mr *mr = ibv_reg_mr(pt->pd, reinterpret_cast<void *>(r->base), r->len, mr_access(a));
    if (!mr) return VIP_ERROR_RESOURCE;
    if ((a.rdma_write || a.rdma_read) && mr->rkey != r->handle) {
        ibv_dereg_mr(mr);
        return VIP_ERROR_RESOURCE;
    }
    // Posts on other threads read the region without a lock: the new
    // registration is a new Region swapped in under the same handle, and the
    // old one is freed once no post or completion can still be reading it.
    auto *next = new Region{r->handle, mr, nullptr, r->base, r->len, pt, a.rdma_write, a.rdma_read};
    next->moved = r->moved || r->ptag != pt;
    mem.replace(r, next);
    for (VerbsVi *vi : vis) vi->quiesce_region_readers();
    if (r->mw) // the window belongs to the old tag: the handle stays a local alias
        ibv_dealloc_mw(r->mw);
    ibv_dereg_mr(r->mr);
    r->ptag->users--;
    pt->users++;
    delete r;
    return VIP_SUCCESS;
}

// ---- VIs and CQs ---------------------------------------------------------------------

VIP_RETURN VerbsNic::create_vi(const prov::ViAttr &a, prov::Cq *send_cq, prov::Cq *recv_cq, prov::Vi **out) {
    auto vi = std::make_unique<VerbsVi>(*this);
    VIP_RETURN rc;
    {
        std::lock_guard<std::mutex> g(cm_mu); // CQ binding changes CQ sizes
        rc = vi->init(a, static_cast<VerbsCq *>(send_cq), static_cast<VerbsCq *>(recv_cq));
    }
    if (rc != VIP_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(ctl_mu);
    vis.push_back(vi.get());
    *out = vi.release();
    return VIP_SUCCESS;
}

VIP_RETURN VerbsNic::destroy_vi(prov::Vi *pvi) {
    auto *vi = static_cast<VerbsVi *>(pvi);
    {
        std::lock_guard<std::mutex> g(cm_mu);
        VIP_VI_STATE st = vi->state.load();
        if (st == VIP_STATE_CONNECTED || st == VIP_STATE_CONNECT_PENDING || vi->connector) return VIP_INVALID_STATE;
        if (!vi->sq.empty() || !vi->rq.empty()) return VIP_INVALID_STATE;
    }
    {
        std::lock_guard<std::mutex> g(ctl_mu);
        vis.erase(std::remove(vis.begin(), vis.end(), vi), vis.end());
    }
    std::lock_guard<std::mutex> g(cm_mu);
    delete vi;
    return VIP_SUCCESS;
}

VIP_RETURN VerbsNic::create_cq(VIP_ULONG entries, prov::Cq **out) {
    auto cq = std::make_unique<VerbsCq>(*this);
    VIP_RETURN rc = cq->init(entries);
    if (rc != VIP_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(ctl_mu);
    cqs.push_back(cq.get());
    *out = cq.release();
    return VIP_SUCCESS;
}

VIP_RETURN VerbsNic::destroy_cq(prov::Cq *pcq) {
    auto *cq = static_cast<VerbsCq *>(pcq);
    if (cq->bound_queues.load() > 0) return VIP_INVALID_STATE;
    {
        std::lock_guard<std::mutex> g(ctl_mu);
        cqs.erase(std::remove(cqs.begin(), cqs.end(), cq), cqs.end());
    }
    delete cq;
    return VIP_SUCCESS;
}

// ---- errors -----------------------------------------------------------------------------

VIP_RETURN VerbsNic::error_callback(VIP_PVOID c, VIP_ERROR_HANDLER h) {
    std::lock_guard<std::mutex> g(err_mu_);
    err_fn_ = h;
    err_ctx_ = c;
    return VIP_SUCCESS;
}

// Errors found while the notify thread holds the NIC's control lock are held
// back and reported after it lets go, so that a handler may call back into VIPL.
thread_local std::vector<std::pair<VerbsNic *, VIP_ERROR_DESCRIPTOR>> *deferred_errors = nullptr;

void VerbsNic::report_error(VIP_ERROR_CODE code, VIP_RESOURCE_CODE res, VerbsVi *vi, VIP_DESCRIPTOR *d,
                            VIP_ULONG opcode) {
    VIP_ERROR_HANDLER fn;
    VIP_PVOID c;
    {
        std::lock_guard<std::mutex> g(err_mu_);
        fn = err_fn_;
        c = err_ctx_;
    }
    if (!fn) return;
    VIP_ERROR_DESCRIPTOR ed{};
    ed.NicHandle = api_handle;
    ed.ViHandle = vi ? vi->api_handle : nullptr;
    ed.CQHandle = nullptr;
    ed.DescriptorPtr = d;
    ed.OpCode = opcode;
    ed.ResourceCode = res;
    ed.ErrorCode = code;
    if (deferred_errors) {
        deferred_errors->push_back({this, ed});
        return;
    }
    fn(c, &ed);
}

void VerbsNic::deliver_error(const VIP_ERROR_DESCRIPTOR &ed) {
    VIP_ERROR_HANDLER fn;
    VIP_PVOID c;
    {
        std::lock_guard<std::mutex> g(err_mu_);
        fn = err_fn_;
        c = err_ctx_;
    }
    VIP_ERROR_DESCRIPTOR copy = ed;
    if (fn) fn(c, &copy);
}

void VerbsNic::progress() { pump_cm(0); }

} // namespace vipl::verbs
