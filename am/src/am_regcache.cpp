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
// One cache for the process, used by every bundle's long sends and send
// reaps, from whichever threads run them.  Recursive: the wait for a free
// entry polls the bundle, whose reaps release entries.  Only long messages
// from memory outside the segments (and their reaps) take it.
std::recursive_mutex cache_lock;
using Hold = std::lock_guard<std::recursive_mutex>;
} // namespace

int regcache_acquire(eb_t eb, const void *addr, size_t len, VIP_MEM_HANDLE *mh, int pins) {
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
    Hold hold(cache_lock);
    cache.init(g.nic, g.ptag);
    // Every entry pinned: wait for RDMA writes to complete.
    return cache.acquire(
        addr, len, mh,
        [eb] {
            reap_sends(eb, 64);
            poll_bundle(eb, ts.handler_depth == 0);
        },
        pins);
}

const char *regcache_last_error() {
    Hold hold(cache_lock);
    return cache.last_error();
}
void regcache_release(int entry, int pins) {
    Hold hold(cache_lock);
    cache.release(entry, pins);
}
void regcache_forget(const void *addr, size_t len) {
    Hold hold(cache_lock);
    cache.forget(addr, len);
}
void regcache_clear() {
    Hold hold(cache_lock);
    cache.clear();
}

} // namespace amvia
