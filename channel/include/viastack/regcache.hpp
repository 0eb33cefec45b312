// regcache.hpp - a registration cache for user buffers that RDMA descriptors
// name directly (AM long-message sources, Split-C bulk get/put buffers).
//
// An RDMA write from (or read into) a user's buffer needs registered memory.
// Registering is expensive (a NIC table update; on a real NIC a kernel call
// and page pinning), so registrations are kept and reused: a transfer from
// pages already covered costs a short table scan.  Entries are pinned while a
// descriptor using them is in flight and only unpinned entries are evicted
// (least recently used first).
//
// Like every registration cache, this one cannot see the application unmap
// and remap memory at the same address: the layer forgets ranges it frees
// itself (forget), and documents that ranges the program munmap()s must not
// be sent from again before the layer is shut down.  Memory the layer has
// registered itself (segments, heaps, rings) should never go through the
// cache: the layer checks those first and uses their own handles.
//
// Not thread-safe (one per layer instance, used from its progress thread).
// Only vipl.h: the layer below's public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "vipl.h"

namespace viastack::channel {

// Whether registering memory on this NIC pins the pages mapped at the time
// (a real NIC's registration), rather than naming an address range that
// cannot go stale (the nicfw emulator's table entry).  Layers size their
// defaults by it (credits, heap) and keep the C heap mapped where it is true.
// The provider answers (VipxRegistrationPins); a NIC that cannot answer is
// taken to pin, the choice that never sends stale bytes.
bool registration_pins(VIP_NIC_HANDLE nic);

class RegCache {
public:
    static constexpr int kEntries = 64;
    static constexpr int kNone = -1;

    // The NIC and protection tag registrations are made with.  By default
    // entries are registered without RDMA enabled, over whole pages: they are
    // the local side of a layer's RDMA writes (gather list) and reads
    // (scatter list), which VI checks as it checks a send's or receive's
    // buffers.  rdma_write = true makes a cache of RDMA-write targets (the
    // receive buffers a layer names to its peer): each entry is exactly the
    // bytes asked for, never rounded to pages, so the peer can write no byte
    // next to a buffer it was given.
    void init(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE ptag, bool rdma_write = false) {
        nic_ = nic;
        ptag_ = ptag;
        rdma_write_ = rdma_write;
    }

    // Finds or makes a registration covering [addr, addr+len) and pins it
    // `pins` times (a caller that will post that many descriptors reading
    // it, each released on its completion); returns the entry (release each
    // pin with release()), or kNone on failure (last_error() says why).
    // wait() is called, repeatedly, while every entry is pinned: it should
    // reap completed descriptors (whose release() frees an entry).
    template <class Wait>
    int acquire(const void *addr, size_t len, VIP_MEM_HANDLE *mh, Wait &&wait, int pins = 1) {
        for (;;) {
            int r = try_acquire(addr, len, mh);
            if (r >= 0 && pins > 1) entries_[r].pins += pins - 1;
            if (r != kAllPinned) return r;
            wait();
        }
    }
    const char *last_error() const { return last_error_; }
    void pin(int entry) {
        if (entry >= 0) entries_[entry].pins++;
    }
    void release(int entry, int pins = 1) {
        if (entry >= 0) entries_[entry].pins = entries_[entry].pins > pins ? entries_[entry].pins - pins : 0;
    }
    // Drops entries overlapping [addr, addr+len): memory about to be freed.
    void forget(const void *addr, size_t len);
    // Deregisters everything (the layer shuts down; the NIC is still open).
    void clear();

private:
    static constexpr int kAllPinned = -3;
    int try_acquire(const void *addr, size_t len, VIP_MEM_HANDLE *mh);

    struct Entry {
        uintptr_t base = 0;
        size_t len = 0; // 0: free
        VIP_MEM_HANDLE mh = 0;
        int pins = 0;
        uint64_t last_use = 0;
    };
    VIP_NIC_HANDLE nic_ = nullptr;
    VIP_PROTECTION_HANDLE ptag_ = nullptr;
    bool rdma_write_ = false;
    Entry entries_[kEntries];
    uint64_t use_clock_ = 0;
    char last_error_[200] = "registration cache error";
};

// Memory a layer hands its program for message buffers (FM_alloc_mem,
// bip_alloc_mem; AM has AMVIA_AllocMem): VipxAllocMem memory of the layer's
// NIC, which a provider may move more cheaply (nicfw: one memcpy into or out
// of a shared-memory segment the peer's NIC maps, instead of a cross-memory
// attach system call).  A block's registrations are dropped from the given
// caches before it is freed: a registration must not outlive its memory.
class NicMemory {
public:
    void *alloc(VIP_NIC_HANDLE nic, size_t bytes); // nullptr for 0 bytes or no memory
    // False if p is not a block of ours.
    bool free(VIP_NIC_HANDLE nic, void *p, RegCache *c1, RegCache *c2);
    // Every block (the layer shuts down; the NIC is still open).
    void free_all(VIP_NIC_HANDLE nic, RegCache *c1, RegCache *c2);

private:
    std::vector<std::pair<void *, size_t>> blocks_;
};

} // namespace viastack::channel
