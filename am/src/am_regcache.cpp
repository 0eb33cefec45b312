// am_regcache.cpp - registration cache for long-message sources.
//
// A long message is an RDMA write straight from the user's buffer, which must
// be registered memory.  Registering is expensive (a NIC table update; on a
// real NIC a kernel call and page pinning), so registrations are kept and
// reused: a send from pages already covered costs a short table scan.  Entries
// are pinned while an RDMA descriptor using them is in flight and only
// unpinned entries are evicted (least recently used first).
//
// Like every registration cache, this one cannot see the application unmap
// and remap memory at the same address.  Over a NIC that pins pages (verbs)
// AM_Init keeps the heap mapped (am_core.cpp), memory the library frees is
// forgotten first (regcache_forget), and bounce rings never go through the
// cache; ranges the program munmap()s itself must not be sent from again
// unless AM_Terminate ran in between.
#include <unistd.h>

#include <cstdio>

#include "am_internal.hpp"

namespace amvia {

namespace {
constexpr int kEntries = 64;

struct Entry {
    uintptr_t base = 0;
    size_t len = 0; // 0: free
    VIP_MEM_HANDLE mh = 0;
    int pins = 0;
    uint64_t last_use = 0;
};

Entry entries[kEntries];
uint64_t use_clock = 0;
char last_error[200] = "registration cache error";

uintptr_t page_size() {
    static uintptr_t ps = uintptr_t(sysconf(_SC_PAGESIZE));
    return ps;
}
} // namespace

int regcache_acquire(eb_t eb, const void *addr, size_t len, VIP_MEM_HANDLE *mh) {
    uintptr_t a = uintptr_t(addr);
    if (len == 0) len = 1;
    // Memory inside one of this bundle's segments is registered already.
    for (ep_t ep : eb->eps)
        if (ep->seg_registered && a >= uintptr_t(ep->seg) && a + len <= uintptr_t(ep->seg) + ep->seglen) {
            *mh = ep->seg_mh;
            return -2;
        }
    // So is a peer's bounce ring here (a medium reply sent from the request's
    // buffer): never through the cache, whose entry would outlive the ring.
    for (ep_t ep : eb->eps)
        for (Link *l : ep->links)
            if (l && l->bounce && a >= uintptr_t(l->bounce) && a + len <= uintptr_t(l->bounce) + l->bounce_len) {
                *mh = l->bounce_mh;
                return -2;
            }
    for (int i = 0; i < kEntries; i++) {
        Entry &e = entries[i];
        if (e.len && a >= e.base && a + len <= e.base + e.len) {
            e.pins++;
            e.last_use = ++use_clock;
            *mh = e.mh;
            return i;
        }
    }
    // Miss: register the whole pages, in a free or the least recently used
    // unpinned entry; if every entry is pinned, wait for sends to complete.
    for (;;) {
        int victim = -1;
        for (int i = 0; i < kEntries; i++) {
            if (!entries[i].len) {
                victim = i;
                break;
            }
            if (!entries[i].pins && (victim < 0 || entries[i].last_use < entries[victim].last_use))
                victim = i;
        }
        if (victim >= 0) {
            Entry &e = entries[victim];
            if (e.len) VipDeregisterMem(g.nic, reinterpret_cast<void *>(e.base), e.mh);
            e = Entry{};
            uintptr_t base = a & ~(page_size() - 1);
            uintptr_t end = (a + len + page_size() - 1) & ~(page_size() - 1);
            VIP_MEM_ATTRIBUTES ma{g.ptag, VIP_FALSE, VIP_FALSE};
            VIP_RETURN rc = VipRegisterMem(g.nic, reinterpret_cast<void *>(base), end - base, &ma, &e.mh);
            if (rc != VIP_SUCCESS) {
                // The caller reports it, naming its own call.
                std::snprintf(last_error, sizeof last_error,
                              "registering the source buffer's pages [%#lx, %#lx) failed: %s",
                              (unsigned long)base, (unsigned long)end, VipxReturnString(rc));
                return -1;
            }
            e.base = base;
            e.len = end - base;
            e.pins = 1;
            e.last_use = ++use_clock;
            *mh = e.mh;
            return victim;
        }
        reap_sends(eb, 64);
        poll_bundle(eb, g.handler_depth == 0);
    }
}

const char *regcache_last_error() { return last_error; }

void regcache_pin(int entry) {
    if (entry >= 0) entries[entry].pins++;
}

void regcache_release(int entry) {
    if (entry >= 0 && entries[entry].pins > 0) entries[entry].pins--;
}

void regcache_forget(const void *addr, size_t len) {
    uintptr_t a = uintptr_t(addr), end = a + len;
    for (Entry &e : entries)
        if (e.len && e.base < end && a < e.base + e.len) {
            // Registration pins the pages that were mapped then (verbs); once
            // the range is freed and mapped again, the entry would send stale
            // bytes.  Pinned entries belong to sends on VIs that are gone.
            if (g.nic) VipDeregisterMem(g.nic, reinterpret_cast<void *>(e.base), e.mh);
            e = Entry{};
        }
}

void regcache_clear() {
    for (Entry &e : entries) {
        if (e.len && g.nic) VipDeregisterMem(g.nic, reinterpret_cast<void *>(e.base), e.mh);
        e = Entry{};
    }
}

} // namespace amvia
