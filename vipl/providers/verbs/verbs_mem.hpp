// verbs_mem.hpp - registered regions and the handle -> region table.
//
// A VIPL memory handle is 32 bits, and a peer names an RDMA target region with
// it, so it is an rkey.  On a device with memory windows every region has one
// (type 1, bound over the whole region with the region's RDMA rights, none
// included) and its handle is the window's rkey: VipSetMemAttributes re-binds
// the window under the same rkey (verbs_window.cpp).  Without windows the
// handle is the region's rkey when RDMA read or write is enabled, and the lkey
// otherwise (rxe hands out rkey 0 for local-only regions).  Local data segments
// are translated to mr->lkey through this table: lkey == rkey is never assumed.
//
// The table is open-addressed with a fixed capacity so that lookups on the data
// path take no lock and never see a rehash; writers hold the NIC's control mutex.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "region.hpp"
#include "vipl.h"

namespace vipl::verbs {

struct VerbsPtag;
class VerbsNic;

// Binds memory windows of one protection tag (ibv_pd): a queue pair connected
// to itself, made on first use; the caller holds the NIC's control mutex.
struct WindowBinder {
    // A type-1 window over all of mr with these rights, or nullptr (no windows
    // on this device: the region then falls back to its own rkey).
    ibv_mw *open_window(VerbsNic &nic, ibv_pd *pd, ibv_mr *mr, bool rdma_write, bool rdma_read);
    // Re-binds mw over mr with new rights, keeping its rkey.
    bool bind(ibv_mw *mw, ibv_mr *mr, bool rdma_write, bool rdma_read);
    void close(); // before the tag's ibv_pd is freed

private:
    bool ready(VerbsNic &nic, ibv_pd *pd);
    ibv_qp *qp = nullptr;
    ibv_cq *cq = nullptr;
    bool failed = false;
};

struct Region {
    VIP_MEM_HANDLE handle = 0;
    ibv_mr *mr = nullptr;
    ibv_mw *mw = nullptr; // the window peers reach the region through (handle = its rkey)
    uintptr_t base = 0;   // (common::region_covers reads base and len)
    size_t len = 0;
    VerbsPtag *ptag = nullptr;
    bool rdma_write = false;
    bool rdma_read = false;
    bool moved = false; // its tag was changed (common::check_tag_change)

    bool covers(uintptr_t a, size_t n) const { return common::range_covers(base, len, a, n); }
};

class MemTable {
public:
    static constexpr size_t kCapacity = size_t(1) << 16; // slots
    static constexpr size_t kMaxRegions = kCapacity / 2; // keeps probes short

    MemTable() : slots_(new std::atomic<Region *>[kCapacity]) {
        for (size_t i = 0; i < kCapacity; i++) slots_[i].store(nullptr, std::memory_order_relaxed);
    }

    // Data path: no lock, no allocation.
    Region *find(VIP_MEM_HANDLE h) const {
        for (size_t i = hash(h), n = 0; n < kCapacity; i = (i + 1) & (kCapacity - 1), n++) {
            Region *r = slots_[i].load(std::memory_order_acquire);
            if (r == nullptr) return nullptr;
            if (r != tombstone() && r->handle == h) return r;
        }
        return nullptr;
    }
    // Control path (caller holds the NIC's control mutex).
    bool insert(Region *r) {
        if (count_ >= kMaxRegions) return false;
        for (size_t i = hash(r->handle);; i = (i + 1) & (kCapacity - 1)) {
            Region *cur = slots_[i].load(std::memory_order_relaxed);
            if (cur == nullptr || cur == tombstone()) {
                slots_[i].store(r, std::memory_order_release);
                count_++;
                return true;
            }
        }
    }
    void erase(Region *r) {
        for (size_t i = hash(r->handle), n = 0; n < kCapacity; i = (i + 1) & (kCapacity - 1), n++) {
            Region *cur = slots_[i].load(std::memory_order_relaxed);
            if (cur == nullptr) return;
            if (cur == r) {
                slots_[i].store(tombstone(), std::memory_order_release);
                count_--;
                return;
            }
        }
    }
    // Puts r in old's slot (same handle) in one store: a lookup finds one or
    // the other, never neither.
    void replace(Region *old, Region *r) {
        for (size_t i = hash(old->handle), n = 0; n < kCapacity; i = (i + 1) & (kCapacity - 1), n++) {
            Region *cur = slots_[i].load(std::memory_order_relaxed);
            if (cur == nullptr) return;
            if (cur == old) {
                slots_[i].store(r, std::memory_order_release);
                return;
            }
        }
    }
    size_t size() const { return count_; }
    template <class F>
    void for_each(F f) {
        for (size_t i = 0; i < kCapacity; i++) {
            Region *r = slots_[i].load(std::memory_order_relaxed);
            if (r && r != tombstone()) f(r);
        }
    }

private:
    static Region *tombstone() { return reinterpret_cast<Region *>(uintptr_t(1)); }
    static size_t hash(VIP_MEM_HANDLE h) { return (uint32_t(h) * 2654435761u) >> 16; }
    std::unique_ptr<std::atomic<Region *>[]> slots_;
    size_t count_ = 0;
};

} // namespace vipl::verbs
