// protection.cpp - host-side updates of the protection table (protection.hpp):
// creating and deleting ptags, registering, deregistering, querying and
// changing memory regions.
#include "protection.hpp"

namespace nicfw {

PtagImpl *ProtectionTable::new_ptag() {
    std::lock_guard<std::mutex> g(mu_);
    return new PtagImpl(this, next_ptag_++);
}

void ProtectionTable::delete_ptag(PtagImpl *t) {
    std::lock_guard<std::mutex> g(mu_);
    delete t;
}

VIP_RETURN ProtectionTable::register_region(void *addr, size_t len, const vipl::prov::MemAttr &a, VIP_MEM_HANDLE *out,
                                            ShmRef shm) {
    auto *t = static_cast<PtagImpl *>(a.ptag);
    std::lock_guard<std::mutex> g(mu_);
    for (uint32_t n = 0; n < kMaxRegions; ++n) {
        const uint32_t idx = (hint_ + n - 1) % kMaxRegions + 1;
        Region &r = regions_[idx];
        if (r.handle.load(std::memory_order_relaxed) != 0) continue;
        r.base = reinterpret_cast<uintptr_t>(addr);
        r.len = len;
        r.ptag = t;
        r.ptag_id = t->id;
        r.rdma_write = a.rdma_write;
        r.rdma_read = a.rdma_read;
        r.moved = false;
        r.shm = shm;
        if (++gen_ == 0) gen_ = 1;
        const uint32_t h = (uint32_t(gen_) << 16) | idx;
        t->refs.fetch_add(1);
        r.handle.store(h, std::memory_order_release); // published: the firmware may use it
        pub_->publish_region(idx, r);                 // and peers' DMA engines
        hint_ = idx % kMaxRegions + 1;
        *out = h;
        return VIP_SUCCESS;
    }
    return VIP_ERROR_RESOURCE;
}

VIP_RETURN ProtectionTable::deregister_region(void *addr, VIP_MEM_HANDLE mh) {
    std::lock_guard<std::mutex> g(mu_);
    const Region *r = lookup(mh);
    if (!r || r->base != reinterpret_cast<uintptr_t>(addr)) return VIP_INVALID_PARAMETER;
    Region &w = regions_[mh & 0xffff];
    w.ptag->refs.fetch_sub(1);
    w.handle.store(0, std::memory_order_release);
    pub_->retire_region(mh & 0xffff);
    if (drain_) drain_(); // no peer's write or read of it lands after we return
    return VIP_SUCCESS;
}

VIP_RETURN ProtectionTable::query_region(void *addr, VIP_MEM_HANDLE mh, vipl::prov::MemAttr *out) {
    std::lock_guard<std::mutex> g(mu_);
    const Region *r = lookup(mh);
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (!r || a < r->base || a - r->base >= r->len) return VIP_INVALID_PARAMETER;
    out->ptag = r->ptag;
    out->rdma_write = r->rdma_write;
    out->rdma_read = r->rdma_read;
    return VIP_SUCCESS;
}

VIP_RETURN ProtectionTable::set_region_attributes(void *addr, VIP_MEM_HANDLE mh, const vipl::prov::MemAttr &a) {
    auto *t = static_cast<PtagImpl *>(a.ptag);
    std::lock_guard<std::mutex> g(mu_);
    const Region *r = lookup(mh);
    const uintptr_t p = reinterpret_cast<uintptr_t>(addr);
    if (!r || p < r->base || p - r->base >= r->len) return VIP_INVALID_PARAMETER;
    Region &w = regions_[mh & 0xffff];
    if (VIP_RETURN rc = vipl::common::check_tag_change(w.moved, w.ptag != t, a.rdma_write || a.rdma_read);
        rc != VIP_SUCCESS)
        return rc;
    if (w.ptag != t) {
        w.moved = true;
        t->refs.fetch_add(1);
        w.ptag->refs.fetch_sub(1);
    }
    w.ptag = t;
    w.ptag_id = t->id;
    w.rdma_write = a.rdma_write;
    w.rdma_read = a.rdma_read;
    pub_->publish_region(mh & 0xffff, w);
    if (drain_) drain_(); // a transfer checked against the old attributes has ended
    return VIP_SUCCESS;
}

} // namespace nicfw
