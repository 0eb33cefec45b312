// regcache.cpp - the registration cache (regcache.hpp): lookups and misses.
// Not on a message's path: a hit is a scan of 64 entries, a miss registers.
#include "viastack/regcache.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace viastack::channel {

bool registration_pins(VIP_NIC_HANDLE nic) {
    VIP_BOOLEAN pins = VIP_TRUE;
    return VipxRegistrationPins(nic, &pins) != VIP_SUCCESS || pins;
}

namespace {
uintptr_t page_size() {
    static const uintptr_t ps = uintptr_t(sysconf(_SC_PAGESIZE));
    return ps;
}
} // namespace

int RegCache::try_acquire(const void *addr, size_t len, VIP_MEM_HANDLE *mh) {
    const uintptr_t a = uintptr_t(addr);
    if (len == 0) len = 1;
    for (int i = 0; i < kEntries; i++) {
        Entry &e = entries_[i];
        if (e.len && a >= e.base && a + len <= e.base + e.len) {
            e.pins++;
            e.last_use = ++use_clock_;
            *mh = e.mh;
            return i;
        }
    }
    // Miss: register the whole pages (an RDMA-write target: exactly the
    // bytes), in a free or the least recently used unpinned entry.
    int victim = -1;
    for (int i = 0; i < kEntries; i++) {
        if (!entries_[i].len) {
            victim = i;
            break;
        }
        if (!entries_[i].pins && (victim < 0 || entries_[i].last_use < entries_[victim].last_use)) victim = i;
    }
    if (victim < 0) return kAllPinned;
    Entry &e = entries_[victim];
    if (e.len) VipDeregisterMem(nic_, reinterpret_cast<void *>(e.base), e.mh);
    e = Entry{};
    const uintptr_t base = rdma_write_ ? a : a & ~(page_size() - 1);
    const uintptr_t end = rdma_write_ ? a + len : (a + len + page_size() - 1) & ~(page_size() - 1);
    VIP_MEM_ATTRIBUTES ma{ptag_, rdma_write_ ? VIP_TRUE : VIP_FALSE, VIP_FALSE};
    VIP_RETURN rc = VipRegisterMem(nic_, reinterpret_cast<void *>(base), end - base, &ma, &e.mh);
    if (rc != VIP_SUCCESS) {
        // The caller reports it, naming its own call.
        std::snprintf(last_error_, sizeof last_error_, "registering the buffer [%#lx, %#lx) failed: %s",
                      (unsigned long)base, (unsigned long)end, VipxReturnString(rc));
        e = Entry{};
        return kNone;
    }
    e.base = base;
    e.len = end - base;
    e.pins = 1;
    e.last_use = ++use_clock_;
    *mh = e.mh;
    return victim;
}

void RegCache::forget(const void *addr, size_t len) {
    const uintptr_t a = uintptr_t(addr), end = a + len;
    for (Entry &e : entries_)
        if (e.len && e.base < end && a < e.base + e.len) {
            // Registration pins the pages that were mapped then (verbs); once
            // the range is freed and mapped again, the entry would move stale
            // bytes.  Pinned entries belong to descriptors on VIs that are gone.
            if (nic_) VipDeregisterMem(nic_, reinterpret_cast<void *>(e.base), e.mh);
            e = Entry{};
        }
}

void *NicMemory::alloc(VIP_NIC_HANDLE nic, size_t bytes) {
    VIP_PVOID p = nullptr;
    if (!nic || bytes == 0 || VipxAllocMem(nic, VIP_ULONG(bytes), &p) != VIP_SUCCESS) return nullptr;
    blocks_.emplace_back(p, bytes);
    return p;
}

bool NicMemory::free(VIP_NIC_HANDLE nic, void *p, RegCache *c1, RegCache *c2) {
    for (size_t i = 0; i < blocks_.size(); i++) {
        if (blocks_[i].first != p) continue;
        c1->forget(p, blocks_[i].second);
        c2->forget(p, blocks_[i].second);
        VipxFreeMem(nic, p);
        blocks_[i] = blocks_.back();
        blocks_.pop_back();
        return true;
    }
    return false;
}

void NicMemory::free_all(VIP_NIC_HANDLE nic, RegCache *c1, RegCache *c2) {
    while (!blocks_.empty()) free(nic, blocks_.back().first, c1, c2);
}

void RegCache::clear() {
    for (Entry &e : entries_) {
        if (e.len && nic_) VipDeregisterMem(nic_, reinterpret_cast<void *>(e.base), e.mh);
        e = Entry{};
    }
}

} // namespace viastack::channel
