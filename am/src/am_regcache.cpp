// am_regcache.cpp - AM's use of the shared registration cache
// (channel/include/viastack/regcache.hpp) for long-message sources.
//
// A long message is an RDMA write straight from the user's buffer.  Memory AM
// registered itself (an endpoint's segment, a peer's bounce ring here: a
// medium reply sent from the request's buffer) is used with its own handle and
// never enters the cache, whose entry would outlive it.  Over a NIC that pins
// pages (chan::registration_pins) AM_Init keeps the heap mapped (am_core.cpp), memory the
// library frees is forgotten first (regcache_forget); ranges the program
// munmap()s itself must not be sent from again unless AM_Terminate ran in
// between.
#include "am_internal.hpp"
#include "viastack/regcache.hpp"

namespace amvia {

namespace {
viastack::channel::RegCache cache;
}  // namespace

int regcache_acquire(eb_t eb, const void *addr, size_t len, VIP_MEM_HANDLE *mh) {
    const uintptr_t a = uintptr_t(addr);
    const size_t n = len ? len : 1;
    for (ep_t ep : eb->eps)
        if (ep->seg_registered && a >= uintptr_t(ep->seg) && a + n <= uintptr_t(ep->seg) + ep->seglen) {
            *mh = ep->seg_mh;
            return -2;
        }
    for (ep_t ep : eb->eps)
        for (Link *l : ep->links)
            if (l && l->bounce && a >= uintptr_t(l->bounce) && a + n <= uintptr_t(l->bounce) + l->bounce_len) {
                *mh = l->bounce_mh;
                return -2;
            }
    cache.init(g.nic, g.ptag);
    // Every entry pinned: wait for RDMA writes to complete.
    return cache.acquire(addr, len, mh, [eb] {
        reap_sends(eb, 64);
        poll_bundle(eb, g.handler_depth == 0);
    });
}

const char *regcache_last_error() { return cache.last_error(); }
void regcache_pin(int entry) { cache.pin(entry); }
void regcache_release(int entry) { cache.release(entry); }
void regcache_forget(const void *addr, size_t len) { cache.forget(addr, len); }
void regcache_clear() { cache.clear(); }

}  // namespace amvia
