// am_core.cpp - AM_Init/AM_Terminate, bundles, endpoints, segments, tags,
// handler tables, event masks, and the error-path diagnostics.
#include <malloc.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <unordered_map>

#include "am_internal.hpp"
#include "viastack/regcache.hpp"
#include "viastack_env.hpp"
#include "viastack_log.hpp"

#ifndef AMVIA_DEFAULT_LAYOUT
#define AMVIA_DEFAULT_LAYOUT 3
#endif

int AMVIA_VerboseErrors = 0;

namespace amvia {

Globals g;
thread_local constinit ThreadState ts __attribute__((tls_model("initial-exec")));

// "viastack AM: ..." through the am logger (vipl/log: $VIASTACK_LOG, the rank
// prefix, one write per line so ranks' lines do not interleave).
void report(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    viastack::log::vlogf(viastack::log::Layer::am, viastack::log::Level::error, fmt, ap);
    va_end(ap);
}

bool retire_segments(ep_t ep) {
    if (ep->retired.empty()) return true;
    uint32_t known = ep->seg_gen; // the oldest generation a connected peer may still aim at
    for (Link *l : ep->links)
        if (l->state == LinkState::Up && l->seg_acked_gen < known) known = l->seg_acked_gen;
    size_t keep = 0;
    for (const RetiredSeg &r : ep->retired) {
        if (r.gen < known) VipDeregisterMem(g.nic, r.base, r.mh);
        else ep->retired[keep++] = r;
    }
    ep->retired.resize(keep);
    return keep == 0;
}

SegInfo current_seg(ep_t ep) {
    return SegInfo{uint64_t(uintptr_t(ep->seg)), ep->seg_registered ? uint64_t(ep->seglen) : 0, ep->seg_mh,
                   ep->seg_gen};
}

int fail(int rc, const char *fn, const char *fmt, ...) {
    if (AMVIA_VerboseErrors && viastack::log::enabled(viastack::log::Layer::am, viastack::log::Level::error)) {
        // One line through the am logger ("viastack AM: ..."; vipl/log).
        char why[768];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        viastack::log::error(viastack::log::Layer::am, "{} returns {}: {}", fn, AMVIA_ErrorName(rc), why);
    }
    return rc;
}

// VIASTACK_AM_* through the one reader of configuration variables (vipl/log).
static long env_long(const char *name, long dflt, long lo, long hi) {
    return viastack::env::integer(viastack::log::Layer::am, name, dflt, lo, hi);
}

static int env_layout() {
    const int dflt = AMVIA_DEFAULT_LAYOUT == 1 ? 0 : 2;
    return viastack::env::choice(viastack::log::Layer::am, "VIASTACK_AM_LAYOUT", {"v1", "1", "v3", "3"}, dflt) < 2 ? 1
                                                                                                                   : 3;
}

} // namespace amvia

using namespace amvia;

// Endpoint and bundle objects are never given back to the allocator (see
// Globals::dead_eps): a freed one becomes a dead shell, reused by the next
// allocation of its kind.
template <class T>
static T *new_shell(std::vector<T *> &dead) {
    if (dead.empty()) return new T();
    T *p = dead.back();
    dead.pop_back();
    p->~T();
    return new (p) T();
}
template <class T>
static void retire_shell(T *p, std::vector<T *> &dead) {
    p->~T();
    new (p) T();
    p->magic = 0;
    dead.push_back(p);
}

#define CHECK_INIT(fn)                                                                                                 \
    if (AMVIA_UNLIKELY(g.init_count == 0)) return fail(AM_ERR_NOT_INIT, fn, "call AM_Init first")

extern "C" {

const char *AMVIA_ErrorName(int rc) {
    switch (rc) {
    case AM_OK: return "AM_OK";
    case AM_ERR_NOT_INIT: return "AM_ERR_NOT_INIT";
    case AM_ERR_BAD_ARG: return "AM_ERR_BAD_ARG";
    case AM_ERR_RESOURCE: return "AM_ERR_RESOURCE";
    case AM_ERR_NOT_SENT: return "AM_ERR_NOT_SENT";
    case AM_ERR_IN_USE: return "AM_ERR_IN_USE";
    default: return "AM_ERR_?";
    }
}

const char *AMVIA_StatusName(int status) {
    static const char *const names[] = {"0",           "EBADARGS",     "EBADENTRY",     "EBADTAG",
                                        "EBADHANDLER", "EBADSEGOFF",   "EBADLENGTH",    "EBADENDPOINT",
                                        "ECONGESTION", "EUNREACHABLE", "EREPLYREJECTED"};
    return (status >= 0 && status <= 10) ? names[status] : "E?";
}

int AMVIA_SetLayout(int version) {
    if (version != 1 && version != 3)
        return fail(AM_ERR_BAD_ARG, "AMVIA_SetLayout", "version %d: use 1 (AMVIAv1) or 3 (AMVIAv3)", version);
    g.layout = version;
    return AM_OK;
}
int AMVIA_GetLayout(void) { return g.layout; }
void *AMVIA_NicHandle(void) { return g.nic; }

// AMVIA_AllocMem's live allocations (address -> length): AMVIA_FreeMem checks
// no segment still lies in one and drops its cached registrations.
static std::unordered_map<void *, size_t> &am_allocs() {
    static auto *m = new std::unordered_map<void *, size_t>;
    return *m;
}
// AM_Terminate: what was not freed stays mapped until the process exits (the
// NIC is about to close; VipxFreeMem needs it open).
static void forget_allocations() { am_allocs().clear(); }
// Threads may allocate and free at once.
static std::mutex allocs_lock;

void *AMVIA_AllocMem(size_t nbytes) {
    if (!g.init_count || !g.nic) {
        fail(AM_ERR_NOT_INIT, "AMVIA_AllocMem", "call AM_Init first");
        return nullptr;
    }
    if (nbytes == 0 || nbytes > size_t(VIP_ULONG(-1))) {
        fail(AM_ERR_BAD_ARG, "AMVIA_AllocMem", "nbytes %zu: want 1 or more", nbytes);
        return nullptr;
    }
    void *p = nullptr;
    if (VIP_RETURN rc = VipxAllocMem(g.nic, VIP_ULONG(nbytes), &p); rc != VIP_SUCCESS) {
        fail(AM_ERR_RESOURCE, "AMVIA_AllocMem", "%zu bytes: VipxAllocMem: %s", nbytes, VipxReturnString(rc));
        return nullptr;
    }
    std::lock_guard<std::mutex> hold(allocs_lock);
    am_allocs()[p] = nbytes;
    return p;
}

int AMVIA_FreeMem(void *addr) {
    if (!g.init_count || !g.nic) return fail(AM_ERR_NOT_INIT, "AMVIA_FreeMem", "call AM_Init first");
    std::lock_guard<std::mutex> hold(allocs_lock);
    auto it = am_allocs().find(addr);
    if (!addr || it == am_allocs().end())
        return fail(AM_ERR_BAD_ARG, "AMVIA_FreeMem", "%p is not memory from AMVIA_AllocMem", addr);
    const uintptr_t lo = uintptr_t(addr), hi = lo + it->second;
    auto overlaps = [&](const void *b, uintptr_t n) { return uintptr_t(b) < hi && lo < uintptr_t(b) + n; };
    std::unique_lock<std::mutex> bundles(g.control);
    for (eb_t eb : g.bundles)
        for (ep_t ep : eb->eps) {
            bool in_use = ep->seg && overlaps(ep->seg, ep->seglen);
            for (const RetiredSeg &r : ep->retired) in_use |= overlaps(r.base, r.len);
            if (in_use)
                return fail(AM_ERR_RESOURCE, "AMVIA_FreeMem",
                            "%p holds an endpoint's segment: AM_SetSeg it elsewhere first", addr);
        }
    bundles.unlock();
    // Long-message sources in it are cached registrations: drop them first.
    regcache_forget(addr, it->second);
    if (VipxFreeMem(g.nic, addr) != VIP_SUCCESS)
        return fail(AM_ERR_BAD_ARG, "AMVIA_FreeMem", "%p is not memory from AMVIA_AllocMem", addr);
    am_allocs().erase(it);
    return AM_OK;
}

int AM_MaxSegLength(uintptr_t *nbytes) {
    if (!nbytes) return fail(AM_ERR_BAD_ARG, "AM_MaxSegLength", "nbytes is NULL");
    // One registration; the NIC's limit when AM is initialized.
    *nbytes = g.init_count && g.attr.MaxRegisterBytes ? uintptr_t(g.attr.MaxRegisterBytes) : uintptr_t(1) << 30;
    return AM_OK;
}

int AM_Init(void) {
    if (g.init_count++ > 0) return AM_OK;
    if (viastack::env::flag("VIASTACK_AM_VERBOSE")) AMVIA_VerboseErrors = 1;
    if (!vipl_wait::mode_from_env(&g.wait_mode)) {
        g.init_count = 0;
        report("AM_Init returns AM_ERR_BAD_ARG: VIASTACK_WAIT=%s is not a wait policy; set it to %s",
               std::getenv("VIASTACK_WAIT"), vipl_wait::kAllowed);
        return AM_ERR_BAD_ARG;
    }
    const char *dev = viastack::env::raw("VIASTACK_AM_NIC");
    VIP_RETURN rc = VipOpenNic(dev, &g.nic);
    if (rc != VIP_SUCCESS) {
        g.init_count = 0;
        report("AM_Init: VipOpenNic(%s) failed: %s (check $VIPL_PROVIDER / $VIASTACK_AM_NIC)", dev ? dev : "default",
               VipxReturnString(rc));
        return AM_ERR_RESOURCE;
    }
    rc = VipQueryNic(g.nic, &g.attr);
    if (rc == VIP_SUCCESS) rc = VipCreatePtag(g.nic, &g.ptag);
    if (rc != VIP_SUCCESS) {
        report("AM_Init: NIC set-up failed: %s", VipxReturnString(rc));
        VipCloseNic(g.nic);
        g.nic = nullptr;
        g.init_count = 0;
        return AM_ERR_RESOURCE;
    }
    if (!(g.attr.ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY)) {
        report("AM_Init: NIC %s lacks Reliable Delivery, which AMVIA needs", g.attr.Name);
        VipDestroyPtag(g.nic, g.ptag);
        VipCloseNic(g.nic);
        g.nic = nullptr;
        g.init_count = 0;
        return AM_ERR_RESOURCE;
    }
    g.layout = env_layout();
    g.connect_timeout_ms = uint64_t(env_long("VIASTACK_AM_CONNECT_TIMEOUT_MS", 60000, 1, 1L << 30));
    // Over a NIC whose registrations pin the pages mapped at registration time,
    // a cached registration of heap memory that free() gave back to the
    // kernel and malloc() mapped again would send stale bytes.  Keep the heap
    // mapped, as MPI libraries' leave-pinned modes do; a NIC that registers
    // address ranges cannot go stale.  VIASTACK_AM_KEEP_HEAP=0|1 overrides.
    const bool pins = chan::registration_pins(g.nic);
    // k: 32 where registration does not pin (a request stream was credit-bound
    // at 8, docs/am.md); 8 where it does, since each credit is two 4.2 KB
    // slots per MAP locked in memory.  Split-C chooses the same way.
    g.default_credits = int(env_long("VIASTACK_AM_CREDITS", pins ? 8 : 32, 1, AMVIA_MAX_CREDITS));
    if (env_long("VIASTACK_AM_KEEP_HEAP", pins ? 1 : 0, 0, 1)) {
        mallopt(M_TRIM_THRESHOLD, -1);
        mallopt(M_MMAP_MAX, 0);
    }
    g.max_chunk = AMVIA_MAX_LONG;
    if (g.attr.MaxTransferSize && g.attr.MaxTransferSize < g.max_chunk)
        g.max_chunk = uint32_t(g.attr.MaxTransferSize) & ~63u;
    if (g.attr.MaxTransferSize && g.attr.MaxTransferSize < kMediumBuf) {
        report("AM_Init: NIC MaxTransferSize %lu is below the %u-byte AM message",
               (unsigned long)g.attr.MaxTransferSize, kMediumBuf);
        AM_Terminate();
        return AM_ERR_RESOURCE;
    }
    return AM_OK;
}

int AM_Terminate(void) {
    CHECK_INIT("AM_Terminate");
    if (ts.handler_depth) return fail(AM_ERR_RESOURCE, "AM_Terminate", "called from a handler");
    // Tell every connected peer first, so our disconnect does not look like a crash to it.
    for (eb_t eb : g.bundles) say_goodbye(eb);
    while (!g.bundles.empty()) AM_FreeBundle(g.bundles.back());
    spmd_forget();
    regcache_clear();
    forget_allocations();
    if (g.ptag) VipDestroyPtag(g.nic, g.ptag);
    if (g.nic) {
        if (VIP_RETURN rc = VipCloseNic(g.nic); rc != VIP_SUCCESS)
            report("AM_Terminate: VipCloseNic failed: %s (a VIPL object of the program on AM's NIC is still open?)",
                   VipxReturnString(rc));
    }
    g.ptag = nullptr;
    g.nic = nullptr;
    g.init_count = 0;
    return AM_OK;
}

// ---- bundles -----------------------------------------------------------------------
int AM_AllocateBundle(int type, eb_t *endb) {
    CHECK_INIT("AM_AllocateBundle");
    if (!endb) return fail(AM_ERR_BAD_ARG, "AM_AllocateBundle", "endb is NULL");
    if (type != AM_SEQ && type != AM_PAR)
        return fail(AM_ERR_BAD_ARG, "AM_AllocateBundle", "type %d (AM_SEQ or AM_PAR)", type);
    // Several threads on one bundle means several threads on its VIs and CQs.
    if (type == AM_PAR && g.attr.ThreadSafe != VIP_TRUE)
        return fail(AM_ERR_RESOURCE, "AM_AllocateBundle",
                    "AM_PAR needs a thread-safe NIC, and this NIC reports ThreadSafe = VIP_FALSE "
                    "(VipQueryNic); use AM_SEQ bundles, one per thread");
    amvia_eb *eb;
    {
        std::lock_guard<std::mutex> hold(g.control);
        eb = new_shell(g.dead_ebs);
    }
    eb->magic = kEbMagic;
    eb->par = type == AM_PAR;
    eb->layout = g.layout;
    eb->cq_entries = 256;
    if (g.attr.MaxCQEntries && eb->cq_entries > g.attr.MaxCQEntries) eb->cq_entries = g.attr.MaxCQEntries;
    VIP_RETURN rc = VipCreateCQ(g.nic, eb->cq_entries, &eb->scq);
    if (rc == VIP_SUCCESS) {
        rc = VipCreateCQ(g.nic, eb->cq_entries, &eb->rcq);
        if (rc != VIP_SUCCESS) VipDestroyCQ(eb->scq);
    }
    if (rc != VIP_SUCCESS) {
        std::lock_guard<std::mutex> hold(g.control);
        retire_shell(eb, g.dead_ebs);
        return fail(AM_ERR_RESOURCE, "AM_AllocateBundle", "VipCreateCQ: %s", VipxReturnString(rc));
    }
    eb->event_mask = AM_NOEVENTS;
    vipl_wait::init(eb->wait, g.wait_mode);
    std::lock_guard<std::mutex> hold(g.control);
    g.bundles.push_back(eb);
    *endb = eb;
    return AM_OK;
}

int AM_FreeBundle(eb_t eb) {
    CHECK_INIT("AM_FreeBundle");
    if (!valid_eb(eb)) return fail(AM_ERR_BAD_ARG, "AM_FreeBundle", "not a bundle");
    if (ts.handler_depth) return fail(AM_ERR_RESOURCE, "AM_FreeBundle", "called from a handler");
    {
        BundleGuard hold(eb);
        while (!eb->eps.empty()) AM_FreeEndpoint(eb->eps.back());
    }
    VipDestroyCQ(eb->scq);
    VipDestroyCQ(eb->rcq);
    std::lock_guard<std::mutex> hold(g.control);
    for (size_t i = 0; i < g.bundles.size(); i++)
        if (g.bundles[i] == eb) {
            g.bundles.erase(g.bundles.begin() + long(i));
            break;
        }
    retire_shell(eb, g.dead_ebs);
    return AM_OK;
}

// ---- endpoints ---------------------------------------------------------------------
static void default_error_handler(int status, op_t opcode, void *token) {
    auto *t = static_cast<Token *>(token);
    report("message refused: status %s (%d), opcode %d, handler %u; set handler 0 with "
           "AM_SetHandler to handle refused messages",
           AMVIA_StatusName(status), status, opcode, t && t->msg ? t->msg->handler : 0);
}

int AM_AllocateEndpoint(eb_t eb, ep_t *endp, en_t *name) {
    CHECK_INIT("AM_AllocateEndpoint");
    if (!valid_eb(eb) || !endp || !name)
        return fail(AM_ERR_BAD_ARG, "AM_AllocateEndpoint", "bad bundle or NULL output");
    amvia_ep *ep;
    {
        std::lock_guard<std::mutex> hold(g.control);
        ep = new_shell(g.dead_eps);
        ep->name.id = g.next_ep_id++;
    }
    ep->magic = kEpMagic;
    ep->eb = eb;
    ep->tag = AM_NONE;
    uint16_t alen = g.attr.NicAddressLen;
    if (alen > AMVIA_MAX_NICADDR) {
        std::lock_guard<std::mutex> hold(g.control);
        retire_shell(ep, g.dead_eps);
        return fail(AM_ERR_RESOURCE, "AM_AllocateEndpoint", "NIC address of %u bytes is too long", alen);
    }
    ep->name.addr_len = alen;
    if (alen && g.attr.LocalNicAddress) std::memcpy(ep->name.addr, g.attr.LocalNicAddress, alen);
    ep->credits_k = g.default_credits;
    for (auto &h : ep->handlers) h = nullptr;
    ep->handlers[0] = (amx_handler_fn_t)default_error_handler;
    ep->xlate.resize(AMVIA_MAX_NUMTRANSLATIONS);
    BundleGuard hold(eb);
    eb->eps.push_back(ep);
    *endp = ep;
    *name = ep->name;
    return AM_OK;
}

int AM_FreeEndpoint(ep_t ep) {
    CHECK_INIT("AM_FreeEndpoint");
    if (!valid_ep(ep)) return fail(AM_ERR_BAD_ARG, "AM_FreeEndpoint", "not an endpoint");
    if (ts.handler_depth) return fail(AM_ERR_RESOURCE, "AM_FreeEndpoint", "called from a handler");
    eb_t eb = ep->eb;
    BundleGuard hold(eb);
    say_goodbye(ep);                           // the peers see a clean exit, and get what was sent before
    for (Link *l : ep->links) link_destroy(l); // also drops their queued requests
    ep->links.clear();
    if (ep->seg_registered) VipDeregisterMem(g.nic, ep->seg, ep->seg_mh);
    for (const RetiredSeg &r : ep->retired) VipDeregisterMem(g.nic, r.base, r.mh);
    ep->retired.clear();
    for (size_t i = 0; i < eb->eps.size(); i++)
        if (eb->eps[i] == ep) {
            eb->eps.erase(eb->eps.begin() + long(i));
            break;
        }
    std::lock_guard<std::mutex> shells(g.control);
    retire_shell(ep, g.dead_eps);
    return AM_OK;
}

int AM_MoveEndpoint(ep_t ep, eb_t from, eb_t to) {
    CHECK_INIT("AM_MoveEndpoint");
    if (!valid_ep(ep) || !valid_eb(from) || !valid_eb(to) || ep->eb != from)
        return fail(AM_ERR_BAD_ARG, "AM_MoveEndpoint", "endpoint is not in from_bundle");
    if (from == to) return AM_OK;
    BundleGuard hold_from(from);
    BundleGuard hold_to(to); // two threads moving endpoints opposite ways at once: the program's race
    if (!ep->links.empty())
        return fail(AM_ERR_RESOURCE, "AM_MoveEndpoint",
                    "the endpoint has MAP connections whose VIs are bound to the old bundle's "
                    "completion queues; move it before AM_Map");
    for (size_t i = 0; i < from->eps.size(); i++)
        if (from->eps[i] == ep) {
            from->eps.erase(from->eps.begin() + long(i));
            break;
        }
    to->eps.push_back(ep);
    ep->eb = to;
    return AM_OK;
}

// ---- segment and tag -----------------------------------------------------------------
int AM_SetSeg(ep_t ep, void *addr, uintptr_t nbytes) {
    CHECK_INIT("AM_SetSeg");
    if (!valid_ep(ep)) return fail(AM_ERR_BAD_ARG, "AM_SetSeg", "not an endpoint");
    if (ts.handler_depth) return fail(AM_ERR_RESOURCE, "AM_SetSeg", "called from a handler");
    if ((!addr && nbytes) || (addr && !nbytes))
        return fail(AM_ERR_BAD_ARG, "AM_SetSeg", "addr %p with %lu bytes", addr, (unsigned long)nbytes);
    uintptr_t maxlen;
    AM_MaxSegLength(&maxlen);
    if (nbytes > maxlen)
        return fail(AM_ERR_BAD_ARG, "AM_SetSeg", "%lu bytes exceed AM_MaxSegLength %lu", (unsigned long)nbytes,
                    (unsigned long)maxlen);
    BundleGuard hold(ep->eb);
    VIP_MEM_HANDLE mh = 0;
    if (nbytes) {
        VIP_MEM_ATTRIBUTES ma{g.ptag, VIP_TRUE, VIP_FALSE};
        VIP_RETURN rc = VipRegisterMem(g.nic, addr, nbytes, &ma, &mh);
        if (rc != VIP_SUCCESS) return fail(AM_ERR_RESOURCE, "AM_SetSeg", "VipRegisterMem: %s", VipxReturnString(rc));
    }
    // The old registration stays valid until the peers have acknowledged the
    // new one (retire_segments): a long message aimed with a stale copy must
    // not hit an unregistered range (that would break the VI).  AM_SetSeg does
    // not wait for the acknowledgements: peers may be in a non-AM
    // synchronisation (AM_SPMDAllGather) and not polling.
    if (ep->seg_registered)
        ep->retired.push_back(RetiredSeg{static_cast<uint8_t *>(ep->seg), ep->seglen, ep->seg_mh, ep->seg_gen});
    ep->seg = addr;
    ep->seglen = nbytes;
    ep->seg_mh = mh;
    ep->seg_registered = nbytes != 0;
    ep->seg_gen++;
    SegInfo si = current_seg(ep);
    int result = AM_OK;
    for (Link *l : ep->links)
        if (l->state == LinkState::Up) {
            int rc = send_system_request(ep, l, kSysSegInfo, nullptr, 0, &si, sizeof si);
            if (rc != AM_OK) result = rc;
        }
    retire_segments(ep);
    return result;
}

int AM_GetSeg(ep_t ep, void **addr, uintptr_t *nbytes) {
    CHECK_INIT("AM_GetSeg");
    if (!valid_ep(ep) || !addr || !nbytes) return fail(AM_ERR_BAD_ARG, "AM_GetSeg", "bad argument");
    *addr = ep->seg;
    *nbytes = ep->seglen;
    return AM_OK;
}

int AM_SetTag(ep_t ep, tag_t tag) {
    CHECK_INIT("AM_SetTag");
    if (!valid_ep(ep)) return fail(AM_ERR_BAD_ARG, "AM_SetTag", "not an endpoint");
    BundleGuard hold(ep->eb);
    ep->tag = tag;
    return AM_OK;
}

int AM_GetTag(ep_t ep, tag_t *tag) {
    CHECK_INIT("AM_GetTag");
    if (!valid_ep(ep) || !tag) return fail(AM_ERR_BAD_ARG, "AM_GetTag", "bad argument");
    *tag = ep->tag;
    return AM_OK;
}

int AM_SetExpectedResources(ep_t ep, int n_endpoints, int n_outstanding_requests) {
    CHECK_INIT("AM_SetExpectedResources");
    if (!valid_ep(ep) || n_endpoints < 0 || n_outstanding_requests < 0)
        return fail(AM_ERR_BAD_ARG, "AM_SetExpectedResources",
                    "n_endpoints %d, n_outstanding_requests %d (must be >= 0)", n_endpoints, n_outstanding_requests);
    // k: 0 keeps the default; more than AMVIA_MAX_CREDITS is granted as that
    // many (AM-2 lets the layer provide fewer resources than asked for).
    int k = n_outstanding_requests ? n_outstanding_requests : g.default_credits;
    BundleGuard hold(ep->eb);
    ep->credits_k = k > AMVIA_MAX_CREDITS ? AMVIA_MAX_CREDITS : k;
    return AM_OK;
}

// ---- handlers -------------------------------------------------------------------------
int _AM_SetHandler(ep_t ep, handler_t h, amx_handler_fn_t fn) {
    CHECK_INIT("AM_SetHandler");
    if (!valid_ep(ep) || !fn) return fail(AM_ERR_BAD_ARG, "AM_SetHandler", "bad endpoint or NULL");
    BundleGuard hold(ep->eb);
    ep->handlers[h] = fn;
    return AM_OK;
}

int _AM_SetHandlerAny(ep_t ep, handler_t *h, amx_handler_fn_t fn) {
    CHECK_INIT("AM_SetHandlerAny");
    if (!valid_ep(ep) || !fn || !h) return fail(AM_ERR_BAD_ARG, "AM_SetHandlerAny", "bad argument");
    BundleGuard hold(ep->eb);
    for (int i = 1; i < AMVIA_MAX_NUMHANDLERS; i++)
        if (!ep->handlers[i]) {
            ep->handlers[i] = fn;
            *h = handler_t(i);
            return AM_OK;
        }
    return fail(AM_ERR_RESOURCE, "AM_SetHandlerAny", "all %d handlers are set", AMVIA_MAX_NUMHANDLERS - 1);
}

// ---- events ---------------------------------------------------------------------------
int AM_GetEventMask(eb_t eb, int *mask) {
    CHECK_INIT("AM_GetEventMask");
    if (!valid_eb(eb) || !mask) return fail(AM_ERR_BAD_ARG, "AM_GetEventMask", "bad argument");
    BundleGuard hold(eb);
    *mask = eb->event_mask;
    return AM_OK;
}

int AM_SetEventMask(eb_t eb, int mask) {
    CHECK_INIT("AM_SetEventMask");
    if (!valid_eb(eb) || mask < 0 || mask >= AM_NUMEVENTMASKS)
        return fail(AM_ERR_BAD_ARG, "AM_SetEventMask", "bad bundle or mask %d", mask);
    BundleGuard hold(eb);
    eb->event_mask = mask;
    return AM_OK;
}

} // extern "C"
