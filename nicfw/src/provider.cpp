// provider.cpp - the nicfw provider as the VIPL API layer sees it: NIC handles,
// protection tags, the memory protection table, VI/CQ lifetimes, the job's
// name service, and registration with the VIPL core.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "nic.hpp"
#include "vipl_boot.h"
#include "viastack_log.hpp"

namespace nicfw {

namespace {
std::mutex g_mu;
NicHw *g_hw = nullptr;

void stop_at_exit() {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_hw) g_hw->stop_thread();
}

} // namespace

class NicHandle : public vipl::prov::Nic {
public:
    explicit NicHandle(NicHw *hw) : hw(hw) {}
    ~NicHandle() override {
        std::lock_guard<std::mutex> g(g_mu);
        {
            std::lock_guard<std::mutex> e(hw->err_mu); // its callback goes with it
            std::erase_if(hw->err_sinks, [this](const NicHw::ErrSink &s) { return s.handle == this; });
            std::erase(hw->live_handles, this);
        }
        if (hw->owner == this) hw->owner = nullptr;
        if (--hw->refs == 0) {
            delete hw;
            g_hw = nullptr;
        }
    }

    VIP_RETURN query(VIP_NIC_ATTRIBUTES *a) override {
        std::memset(a, 0, sizeof *a);
        std::snprintf(a->Name, sizeof a->Name, "nicfw0");
        a->HardwareVersion = 0x4c41;            // "LA": LANai-style
        a->ProviderVersion = 0x00010000;
        a->NicAddressLen = 2;
        a->LocalNicAddress = hw->addr_bytes;
        a->ThreadSafe = VIP_FALSE;
        a->MaxDiscriminatorLen = VIP_MAX_DISCRIMINATOR_LEN;
        a->MaxRegisterBytes = ~0ul >> 1;
        a->MaxRegisterRegions = kMaxRegions;
        a->MaxRegisterBlockBytes = ~0ul >> 1;
        a->MaxVI = kMaxVi;
        a->MaxDescriptorsPerQueue = kMaxQueue;
        a->MaxSegmentsPerDesc = kMaxSegments + 1;
        a->MaxCQ = kMaxCq;
        a->MaxCQEntries = kMaxCqEntries;
        a->MaxTransferSize = kMaxTransfer;
        a->NativeMTU = kMaxTransfer;
        a->MaxPtags = kMaxPtags;
        a->ReliabilityLevelSupport =
            VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY | VIP_SERVICE_RELIABLE_RECEPTION;
        a->RDMAReadSupport = VIP_SERVICE_RELIABLE_DELIVERY | VIP_SERVICE_RELIABLE_RECEPTION;
        return VIP_SUCCESS;
    }

    VIP_RETURN create_ptag(vipl::prov::Ptag **out) override {
        std::lock_guard<std::mutex> g(hw->table_mu);
        if (ptags >= kMaxPtags) return VIP_ERROR_RESOURCE;
        ++ptags;
        *out = new PtagImpl(hw, hw->next_ptag++);
        return VIP_SUCCESS;
    }
    VIP_RETURN destroy_ptag(vipl::prov::Ptag *p) override {
        auto *t = static_cast<PtagImpl *>(p);
        if (t->hw != hw) return VIP_INVALID_PTAG;
        if (t->refs.load() != 0) return VIP_INVALID_STATE; // VIs or regions still use it
        std::lock_guard<std::mutex> g(hw->table_mu);
        --ptags;
        delete t;
        return VIP_SUCCESS;
    }

    VIP_RETURN register_mem(void *addr, VIP_ULONG len, const vipl::prov::MemAttr &a, VIP_MEM_HANDLE *out) override {
        auto *t = static_cast<PtagImpl *>(a.ptag);
        if (!t || t->hw != hw) return VIP_INVALID_PTAG;
        std::lock_guard<std::mutex> g(hw->table_mu);
        for (uint32_t n = 0; n < kMaxRegions; ++n) {
            const uint32_t idx = (hw->region_hint + n - 1) % kMaxRegions + 1;
            Region &r = hw->regions[idx];
            if (r.handle.load(std::memory_order_relaxed) != 0) continue;
            r.base = reinterpret_cast<uintptr_t>(addr);
            r.len = len;
            r.ptag = t;
            r.ptag_id = t->id;
            r.rdma_write = a.rdma_write;
            r.rdma_read = a.rdma_read;
            if (++hw->region_gen == 0) hw->region_gen = 1;
            const uint32_t h = (uint32_t(hw->region_gen) << 16) | idx;
            t->refs.fetch_add(1);
            r.handle.store(h, std::memory_order_release); // published: the firmware may use it
            hw->region_hint = idx % kMaxRegions + 1;
            *out = h;
            return VIP_SUCCESS;
        }
        return VIP_ERROR_RESOURCE;
    }
    VIP_RETURN deregister_mem(void *addr, VIP_MEM_HANDLE mh) override {
        std::lock_guard<std::mutex> g(hw->table_mu);
        const Region *r = hw->region(mh);
        if (!r || r->base != reinterpret_cast<uintptr_t>(addr)) return VIP_INVALID_PARAMETER;
        Region &w = hw->regions[mh & 0xffff];
        static_cast<PtagImpl *>(w.ptag)->refs.fetch_sub(1);
        w.handle.store(0, std::memory_order_release);
        return VIP_SUCCESS;
    }
    VIP_RETURN query_mem(void *addr, VIP_MEM_HANDLE mh, vipl::prov::MemAttr *out) override {
        std::lock_guard<std::mutex> g(hw->table_mu);
        const Region *r = hw->region(mh);
        const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
        if (!r || a < r->base || a - r->base >= r->len) return VIP_INVALID_PARAMETER;
        out->ptag = r->ptag;
        out->rdma_write = r->rdma_write;
        out->rdma_read = r->rdma_read;
        return VIP_SUCCESS;
    }
    VIP_RETURN set_mem_attributes(void *addr, VIP_MEM_HANDLE mh, const vipl::prov::MemAttr &a) override {
        auto *t = static_cast<PtagImpl *>(a.ptag);
        if (!t || t->hw != hw) return VIP_INVALID_PTAG;
        auto q = hw->quiesce(); // the firmware must not see a half-updated entry
        std::lock_guard<std::mutex> g(hw->table_mu);
        const Region *r = hw->region(mh);
        const uintptr_t p = reinterpret_cast<uintptr_t>(addr);
        if (!r || p < r->base || p - r->base >= r->len) return VIP_INVALID_PARAMETER;
        Region &w = hw->regions[mh & 0xffff];
        if (w.ptag != t) {
            t->refs.fetch_add(1);
            static_cast<PtagImpl *>(w.ptag)->refs.fetch_sub(1);
        }
        w.ptag = t;
        w.ptag_id = t->id;
        w.rdma_write = a.rdma_write;
        w.rdma_read = a.rdma_read;
        return VIP_SUCCESS;
    }

    VIP_RETURN create_vi(const vipl::prov::ViAttr &a, vipl::prov::Cq *scq, vipl::prov::Cq *rcq,
                         vipl::prov::Vi **out) override {
        if (VIP_RETURN rc = hw->check_vi_attr(a); rc != VIP_SUCCESS) return rc;
        auto *s = static_cast<CqImpl *>(scq);
        auto *r = static_cast<CqImpl *>(rcq);
        if ((s && s->hw != hw) || (r && r->hw != hw)) return VIP_INVALID_PARAMETER;
        std::lock_guard<std::mutex> g(hw->table_mu);
        for (uint32_t i = 0; i < kMaxVi; ++i) {
            if (hw->vis[i].load(std::memory_order_relaxed)) continue;
            auto *vi = new ViImpl(hw, i, a, s, r);
            vi->owner = this;
            static_cast<PtagImpl *>(a.ptag)->refs.fetch_add(1);
            if (s) s->bound.fetch_add(1);
            if (r) r->bound.fetch_add(1);
            hw->vis[i].store(vi, std::memory_order_release);
            if (i / 64 + 1 > hw->vi_words.load()) hw->vi_words.store(i / 64 + 1);
            *out = vi;
            return VIP_SUCCESS;
        }
        return VIP_ERROR_RESOURCE;
    }
    VIP_RETURN destroy_vi(vipl::prov::Vi *pv) override {
        auto *vi = static_cast<ViImpl *>(pv);
        if (vi->hw != hw) return VIP_INVALID_PARAMETER;
        const int st = vi->state.load();
        if (st == static_cast<int>(ViState::Connected) || st == static_cast<int>(ViState::Pending))
            return VIP_INVALID_STATE; // disconnect first
        if (!vi->host_sq.empty() || !vi->host_rq.empty())
            return VIP_INVALID_STATE; // descriptors still posted: reap them (Done/Wait) first
        {
            auto q = hw->quiesce(); // the firmware holds no pointer to it after this
            std::lock_guard<std::mutex> g(hw->table_mu);
            hw->vis[vi->index].store(nullptr, std::memory_order_release);
            hw->active[vi->index / 64].fetch_and(~(1ull << (vi->index % 64)));
        }
        {
            std::lock_guard<std::mutex> g(hw->notify_mu);
            std::erase(hw->notify_vis, vi);
        }
        static_cast<PtagImpl *>(vi->attr.ptag)->refs.fetch_sub(1);
        if (vi->send_cq) vi->send_cq->bound.fetch_sub(1);
        if (vi->recv_cq) vi->recv_cq->bound.fetch_sub(1);
        delete vi;
        return VIP_SUCCESS;
    }

    VIP_RETURN create_cq(VIP_ULONG entries, vipl::prov::Cq **out) override {
        if (entries == 0 || entries > kMaxCqEntries) return VIP_INVALID_PARAMETER;
        std::lock_guard<std::mutex> g(hw->table_mu);
        if (cqs >= kMaxCq) return VIP_ERROR_RESOURCE;
        ++cqs;
        auto *cq = new CqImpl(hw, entries);
        cq->owner = this;
        *out = cq;
        return VIP_SUCCESS;
    }
    VIP_RETURN destroy_cq(vipl::prov::Cq *pc) override {
        auto *cq = static_cast<CqImpl *>(pc);
        if (cq->hw != hw) return VIP_INVALID_PARAMETER;
        if (cq->bound.load() != 0) return VIP_INVALID_STATE; // VIs still bound to it
        {
            std::lock_guard<std::mutex> g(hw->notify_mu);
            std::erase(hw->notify_cqs, cq);
        }
        std::lock_guard<std::mutex> g(hw->table_mu);
        --cqs;
        delete cq;
        return VIP_SUCCESS;
    }

    VIP_RETURN connect_wait(const VIP_NET_ADDRESS *local, VIP_ULONG timeout_ms, VIP_NET_ADDRESS *remote,
                            VIP_VI_ATTRIBUTES *remote_attr, vipl::prov::Conn **out) override {
        ConnImpl *c = nullptr;
        const VIP_RETURN rc = hw->connect_wait(local, timeout_ms, remote, remote_attr, &c);
        if (rc == VIP_SUCCESS) *out = c;
        return rc;
    }

    // The handler runs on the provider's agent thread, as the spec has it.
    VIP_RETURN error_callback(VIP_PVOID ctx, VIP_ERROR_HANDLER h) override {
        {
            std::lock_guard<std::mutex> g(hw->err_mu);
            std::erase_if(hw->err_sinks, [this](const NicHw::ErrSink &s) { return s.handle == this; });
            if (h) hw->err_sinks.push_back(NicHw::ErrSink{this, h, ctx});
        }
        if (h) hw->ensure_agent(false);
        return VIP_SUCCESS;
    }

    // Name service: the names are the API layer's (vipl/src/names.hpp); a
    // rank's host address is the rank itself, 2 bytes little endian.
    VIP_RETURN ns_init(VIP_PVOID) override {
        hw->ns_ready = true;
        return VIP_SUCCESS;
    }
    VIP_RETURN ns_shutdown() override {
        hw->ns_ready = false;
        return VIP_SUCCESS;
    }
    int job_size() const override { return hw->nprocs; }
    VIP_RETURN rank_address(int r, VIP_NET_ADDRESS *out) override {
        if (r < 0 || r >= hw->nprocs) return VIP_ERROR_NAMESERVICE;
        out->HostAddressLen = 2;
        out->DiscriminatorLen = 0;
        out->HostAddress[0] = static_cast<VIP_UINT8>(r & 0xff);
        out->HostAddress[1] = static_cast<VIP_UINT8>(r >> 8);
        return VIP_SUCCESS;
    }
    int address_rank(const VIP_NET_ADDRESS *addr) override {
        uint16_t r;
        return hw->parse_addr(addr, &r) == VIP_SUCCESS ? int(r) : -1;
    }

    // Auto-discovery: every NIC of the job.  On input NumAdAddrs is the room in
    // ADAddrArray (each entry with room for a 2-byte host address); on output
    // the number of NICs, of which min(room, count) were written.
    VIP_RETURN query_system_management(VIP_ULONG type, VIP_PVOID out) override {
        if (type != VIP_SMI_AUTODISCOVERY) return VIP_INVALID_PARAMETER;
        auto *l = static_cast<VIP_AUTODISCOVERY_LIST *>(out);
        if (l->NumAdAddrs && !l->ADAddrArray) return VIP_INVALID_PARAMETER;
        const VIP_ULONG room = l->NumAdAddrs;
        for (VIP_ULONG i = 0; i < room && i < static_cast<VIP_ULONG>(hw->nprocs); ++i) {
            VIP_NET_ADDRESS *a = l->ADAddrArray[i];
            if (!a) return VIP_INVALID_PARAMETER;
            a->HostAddressLen = 2;
            a->DiscriminatorLen = 0;
            a->HostAddress[0] = static_cast<VIP_UINT8>(i & 0xff);
            a->HostAddress[1] = static_cast<VIP_UINT8>(i >> 8);
        }
        l->NumAdAddrs = static_cast<VIP_ULONG>(hw->nprocs);
        l->NumberOfHops = 1;
        return VIP_SUCCESS;
    }

    int rank() const override { return hw->rank; }
    void progress() override { hw->host_poll(); }

    NicHw *hw;
    uint32_t ptags = 0;
    uint32_t cqs = 0;
};

namespace {
bool matches(const char *dev) { return std::strcmp(dev, "nicfw0") == 0 || std::strcmp(dev, "nicfw") == 0; }

VIP_RETURN open_nic(const char *dev, vipl::prov::Nic **out) {
    if (!matches(dev)) return VIP_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(g_mu);
    if (!g_hw) {
        if (vipl_boot_init() != VIPL_BOOT_OK) {
            viastack::log::error(viastack::log::Layer::nicfw,
                                 "job bootstrap failed (see above); start the program with vipl-run");
            return VIP_ERROR_RESOURCE;
        }
        try {
            const Config cfg = Config::from_env();
            g_hw = new NicHw(cfg, vipl_boot_job(), vipl_boot_rank(), vipl_boot_size());
        } catch (const std::exception &e) {
            viastack::log::error(viastack::log::Layer::nicfw, "{}", e.what());
            return VIP_ERROR_RESOURCE;
        }
        static bool once = (std::atexit(stop_at_exit), true);
        (void)once;
    }
    ++g_hw->refs;
    auto *h = new NicHandle(g_hw);
    if (!g_hw->owner) g_hw->owner = h;
    {
        std::lock_guard<std::mutex> e(g_hw->err_mu);
        g_hw->live_handles.push_back(h);
    }
    *out = h;
    return VIP_SUCCESS;
}

const vipl::prov::ProviderInfo kInfo{"nicfw", matches, open_nic, "nicfw0"};
} // namespace

} // namespace nicfw

VIPL_REGISTER_PROVIDER(nicfw::kInfo)
