// fake_nic.cpp - the fake provider's NIC handles: attributes, protection tags,
// the memory protection table, VI and CQ lifetimes, the name service, and the
// registration with the VIPL core.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "fake_provider.hpp"
#include "job.hpp"
#include "name_service.hpp"
#include "nic_attributes.hpp"
#include "viastack_log.hpp"

namespace vipl::fake {

NicHandle::NicHandle(Device *d) : dev(d) {
    ++dev->handles;
    dev->live_handles.push_back(this);
}

NicHandle::~NicHandle() {
    std::lock_guard<std::mutex> g(board().mu);
    std::erase(dev->live_handles, this);
    --dev->handles; // the device stays: its address may be dialled again
}

VIP_RETURN NicHandle::query(VIP_NIC_ATTRIBUTES *a) {
    // Thread safe: one mutex guards the switchboard.
    vipl::common::fill_nic_attributes(a,
                                      {dev->name.c_str(), 0x4641 /* "FA": fake */, dev->addr, true, kMaxRegions, kMaxVi,
                                       kQueueDepth, kMaxSegments, kMaxCq, kMaxCqEntries, kMaxTransfer, kMaxPtags});
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- protection tags
VIP_RETURN NicHandle::create_ptag(prov::Ptag **out) {
    std::lock_guard<std::mutex> g(board().mu);
    if (dev->ptags >= int(kMaxPtags)) return VIP_ERROR_RESOURCE;
    ++dev->ptags;
    auto *t = new FakePtag;
    t->dev = dev;
    *out = t;
    return VIP_SUCCESS;
}

VIP_RETURN NicHandle::destroy_ptag(prov::Ptag *p) {
    auto *t = static_cast<FakePtag *>(p);
    std::lock_guard<std::mutex> g(board().mu);
    if (t->dev != dev) return VIP_INVALID_PTAG;
    if (t->refs != 0) return VIP_INVALID_STATE; // VIs or regions still use it
    --dev->ptags;
    delete t;
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- memory
VIP_RETURN NicHandle::register_mem(void *addr, VIP_ULONG len, const prov::MemAttr &a, VIP_MEM_HANDLE *out) {
    auto *t = static_cast<FakePtag *>(a.ptag);
    std::lock_guard<std::mutex> g(board().mu);
    if (!t || t->dev != dev) return VIP_INVALID_PTAG;
    for (uint32_t n = 0; n < kMaxRegions; ++n) {
        const uint32_t idx = (dev->region_hint + n - 1) % kMaxRegions + 1;
        Region &r = dev->regions[idx];
        if (r.handle != 0) continue;
        if (++dev->region_gen == 0 || dev->region_gen > 0xffff) dev->region_gen = 1;
        r = Region{reinterpret_cast<uintptr_t>(addr), len, t, a.rdma_write, a.rdma_read, (dev->region_gen << 16) | idx};
        ++t->refs;
        dev->region_hint = idx % kMaxRegions + 1;
        *out = r.handle;
        return VIP_SUCCESS;
    }
    return VIP_ERROR_RESOURCE;
}

VIP_RETURN NicHandle::deregister_mem(void *addr, VIP_MEM_HANDLE mh) {
    std::lock_guard<std::mutex> g(board().mu);
    const Region *r = dev->region(mh);
    if (!r || r->base != reinterpret_cast<uintptr_t>(addr)) return VIP_INVALID_PARAMETER;
    Region &w = dev->regions[mh & 0xffff];
    --w.ptag->refs;
    w = Region{};
    return VIP_SUCCESS;
}

VIP_RETURN NicHandle::query_mem(void *addr, VIP_MEM_HANDLE mh, prov::MemAttr *out) {
    std::lock_guard<std::mutex> g(board().mu);
    const Region *r = dev->region(mh);
    if (!r || !common::range_covers(r->base, r->len, reinterpret_cast<uintptr_t>(addr), 1))
        return VIP_INVALID_PARAMETER;
    out->ptag = r->ptag;
    out->rdma_write = r->rdma_write;
    out->rdma_read = r->rdma_read;
    return VIP_SUCCESS;
}

VIP_RETURN NicHandle::set_mem_attributes(void *addr, VIP_MEM_HANDLE mh, const prov::MemAttr &a) {
    auto *t = static_cast<FakePtag *>(a.ptag);
    std::lock_guard<std::mutex> g(board().mu);
    if (!t || t->dev != dev) return VIP_INVALID_PTAG;
    const Region *r = dev->region(mh);
    if (!r || !common::range_covers(r->base, r->len, reinterpret_cast<uintptr_t>(addr), 1))
        return VIP_INVALID_PARAMETER;
    Region &w = dev->regions[mh & 0xffff];
    if (VIP_RETURN rc = common::check_tag_change(w.moved, w.ptag != t, a.rdma_write || a.rdma_read); rc != VIP_SUCCESS)
        return rc;
    w.moved = w.moved || w.ptag != t;
    --w.ptag->refs;
    ++t->refs;
    w.ptag = t;
    w.rdma_write = a.rdma_write;
    w.rdma_read = a.rdma_read;
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- VIs and CQs
VIP_RETURN NicHandle::create_vi(const prov::ViAttr &a, prov::Cq *scq, prov::Cq *rcq, prov::Vi **out) {
    auto *s = static_cast<FakeCq *>(scq);
    auto *r = static_cast<FakeCq *>(rcq);
    std::lock_guard<std::mutex> g(board().mu);
    if (VIP_RETURN rc = dev->check_vi_attr(a); rc != VIP_SUCCESS) return rc;
    if ((s && s->dev != dev) || (r && r->dev != dev)) return VIP_INVALID_PARAMETER;
    if (dev->vis.size() >= kMaxVi) return VIP_ERROR_RESOURCE;
    auto *vi = new FakeVi(dev, this, a, s, r);
    ++static_cast<FakePtag *>(a.ptag)->refs;
    if (s) ++s->bound;
    if (r) ++r->bound;
    dev->vis.push_back(vi);
    *out = vi;
    return VIP_SUCCESS;
}

VIP_RETURN NicHandle::destroy_vi(prov::Vi *pv) {
    auto *vi = static_cast<FakeVi *>(pv);
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    if (vi->dev != dev) return VIP_INVALID_PARAMETER;
    if (vi->state == ViState::Connected || vi->state == ViState::Pending) return VIP_INVALID_STATE;
    if (!vi->sq.empty() || !vi->rq.empty()) return VIP_INVALID_STATE; // reap the descriptors first
    b.forget_held(vi);
    std::erase_if(b.rules, [vi](const FaultRule &r) { return r.vi == vi; });
    std::erase(dev->vis, vi);
    std::erase(b.notify_vis, vi);
    for (FakeCq *cq : {vi->send_cq, vi->recv_cq})
        if (cq) cq->fifo.remove_if([vi](const CqEntry &e) { return e.vi == vi; });
    --static_cast<FakePtag *>(vi->attr.ptag)->refs;
    if (vi->send_cq) --vi->send_cq->bound;
    if (vi->recv_cq) --vi->recv_cq->bound;
    delete vi;
    return VIP_SUCCESS;
}

VIP_RETURN NicHandle::create_cq(VIP_ULONG entries, prov::Cq **out) {
    if (entries == 0 || entries > kMaxCqEntries) return VIP_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(board().mu);
    if (dev->cqs >= int(kMaxCq)) return VIP_ERROR_RESOURCE;
    ++dev->cqs;
    *out = new FakeCq(dev, this, entries);
    return VIP_SUCCESS;
}

VIP_RETURN NicHandle::destroy_cq(prov::Cq *pc) {
    auto *cq = static_cast<FakeCq *>(pc);
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    if (cq->dev != dev) return VIP_INVALID_PARAMETER;
    if (cq->bound != 0) return VIP_INVALID_STATE; // VIs still bound to it
    std::erase(b.notify_cqs, cq);
    --dev->cqs;
    delete cq;
    return VIP_SUCCESS;
}

VIP_RETURN NicHandle::error_callback(VIP_PVOID ctx, VIP_ERROR_HANDLER h) {
    std::lock_guard<std::mutex> g(board().mu);
    err_h = h;
    err_ctx = ctx;
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- name service
// The job is this one process (rank 0, whose NIC is fake0); the other fake NICs
// of the process are names outside the job: "fakeN".
VIP_RETURN NicHandle::ns_init(VIP_PVOID) { return VIP_SUCCESS; }
VIP_RETURN NicHandle::ns_shutdown() { return VIP_SUCCESS; }

VIP_RETURN NicHandle::rank_address(int r, VIP_NET_ADDRESS *out) {
    if (r != 0) return VIP_ERROR_NAMESERVICE;
    common::put_rank_number(r, out); // rank 0 is fake0: address 0
    return VIP_SUCCESS;
}

int NicHandle::address_rank(const VIP_NET_ADDRESS *a) { return common::rank_number_of(a, 1); }

VIP_RETURN NicHandle::ns_other_name(const char *name, VIP_NET_ADDRESS *out, VIP_ULONG index) {
    int n = -1, used = 0;
    if (index != 0 || std::sscanf(name, "fake%d%n", &n, &used) != 1 || name[used] != '\0' || n < 0 || n >= kMaxDevices)
        return VIP_ERROR_NAMESERVICE;
    out->HostAddressLen = 2;
    out->DiscriminatorLen = 0;
    out->HostAddress[0] = uint8_t(n & 0xff);
    out->HostAddress[1] = uint8_t(n >> 8);
    return VIP_SUCCESS;
}

bool NicHandle::ns_other_addr(const VIP_NET_ADDRESS *a, std::string *name) {
    if (!a || a->HostAddressLen != 2) return false;
    const int n = a->HostAddress[0] | (a->HostAddress[1] << 8);
    if (n >= kMaxDevices) return false;
    *name = "fake" + std::to_string(n);
    return true;
}

// Auto-discovery: the fake NICs opened in this process.
VIP_RETURN NicHandle::query_system_management(VIP_ULONG type, VIP_PVOID out) {
    if (type != VIP_SMI_AUTODISCOVERY) return VIP_INVALID_PARAMETER;
    auto *l = static_cast<VIP_AUTODISCOVERY_LIST *>(out);
    if (l->NumAdAddrs && !l->ADAddrArray) return VIP_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(board().mu);
    VIP_ULONG n = 0;
    for (Device *d : board().devices) {
        if (!d) continue;
        if (n < l->NumAdAddrs) {
            VIP_NET_ADDRESS *a = l->ADAddrArray[n];
            if (!a) return VIP_INVALID_PARAMETER;
            a->HostAddressLen = 2;
            a->DiscriminatorLen = 0;
            a->HostAddress[0] = d->addr[0];
            a->HostAddress[1] = d->addr[1];
        }
        ++n;
    }
    l->NumAdAddrs = n;
    l->NumberOfHops = 1;
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- registration
namespace {
int device_index(const char *dev) {
    int n = -1, used = 0;
    if (std::strcmp(dev, "fake") == 0) return 0;
    if (std::sscanf(dev, "fake%d%n", &n, &used) != 1 || dev[used] != '\0' || n < 0 || n >= kMaxDevices) return -1;
    return n;
}

bool matches(const char *dev) { return device_index(dev) >= 0; }

VIP_RETURN open_nic(const char *dev, prov::Nic **out) {
    const int idx = device_index(dev);
    if (idx < 0) return VIP_INVALID_PARAMETER;
    common::Job job;
    if (!common::discover_job(viastack::log::Layer::vipl, &job)) return VIP_ERROR_RESOURCE;
    if (job.size > 1) {
        viastack::log::error(viastack::log::Layer::vipl,
                             "fake: the fake provider connects the NICs of one process only; this job has {} "
                             "processes (use nicfw or verbs across processes: vipl/providers/fake/README.md)",
                             job.size);
        return VIP_ERROR_RESOURCE;
    }
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    if (!b.devices[idx]) b.devices[idx] = new Device(idx);
    *out = new NicHandle(b.devices[idx]);
    return VIP_SUCCESS;
}

const prov::ProviderInfo kInfo{"fake", matches, open_nic, "fake0"};
} // namespace

} // namespace vipl::fake

VIPL_REGISTER_PROVIDER(vipl::fake::kInfo)
