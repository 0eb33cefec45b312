// protection.hpp - the NIC's translation and protection table: registered
// memory regions (VipRegisterMem) and protection tags (VipCreatePtag).
//
// The firmware checks every address a descriptor names against this table
// (lookup + Region::covers: handle, bounds, ptag, RDMA enables) without a lock:
// a region is published by storing its handle last (release) and retired by
// clearing it, and the host quiesces the firmware before changing a live
// entry's attributes.  Host-side updates take the table's own mutex.
//
// Every change is also written to the table's published part (published.hpp),
// which peers' DMA engines read to check one-sided RDMA; a deregistration or
// an attribute change returns only once no peer's transfer that may have read
// the old entry is still running (the drain hook, Firmware::wait_peer_dma).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "config.hpp"
#include "descriptor_check.hpp"
#include "dma.hpp"
#include "published.hpp"
#include "region.hpp"
#include "vipl.h"
#include "vipl_provider.hpp"

namespace nicfw {

class ProtectionTable;

class PtagImpl : public vipl::prov::Ptag {
public:
    PtagImpl(const ProtectionTable *table, uint32_t id) : table(table), id(id) {}
    const ProtectionTable *const table; // the NIC it belongs to
    const uint32_t id;                  // as regions and VIs store it
    std::atomic<int> refs{0};           // VIs and regions using it
};

struct Region {
    std::atomic<uint32_t> handle{0}; // the VIP_MEM_HANDLE naming this entry, 0 = free
    uintptr_t base = 0;
    size_t len = 0;
    uint32_t ptag_id = 0;
    bool rdma_write = false;
    bool rdma_read = false;
    bool moved = false; // its tag was changed (vipl::common::check_tag_change)
    PtagImpl *ptag = nullptr;
    ShmRef shm; // inside a VipxAllocMem segment (shm.id != 0): peers map it

    // [a, a+n) lies inside the region (the shared check: vipl/providers/common/region.hpp).
    bool contains(uintptr_t a, size_t n) const { return vipl::common::range_covers(base, len, a, n); }
    bool contains(const void *p, size_t n) const { return contains(reinterpret_cast<uintptr_t>(p), n); }
};

class ProtectionTable {
public:
    ProtectionTable() : regions_(new Region[kMaxRegions + 1]), pub_(new PublishedTable) {}

    // What peers read (published.hpp); the firmware writes the VIs' part.
    PublishedTable &published() const { return *pub_; }
    // Waits until no peer's one-sided transfer that may have read an entry
    // before the last change is still running (set once the firmware exists).
    void set_drain(std::function<void()> f) { drain_ = std::move(f); }

    // ---- firmware side (lock-free) ----
    // The live region named by `mh`, or nullptr.
    const Region *lookup(VIP_MEM_HANDLE mh) const {
        const uint32_t idx = mh & 0xffff;
        if (idx == 0 || idx > kMaxRegions) return nullptr;
        const Region &r = regions_[idx];
        return r.handle.load(std::memory_order_acquire) == mh ? &r : nullptr;
    }
    // The region named by `mh` if it belongs to protection tag `ptag_id` and
    // holds [p, p+n); nullptr otherwise.
    const Region *covers(VIP_MEM_HANDLE mh, uint32_t ptag_id, const void *p, size_t n) const {
        const Region *r = lookup(mh);
        return r && r->ptag_id == ptag_id && r->contains(p, n) ? r : nullptr;
    }

    // n data segments (the firmware's SRAM copies) checked as the providers'
    // common rule says, against the regions of protection tag `ptag_id`; the
    // sum of their lengths in *total.  Inline: every message's descriptor
    // passes through it, on both sides.  `known` (optional) is a region of this
    // ptag already looked up under `known_mh`, usually the descriptor's own: a
    // segment naming it is not looked up again.
    bool check_segments(uint32_t ptag_id, const VIP_DESCRIPTOR_SEGMENT *ds, uint32_t n, uint64_t *total,
                        const Region *known = nullptr, VIP_MEM_HANDLE known_mh = 0) const {
        const auto in_tag = [&](VIP_MEM_HANDLE h) -> const Region * {
            if (known && h == known_mh) return known;
            const Region *r = lookup(h);
            return r && r->ptag_id == ptag_id ? r : nullptr;
        };
        return vipl::common::check_data_segments(ds, n, in_tag, vipl::common::NoSegmentSink{}, total) == 0;
    }

    // ---- host side (under the table's mutex) ----
    bool owns(const vipl::prov::Ptag *p) const { return p && static_cast<const PtagImpl *>(p)->table == this; }
    PtagImpl *new_ptag();
    void delete_ptag(PtagImpl *t);
    VIP_RETURN register_region(void *addr, size_t len, const vipl::prov::MemAttr &a, VIP_MEM_HANDLE *out,
                               ShmRef shm = {});
    VIP_RETURN deregister_region(void *addr, VIP_MEM_HANDLE mh);
    VIP_RETURN query_region(void *addr, VIP_MEM_HANDLE mh, vipl::prov::MemAttr *out);
    // The caller has quiesced the firmware: it must not see a half-updated entry.
    VIP_RETURN set_region_attributes(void *addr, VIP_MEM_HANDLE mh, const vipl::prov::MemAttr &a);

private:
    std::unique_ptr<Region[]> regions_; // index 1..kMaxRegions
    std::unique_ptr<PublishedTable> pub_;
    std::function<void()> drain_;
    std::mutex mu_;
    uint32_t hint_ = 1; // where the next free entry is likely
    uint16_t gen_ = 1;  // handle generation: a stale handle never names a new region
    uint32_t next_ptag_ = 1;
};

} // namespace nicfw
