// am_spmd.cpp - SPMD start-up for AM-2 programs over the viastack launcher
// (vipl_boot.h): one bundle and endpoint per process, every rank mapped at
// its rank's index, and a barrier made of AM system messages so that waiting
// processes keep serving requests.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "am_internal.hpp"
#include "am_spmd.h"
#include "vipl_boot.h"

namespace amvia {
namespace {
eb_t s_eb = nullptr;
ep_t s_ep = nullptr;
int s_rank = -1, s_size = -1;
tag_t s_tag = 0;
int32_t s_epoch = 0;     // last barrier this process entered
int s_arrivals[2] = {0, 0}; // rank 0: arrivals per epoch parity
int32_t s_released = 0;  // last epoch rank 0 released

tag_t job_tag(const char *job) {
    uint64_t h = 1469598103934665603ull; // FNV-1a
    for (const char *p = job; *p; p++) h = (h ^ uint8_t(*p)) * 1099511628211ull;
    return h < 2 ? h + 2 : h; // never AM_NONE or AM_ALL
}
} // namespace

void spmd_barrier_message(int32_t epoch, int32_t what) {
    if (what == 0)
        s_arrivals[epoch & 1]++;
    else if (epoch > s_released)
        s_released = epoch;
}

void spmd_forget() {
    s_ep = nullptr;
    s_eb = nullptr;
}

} // namespace amvia

using namespace amvia;

extern "C" {

int AM_SPMDStartupSeg(int *argc, char ***argv, void *seg, uintptr_t seglen, eb_t *eb, ep_t *ep) {
    (void)argc;
    (void)argv;
    if (!eb || !ep) return fail(AM_ERR_BAD_ARG, "AM_SPMDStartup", "eb and ep must not be NULL");
    if (s_ep) return fail(AM_ERR_RESOURCE, "AM_SPMDStartup", "already started");
    int brc = vipl_boot_init();
    if (brc != VIPL_BOOT_OK) {
        report("AM_SPMDStartup: vipl_boot_init failed (%d); start the program with vipl-run -n N", brc);
        return AM_ERR_RESOURCE;
    }
    s_rank = vipl_boot_rank();
    s_size = vipl_boot_size();
    int rc = AM_Init();
    if (rc == AM_OK) rc = AM_AllocateBundle(AM_SEQ, &s_eb);
    en_t me{};
    if (rc == AM_OK) rc = AM_AllocateEndpoint(s_eb, &s_ep, &me);
    s_tag = job_tag(vipl_boot_job());
    if (rc == AM_OK) rc = AM_SetTag(s_ep, s_tag);
    if (rc == AM_OK && seg) rc = AM_SetSeg(s_ep, seg, seglen);
    if (rc == AM_OK && s_size > int(s_ep->xlate.size())) rc = AM_SetNumTranslations(s_ep, s_size);
    if (rc != AM_OK) {
        report("AM_SPMDStartup: AM set-up failed: %s", AMVIA_ErrorName(rc));
        return rc;
    }
    std::vector<en_t> names(static_cast<size_t>(s_size));
    if (vipl_boot_allgather(&me, sizeof me, names.data()) != VIPL_BOOT_OK) {
        report("AM_SPMDStartup: exchanging endpoint names failed");
        return AM_ERR_RESOURCE;
    }
    for (int r = 0; r < s_size; r++) {
        rc = AM_Map(s_ep, r, names[size_t(r)], s_tag);
        if (rc != AM_OK) {
            report("AM_SPMDStartup: AM_Map of rank %d failed: %s", r, AMVIA_ErrorName(rc));
            return rc;
        }
    }
    // Every MAP up (and every peer's segment known) before anyone sends.
    for (int r = 0; r < s_size; r++) {
        Link *l = s_ep->xlate[size_t(r)].link;
        while (l->state == LinkState::Pending || (l->state == LinkState::Up && !l->seg_known)) {
            link_try_up(l);
            poll_bundle(s_eb, true);
        }
        if (l->state != LinkState::Up) {
            report("AM_SPMDStartup: could not connect to rank %d", r);
            return AM_ERR_RESOURCE;
        }
    }
    *eb = s_eb;
    *ep = s_ep;
    return AM_SPMDBarrier();
}

int AM_SPMDStartup(int *argc, char ***argv, eb_t *eb, ep_t *ep) {
    return AM_SPMDStartupSeg(argc, argv, nullptr, 0, eb, ep);
}

int AM_SPMDMyProc(void) { return s_rank; }
int AM_SPMDNumProcs(void) { return s_size; }
tag_t AM_SPMDGetTag(void) { return s_tag; }

int AM_SPMDBarrier(void) {
    if (!s_ep) return fail(AM_ERR_NOT_INIT, "AM_SPMDBarrier", "call AM_SPMDStartup first");
    if (g.handler_depth) return fail(AM_ERR_RESOURCE, "AM_SPMDBarrier", "called from a handler");
    // A segment replaced by AM_SetSeg is released once every peer has heard of
    // the new one; peers poll in the barrier, so after it the old memory is
    // the program's again (and every peer aims at the new segment).
    while (!retire_segments(s_ep)) AM_Poll(s_eb);
    int32_t epoch = ++s_epoch;
    if (s_rank == 0) {
        while (s_arrivals[epoch & 1] < s_size - 1) AM_Poll(s_eb);
        s_arrivals[epoch & 1] = 0;
        const int32_t args[2] = {epoch, 1};
        for (int r = 1; r < s_size; r++) {
            if (!s_ep->xlate[size_t(r)].link)
                return fail(AM_ERR_RESOURCE, "AM_SPMDBarrier", "translation %d was unmapped", r);
            int rc = send_system_request(s_ep, s_ep->xlate[size_t(r)].link, kSysBarrier, args, 2,
                                         nullptr, 0);
            if (rc != AM_OK) return fail(rc, "AM_SPMDBarrier", "rank %d is unreachable", r);
        }
    } else {
        const int32_t args[2] = {epoch, 0};
        if (!s_ep->xlate[0].link)
            return fail(AM_ERR_RESOURCE, "AM_SPMDBarrier", "translation 0 was unmapped");
        int rc = send_system_request(s_ep, s_ep->xlate[0].link, kSysBarrier, args, 2, nullptr, 0);
        if (rc != AM_OK) return fail(rc, "AM_SPMDBarrier", "rank 0 is unreachable");
        while (s_released < epoch) AM_Poll(s_eb);
    }
    return AM_OK;
}

int AM_SPMDAllGather(void *source, void *dest, size_t len) {
    if (!s_ep) return fail(AM_ERR_NOT_INIT, "AM_SPMDAllGather", "call AM_SPMDStartup first");
    if ((!source || !dest) && len) return fail(AM_ERR_BAD_ARG, "AM_SPMDAllGather", "NULL buffer");
    // vipl_boot_allgather moves at most VIPL_BOOT_MAX_ITEM bytes per rank per call.
    std::vector<uint8_t> tmp(size_t(s_size) * VIPL_BOOT_MAX_ITEM);
    for (size_t done = 0; done < len;) {
        size_t n = std::min<size_t>(len - done, VIPL_BOOT_MAX_ITEM);
        if (vipl_boot_allgather(static_cast<uint8_t *>(source) + done, n, tmp.data()) != VIPL_BOOT_OK)
            return fail(AM_ERR_RESOURCE, "AM_SPMDAllGather", "vipl_boot_allgather failed");
        for (int r = 0; r < s_size; r++)
            std::memcpy(static_cast<uint8_t *>(dest) + size_t(r) * len + done,
                        tmp.data() + size_t(r) * n, n);
        done += n;
    }
    return AM_OK;
}

void AM_SPMDExit(int exitcode) {
    if (s_ep) {
        AM_SPMDBarrier();
        // Let the last messages (barrier releases, credit replies) leave the NIC.
        uint64_t deadline = now_ns() + 2000000000ull;
        while (s_eb->sends_outstanding > 0 && now_ns() < deadline) AM_Poll(s_eb);
        AM_Terminate();
        s_ep = nullptr;
        s_eb = nullptr;
    }
    vipl_boot_finalize();
    std::exit(exitcode);
}

} // extern "C"
