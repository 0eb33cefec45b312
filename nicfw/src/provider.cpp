// provider.cpp - the nicfw provider as the VIPL API layer sees it: the NIC
// handle (vipl::prov::Nic), which turns each VIPL call into a call on one of
// the NIC's components (nic.hpp): ptags and regions on the protection table,
// VI/CQ lifetimes on the VI table, firmware and agent, connection waits on the
// connection manager, error callbacks on the error queue; the job's name
// service (vipl/providers/common); and registration with the VIPL core.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "job.hpp"
#include "name_service.hpp"
#include "nic_attributes.hpp"
#include "nic.hpp"
#include "viastack_log.hpp"

namespace nicfw {

namespace {
std::mutex g_mu;
NicHw *g_hw = nullptr;

void stop_at_exit() {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_hw) g_hw->stop();
}

} // namespace

class NicHandle : public vipl::prov::Nic {
public:
    explicit NicHandle(NicHw *hw) : hw(hw) {}
    ~NicHandle() override {
        std::lock_guard<std::mutex> g(g_mu);
        hw->errors.handle_closed(this); // its callback goes with it
        if (--hw->refs == 0) {
            delete hw;
            g_hw = nullptr;
        }
    }

    VIP_RETURN query(VIP_NIC_ATTRIBUTES *a) override {
        vipl::common::fill_nic_attributes(a,
                                          {"nicfw0", 0x4c41 /* "LA": LANai-style */, hw->addr_bytes,
                                           /*thread_safe=*/true, kMaxRegions, kMaxVi, kMaxQueue, kMaxSegments, kMaxCq,
                                           kMaxCqEntries, hw->cfg.max_transfer(), kMaxPtags});
        return VIP_SUCCESS;
    }

    VIP_RETURN create_ptag(vipl::prov::Ptag **out) override {
        if (!take(ptags, kMaxPtags)) return VIP_ERROR_RESOURCE;
        *out = hw->protection.new_ptag();
        return VIP_SUCCESS;
    }
    VIP_RETURN destroy_ptag(vipl::prov::Ptag *p) override {
        if (!hw->protection.owns(p)) return VIP_INVALID_PTAG;
        auto *t = static_cast<PtagImpl *>(p);
        if (t->refs.load() != 0) return VIP_INVALID_STATE; // VIs or regions still use it
        hw->protection.delete_ptag(t);
        ptags.fetch_sub(1);
        return VIP_SUCCESS;
    }

    VIP_RETURN register_mem(void *addr, VIP_ULONG len, const vipl::prov::MemAttr &a, VIP_MEM_HANDLE *out) override {
        if (!hw->protection.owns(a.ptag)) return VIP_INVALID_PTAG;
        // Memory from VipxAllocMem is noted, so the bulk path can name it to peers.
        return hw->protection.register_region(addr, len, a, out, shared_memory().find(addr, len));
    }
    VIP_RETURN deregister_mem(void *addr, VIP_MEM_HANDLE mh) override {
        return hw->protection.deregister_region(addr, mh);
    }
    VIP_RETURN query_mem(void *addr, VIP_MEM_HANDLE mh, vipl::prov::MemAttr *out) override {
        return hw->protection.query_region(addr, mh, out);
    }
    VIP_RETURN set_mem_attributes(void *addr, VIP_MEM_HANDLE mh, const vipl::prov::MemAttr &a) override {
        if (!hw->protection.owns(a.ptag)) return VIP_INVALID_PTAG;
        auto q = hw->fw.quiesce(); // the firmware must not see a half-updated entry
        return hw->protection.set_region_attributes(addr, mh, a);
    }

    VIP_RETURN create_vi(const vipl::prov::ViAttr &a, vipl::prov::Cq *scq, vipl::prov::Cq *rcq,
                         vipl::prov::Vi **out) override {
        if (VIP_RETURN rc = check_vi_attr(*hw, a); rc != VIP_SUCCESS) return rc;
        auto *s = static_cast<CqImpl *>(scq);
        auto *r = static_cast<CqImpl *>(rcq);
        if ((s && s->hw != hw) || (r && r->hw != hw)) return VIP_INVALID_PARAMETER;
        ViImpl *vi = hw->vis.add([&](uint32_t index) {
            auto *v = new ViImpl(hw, index, a, s, r);
            v->owner = this;
            static_cast<PtagImpl *>(a.ptag)->refs.fetch_add(1);
            if (s) s->bound.fetch_add(1);
            if (r) r->bound.fetch_add(1);
            return v;
        });
        if (!vi) return VIP_ERROR_RESOURCE;
        hw->fw.vi_added(vi->index);
        *out = vi;
        return VIP_SUCCESS;
    }
    VIP_RETURN destroy_vi(vipl::prov::Vi *pv) override {
        auto *vi = static_cast<ViImpl *>(pv);
        if (vi->hw != hw) return VIP_INVALID_PARAMETER;
        const ViState st = vi->state.load();
        if (st == ViState::Connected || st == ViState::Pending) return VIP_INVALID_STATE; // disconnect first
        if (!vi->host_sq.empty() || !vi->host_rq.empty())
            return VIP_INVALID_STATE; // descriptors still posted: reap them (Done/Wait) first
        {
            auto q = hw->fw.quiesce(); // the firmware holds no pointer to it after this
            hw->vis.remove(vi->index);
            hw->fw.vi_removed(vi->index);
        }
        // A CQ consumer that looked the VI up before it left the table is
        // done reading it once it leaves the consumer lock (CqImpl::pop_live).
        for (CqImpl *cq : {vi->send_cq, vi->recv_cq})
            if (cq) cq->ring.quiesce_consumers();
        hw->agent.forget(vi);
        static_cast<PtagImpl *>(vi->attr.ptag)->refs.fetch_sub(1);
        if (vi->send_cq) vi->send_cq->bound.fetch_sub(1);
        if (vi->recv_cq) vi->recv_cq->bound.fetch_sub(1);
        delete vi;
        return VIP_SUCCESS;
    }

    VIP_RETURN create_cq(VIP_ULONG entries, vipl::prov::Cq **out) override {
        if (entries == 0 || entries > kMaxCqEntries) return VIP_INVALID_PARAMETER;
        if (!take(cqs, kMaxCq)) return VIP_ERROR_RESOURCE;
        auto *cq = new CqImpl(hw, entries);
        cq->owner = this;
        *out = cq;
        return VIP_SUCCESS;
    }
    VIP_RETURN destroy_cq(vipl::prov::Cq *pc) override {
        auto *cq = static_cast<CqImpl *>(pc);
        if (cq->hw != hw) return VIP_INVALID_PARAMETER;
        if (cq->bound.load() != 0) return VIP_INVALID_STATE; // VIs still bound to it
        hw->agent.forget(cq);
        delete cq;
        cqs.fetch_sub(1);
        return VIP_SUCCESS;
    }

    VIP_RETURN connect_wait(const VIP_NET_ADDRESS *local, VIP_ULONG timeout_ms, VIP_NET_ADDRESS *remote,
                            VIP_VI_ATTRIBUTES *remote_attr, vipl::prov::Conn **out) override {
        ConnImpl *c = nullptr;
        const VIP_RETURN rc = hw->cm.connect_wait(local, timeout_ms, remote, remote_attr, &c);
        if (rc == VIP_SUCCESS) *out = c;
        return rc;
    }

    // The handler runs on the provider's agent thread, as the spec has it.
    VIP_RETURN error_callback(VIP_PVOID ctx, VIP_ERROR_HANDLER h) override {
        hw->errors.set_callback(this, h, ctx);
        if (h) hw->agent.ensure_running(false);
        return VIP_SUCCESS;
    }

    // Name service: the names are the API layer's (vipl/src/names.hpp); a
    // rank's host address is the rank itself, 2 bytes little endian.
    VIP_RETURN ns_init(VIP_PVOID) override { return VIP_SUCCESS; }
    VIP_RETURN ns_shutdown() override { return VIP_SUCCESS; }
    int job_size() const override { return hw->nprocs; }
    VIP_RETURN rank_address(int r, VIP_NET_ADDRESS *out) override {
        if (r < 0 || r >= hw->nprocs) return VIP_ERROR_NAMESERVICE;
        vipl::common::put_rank_number(r, out);
        return VIP_SUCCESS;
    }
    int address_rank(const VIP_NET_ADDRESS *addr) override { return vipl::common::rank_number_of(addr, hw->nprocs); }

    // Auto-discovery: every NIC of the job (vipl/providers/common/name_service.hpp).
    VIP_RETURN query_system_management(VIP_ULONG type, VIP_PVOID out) override {
        if (type != VIP_SMI_AUTODISCOVERY) return VIP_INVALID_PARAMETER;
        return vipl::common::autodiscovery(static_cast<VIP_AUTODISCOVERY_LIST *>(out), hw->nprocs,
                                           [this](int r, VIP_NET_ADDRESS *a) { return rank_address(r, a); });
    }

    // Shared memory (dma.hpp): the peers' NICs map it, a bulk transfer is one memcpy.
    VIP_RETURN alloc_mem(VIP_ULONG len, void *at, void **out) override {
        void *p = shared_memory().alloc(len, at);
        if (!p) return VIP_ERROR_RESOURCE;
        *out = p;
        return VIP_SUCCESS;
    }
    VIP_RETURN free_mem(void *p) override { return shared_memory().free(p) ? VIP_SUCCESS : VIP_INVALID_PARAMETER; }

    int rank() const override { return hw->rank; }
    // A registration is a table entry the firmware checks addresses against:
    // nothing is pinned, the range is looked up at each transfer.
    bool registration_pins() const override { return false; }
    // VipxProgress: a step, and now and then a look at the clock for the peer
    // watch (idle_poll), so a host that only calls this, slowly, still sees a
    // peer's death within a fraction of a second.
    void progress() override {
        hw->host_poll();
        if (hw->cfg.mode == Mode::Inline) hw->idle_poll();
    }

    NicHw *hw;

private:
    // Per-handle limits (MaxPtags, MaxCQ): one more of `n`, if below `max`.
    static bool take(std::atomic<uint32_t> &n, uint32_t max) {
        uint32_t v = n.load();
        do {
            if (v >= max) return false;
        } while (!n.compare_exchange_weak(v, v + 1));
        return true;
    }
    std::atomic<uint32_t> ptags{0};
    std::atomic<uint32_t> cqs{0};
};

namespace {
bool matches(const char *dev) { return std::strcmp(dev, "nicfw0") == 0 || std::strcmp(dev, "nicfw") == 0; }

VIP_RETURN open_nic(const char *dev, vipl::prov::Nic **out) {
    if (!matches(dev)) return VIP_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(g_mu);
    if (!g_hw) {
        vipl::common::Job job;
        if (!vipl::common::discover_job(viastack::log::Layer::nicfw, &job)) return VIP_ERROR_RESOURCE;
        try {
            const Config cfg = Config::from_env();
            g_hw = new NicHw(cfg, job.id, job.rank, job.size);
        } catch (const std::exception &e) {
            viastack::log::error(viastack::log::Layer::nicfw, "{}", e.what());
            return VIP_ERROR_RESOURCE;
        }
        static bool once = (std::atexit(stop_at_exit), true);
        (void)once;
    }
    ++g_hw->refs;
    auto *h = new NicHandle(g_hw);
    g_hw->errors.handle_opened(h);
    *out = h;
    return VIP_SUCCESS;
}

const vipl::prov::ProviderInfo kInfo{"nicfw", matches, open_nic, "nicfw0"};
} // namespace

} // namespace nicfw

VIPL_REGISTER_PROVIDER(nicfw::kInfo)
