// am_amx.cpp - the AMUDP/AMMPI entry points beyond AM-2 (am_amx.h and the
// end of am_spmd.h): the generic variadic request/reply forms, GetSourceId,
// map-by-address, the broadcast, thread mode and AMUDP-shaped start-up.
#include <cstdarg>
#include <cstring>
#include <vector>

#include "am_internal.hpp"
#include "am_spmd.h"
#include "vipl_boot.h"

using namespace amvia;

namespace {
// Collects numargs 32-bit arguments from ap; false if numargs is out of range.
bool collect_args(int numargs, va_list ap, int32_t *out) {
    if (numargs < 0 || numargs > AMVIA_MAX_SHORT) return false;
    for (int i = 0; i < numargs; i++) out[i] = int32_t(va_arg(ap, int));
    return true;
}

int bad_numargs(const char *call, int numargs) {
    return fail(AM_ERR_BAD_ARG, call, "numargs %d is outside 0..%d (AM_MaxShort())", numargs, AMVIA_MAX_SHORT);
}

int bad_nbytes(const char *call, int nbytes) { return fail(AM_ERR_BAD_ARG, call, "nbytes %d is negative", nbytes); }
} // namespace

extern "C" {

int AMVIA_SilentMode = 0;

int AMVIA_GetSourceId(void *token, int *srcid) {
    en_t src{};
    ep_t ep = nullptr;
    if (!srcid || AM_GetSourceEndpoint(token, &src) != AM_OK || AM_GetDestEndpoint(token, &ep) != AM_OK)
        return fail(AM_ERR_BAD_ARG, "AMVIA_GetSourceId", "bad token or NULL srcid");
    for (size_t i = 0; i < ep->xlate.size(); i++) {
        const Translation &x = ep->xlate[i];
        if (x.inuse && std::memcmp(&x.name, &src, sizeof src) == 0) {
            *srcid = int(i);
            return AM_OK;
        }
    }
    return fail(AM_ERR_BAD_ARG, "AMVIA_GetSourceId", "the sender is not in the endpoint's translation table");
}

int AMVIA_SetHandlerCallbacks(ep_t ep, amvia_preHandlerCallback_t pre, amvia_postHandlerCallback_t post) {
    if (!valid_ep(ep)) return fail(AM_ERR_BAD_ARG, "AMVIA_SetHandlerCallbacks", "not an endpoint");
    ep->pre_handler = pre;
    ep->post_handler = post;
    return AM_OK;
}

int AMVIA_MapByAddress(ep_t ea, int index, en_t *name, tag_t tag) {
    if (!name) return fail(AM_ERR_BAD_ARG, "AMVIA_MapByAddress", "name is NULL");
    return AM_Map(ea, index, *name, tag);
}

int AMVIA_MapAnyByAddress(ep_t ea, int *index, en_t *name, tag_t tag) {
    if (!name) return fail(AM_ERR_BAD_ARG, "AMVIA_MapAnyByAddress", "name is NULL");
    return AM_MapAny(ea, index, *name, tag);
}

int AMVIA_RequestVA(ep_t ep, int dest, handler_t h, int numargs, va_list ap) {
    int32_t a[AMVIA_MAX_SHORT];
    if (!collect_args(numargs, ap, a)) return bad_numargs("AMVIA_RequestVA", numargs);
    return AMVIA_Request(ep, dest, h, numargs, a);
}

int AMVIA_RequestIVA(ep_t ep, int dest, handler_t h, void *src, int nbytes, int numargs, va_list ap) {
    int32_t a[AMVIA_MAX_SHORT];
    if (nbytes < 0) return bad_nbytes("AMVIA_RequestIVA", nbytes);
    if (!collect_args(numargs, ap, a)) return bad_numargs("AMVIA_RequestIVA", numargs);
    return AMVIA_RequestI(ep, dest, h, src, size_t(nbytes), numargs, a);
}

int AMVIA_RequestXferVA(ep_t ep, int dest, handler_t h, void *src, int nbytes, uintptr_t dest_offset, int async,
                        int numargs, va_list ap) {
    int32_t a[AMVIA_MAX_SHORT];
    if (nbytes < 0) return bad_nbytes("AMVIA_RequestXferVA", nbytes);
    if (!collect_args(numargs, ap, a)) return bad_numargs("AMVIA_RequestXferVA", numargs);
    return AMVIA_RequestXfer(ep, dest, h, src, size_t(nbytes), dest_offset, async, numargs, a);
}

int AMVIA_ReplyVA(void *token, handler_t h, int numargs, va_list ap) {
    int32_t a[AMVIA_MAX_SHORT];
    if (!collect_args(numargs, ap, a)) return bad_numargs("AMVIA_ReplyVA", numargs);
    return AMVIA_Reply(token, h, numargs, a);
}

int AMVIA_ReplyIVA(void *token, handler_t h, void *src, int nbytes, int numargs, va_list ap) {
    int32_t a[AMVIA_MAX_SHORT];
    if (nbytes < 0) return bad_nbytes("AMVIA_ReplyIVA", nbytes);
    if (!collect_args(numargs, ap, a)) return bad_numargs("AMVIA_ReplyIVA", numargs);
    return AMVIA_ReplyI(token, h, src, size_t(nbytes), numargs, a);
}

int AMVIA_ReplyXferVA(void *token, handler_t h, void *src, int nbytes, uintptr_t dest_offset, int numargs, va_list ap) {
    int32_t a[AMVIA_MAX_SHORT];
    if (nbytes < 0) return bad_nbytes("AMVIA_ReplyXferVA", nbytes);
    if (!collect_args(numargs, ap, a)) return bad_numargs("AMVIA_ReplyXferVA", numargs);
    return AMVIA_ReplyXfer(token, h, src, size_t(nbytes), dest_offset, numargs, a);
}

// The variadic forms: each forwards its va_list to the VA form above.
#define AMVIA_FORWARD(call)                                                                                            \
    va_list ap;                                                                                                        \
    va_start(ap, numargs);                                                                                             \
    int rc = call;                                                                                                     \
    va_end(ap);                                                                                                        \
    return rc

int AMVIA_RequestV(ep_t ep, int dest, handler_t h, int numargs, ...) {
    AMVIA_FORWARD(AMVIA_RequestVA(ep, dest, h, numargs, ap));
}
int AMVIA_RequestIV(ep_t ep, int dest, handler_t h, void *src, int nbytes, int numargs, ...) {
    AMVIA_FORWARD(AMVIA_RequestIVA(ep, dest, h, src, nbytes, numargs, ap));
}
int AMVIA_RequestXferV(ep_t ep, int dest, handler_t h, void *src, int nbytes, uintptr_t dest_offset, int async,
                       int numargs, ...) {
    AMVIA_FORWARD(AMVIA_RequestXferVA(ep, dest, h, src, nbytes, dest_offset, async, numargs, ap));
}
int AMVIA_ReplyV(void *token, handler_t h, int numargs, ...) { AMVIA_FORWARD(AMVIA_ReplyVA(token, h, numargs, ap)); }
int AMVIA_ReplyIV(void *token, handler_t h, void *src, int nbytes, int numargs, ...) {
    AMVIA_FORWARD(AMVIA_ReplyIVA(token, h, src, nbytes, numargs, ap));
}
int AMVIA_ReplyXferV(void *token, handler_t h, void *src, int nbytes, uintptr_t dest_offset, int numargs, ...) {
    AMVIA_FORWARD(AMVIA_ReplyXferVA(token, h, src, nbytes, dest_offset, numargs, ap));
}
#undef AMVIA_FORWARD

int AMVIA_SPMDBroadcast(void *buf, size_t len, int rootid) {
    const int n = AM_SPMDNumProcs();
    if (n < 0) return fail(AM_ERR_NOT_INIT, "AMVIA_SPMDBroadcast", "call AM_SPMDStartup first");
    if ((!buf && len) || rootid < 0 || rootid >= n)
        return fail(AM_ERR_BAD_ARG, "AMVIA_SPMDBroadcast", "buf %p, rootid %d (the job has %d ranks)", buf, rootid, n);
    // vipl_boot_bcast moves at most VIPL_BOOT_MAX_ITEM bytes per call.
    for (size_t done = 0; done < len;) {
        size_t k = std::min<size_t>(len - done, VIPL_BOOT_MAX_ITEM);
        if (vipl_boot_bcast(static_cast<uint8_t *>(buf) + done, k, rootid) != VIPL_BOOT_OK)
            return fail(AM_ERR_RESOURCE, "AMVIA_SPMDBroadcast", "vipl_boot_bcast failed");
        done += k;
    }
    return AM_OK;
}

int AMVIA_SPMDSetThreadMode(int usingthreads, const char **provided_level, int *argc, char ***argv) {
    (void)usingthreads;
    (void)argc;
    (void)argv;
    if (provided_level) *provided_level = "MPI_THREAD_SERIALIZED";
    return 1;
}

int AMVIA_SPMDStartupAMUDP(int *argc, char ***argv, int nproc, int networkdepth, amvia_spawnfn_t spawnfn,
                           uint64_t *networkpid, eb_t *eb, ep_t *ep) {
    (void)nproc;
    (void)spawnfn;
    return AMVIA_SPMDStartup(argc, argv, networkdepth, networkpid, eb, ep);
}

} // extern "C"
