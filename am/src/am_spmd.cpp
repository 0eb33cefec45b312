// am_spmd.cpp - SPMD start-up for AM-2 programs over the viastack launcher
// (vipl_boot.h): one bundle and endpoint per process, every rank mapped at
// its rank's index, and a barrier made of AM system messages so that waiting
// processes keep serving requests.  Also the amx SPMD extension: the
// non-collective AMVIA_SPMDExit, exit callbacks, getenvMaster, IsWorker.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "am_internal.hpp"

extern char **environ;
#include "am_spmd.h"
#include "vipl_boot.h"

namespace amvia {
namespace {
eb_t s_eb = nullptr;
ep_t s_ep = nullptr;
int s_rank = -1, s_size = -1;
tag_t s_tag = 0;
int32_t s_epoch = 0;        // last barrier this process entered
int s_arrivals[2] = {0, 0}; // rank 0: arrivals per epoch parity
int32_t s_released = 0;     // last epoch rank 0 released
amvia_exitcallback_t s_exit_cb = nullptr;
bool s_exiting = false;         // an exit path is running (callbacks may not re-enter)
std::vector<char> s_master_env; // rank 0's environment: "K=V\0K=V\0..."

// Runs the exit callback once, then flushes stdio.
void run_exit_callback(int code) {
    amvia_exitcallback_t cb = s_exit_cb;
    s_exit_cb = nullptr;
    if (cb) cb(code);
    std::fflush(stdout);
    std::fflush(stderr);
}

// Rank 0's environment to every rank (collective, at start-up).
int share_master_env(int rank) {
    std::vector<char> env;
    if (rank == 0)
        for (char **e = environ; e && *e; e++) env.insert(env.end(), *e, *e + std::strlen(*e) + 1);
    uint64_t len = env.size();
    if (vipl_boot_bcast(&len, sizeof len, 0) != VIPL_BOOT_OK) return AM_ERR_RESOURCE;
    env.resize(size_t(len));
    if (len && vipl_boot_bcast(env.data(), size_t(len), 0) != VIPL_BOOT_OK) return AM_ERR_RESOURCE;
    s_master_env.swap(env);
    return AM_OK;
}

tag_t job_tag(const char *job) {
    uint64_t h = 1469598103934665603ull; // FNV-1a
    for (const char *p = job; *p; p++) h = (h ^ uint8_t(*p)) * 1099511628211ull;
    return h < 2 ? h + 2 : h; // never AM_NONE or AM_ALL
}
} // namespace

void spmd_barrier_message(int32_t epoch, int32_t what) {
    if (what == 0) s_arrivals[epoch & 1]++;
    else if (epoch > s_released) s_released = epoch;
}

void spmd_forget() {
    s_ep = nullptr;
    s_eb = nullptr;
}

void spmd_exit_notice(int32_t code) {
    // A peer ended the job (AMVIA_SPMDExit): this rank ends with the same code.
    // _exit: we are inside a poll, and for code != 0 the job is being aborted.
    if (!s_exiting) {
        s_exiting = true;
        run_exit_callback(code);
    }
    AMVIA_SPMDkillmyprocess(code & 0xff);
    _exit(code & 0xff); // the program's kill function returned
}

} // namespace amvia

using namespace amvia;

extern "C" {

void (*AMVIA_SPMDkillmyprocess)(int) = _exit;

static int startup(int *argc, char ***argv, void *seg, uintptr_t seglen, int depth, eb_t *eb, ep_t *ep) {
    (void)argc;
    (void)argv;
    if (!eb || !ep) return fail(AM_ERR_BAD_ARG, "AM_SPMDStartup", "eb and ep must not be NULL");
    // Checked before anything starts, so a refused call leaves nothing half set up.
    if ((seg == nullptr) != (seglen == 0))
        return fail(AM_ERR_BAD_ARG, "AM_SPMDStartupSeg", "segment %p with %lu bytes: give both or neither", seg,
                    (unsigned long)seglen);
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
    if (rc == AM_OK && seglen) rc = AM_SetSeg(s_ep, seg, seglen);
    if (rc == AM_OK && depth > 0) rc = AM_SetExpectedResources(s_ep, s_size, depth);
    if (rc == AM_OK && s_size > int(s_ep->xlate.size())) rc = AM_SetNumTranslations(s_ep, s_size);
    if (rc != AM_OK) {
        report("AM_SPMDStartup: AM set-up failed: %s", AMVIA_ErrorName(rc));
        return rc;
    }
    if (share_master_env(s_rank) != AM_OK) {
        report("AM_SPMDStartup: sharing rank 0's environment failed");
        return AM_ERR_RESOURCE;
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

int AM_SPMDStartupSeg(int *argc, char ***argv, void *seg, uintptr_t seglen, eb_t *eb, ep_t *ep) {
    return startup(argc, argv, seg, seglen, 0, eb, ep);
}

int AM_SPMDStartup(int *argc, char ***argv, eb_t *eb, ep_t *ep) { return startup(argc, argv, nullptr, 0, 0, eb, ep); }

int AMVIA_SPMDStartup(int *argc, char ***argv, int networkdepth, uint64_t *networkpid, eb_t *eb, ep_t *ep) {
    if (networkdepth < 0)
        return fail(AM_ERR_BAD_ARG, "AMVIA_SPMDStartup", "networkdepth %d (must be >= 0)", networkdepth);
    int rc = startup(argc, argv, nullptr, 0, networkdepth, eb, ep);
    if (rc == AM_OK && networkpid) *networkpid = s_tag;
    return rc;
}

int AM_SPMDSetExitCallback(amvia_exitcallback_t fn) {
    s_exit_cb = fn;
    return AM_OK;
}

const char *AM_SPMDgetenvMaster(const char *keyname) {
    if (!keyname || s_master_env.empty()) return nullptr;
    const size_t klen = std::strlen(keyname);
    for (size_t i = 0; i < s_master_env.size();) {
        const char *e = &s_master_env[i];
        const size_t n = std::strlen(e);
        if (n > klen && e[klen] == '=' && std::strncmp(e, keyname, klen) == 0) return e + klen + 1;
        i += n + 1;
    }
    return nullptr;
}

int AM_SPMDIsWorker(char **argv) {
    (void)argv;
    return std::getenv("VIASTACK_JOB") || std::getenv("VIASTACK_BOOT") ||
        (std::getenv("PMIX_RANK") && std::getenv("PMIX_NAMESPACE"));
}

int AM_SPMDMyProc(void) { return s_rank; }
int AM_SPMDNumProcs(void) { return s_size; }
tag_t AM_SPMDGetTag(void) { return s_tag; }

int AM_SPMDBarrier(void) {
    if (!s_ep) return fail(AM_ERR_NOT_INIT, "AM_SPMDBarrier", "call AM_SPMDStartup first");
    if (ts.handler_depth) return fail(AM_ERR_RESOURCE, "AM_SPMDBarrier", "called from a handler");
    std::fflush(stdout);
    std::fflush(stderr);
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
            int rc = send_system_request(s_ep, s_ep->xlate[size_t(r)].link, kSysBarrier, args, 2, nullptr, 0);
            if (rc != AM_OK) return fail(rc, "AM_SPMDBarrier", "rank %d is unreachable", r);
        }
    } else {
        const int32_t args[2] = {epoch, 0};
        if (!s_ep->xlate[0].link) return fail(AM_ERR_RESOURCE, "AM_SPMDBarrier", "translation 0 was unmapped");
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
            std::memcpy(static_cast<uint8_t *>(dest) + size_t(r) * len + done, tmp.data() + size_t(r) * n, n);
        done += n;
    }
    return AM_OK;
}

void AM_SPMDExit(int exitcode) {
    if (!s_exiting) {
        s_exiting = true;
        run_exit_callback(exitcode);
    }
    if (s_ep) {
        AM_SPMDBarrier();
        // Let the last messages (barrier releases, credit replies) leave the NIC.
        uint64_t deadline = vipl_wait::clock_ns() + 2000000000ull;
        while (s_eb->sends_outstanding > 0 && vipl_wait::clock_ns() < deadline) AM_Poll(s_eb);
        AM_Terminate();
        s_ep = nullptr;
        s_eb = nullptr;
    }
    vipl_boot_finalize();
    std::exit(exitcode);
}

int AMVIA_SPMDExit(int exitcode) {
    if (s_exiting) _exit(exitcode & 0xff); // called again from an exit callback
    s_exiting = true;
    run_exit_callback(exitcode);
    const int me = s_rank < 0 ? 0 : s_rank;
    if (s_ep && s_eb) {
        // Tell every peer, without waiting for credits: a peer that is not
        // polling is stopped by the launcher (code != 0) or runs on (code 0).
        const int32_t args[1] = {exitcode};
        for (int r = 0; r < s_size; r++) {
            if (r == me || size_t(r) >= s_ep->xlate.size()) continue;
            Link *l = s_ep->xlate[size_t(r)].link;
            if (!l || l->state != LinkState::Up) continue;
            const Channel &c = l->ch[0];
            if (c.has_credit() && c.has_free_send()) send_system_request(s_ep, l, kSysExit, args, 1, nullptr, 0);
        }
        // Let the notices leave the NIC (in inline firmware mode, our polls move them).
        uint64_t deadline = vipl_wait::clock_ns() + 500000000ull;
        while (s_eb->sends_outstanding > 0 && vipl_wait::clock_ns() < deadline) poll_bundle(s_eb, false);
    }
    if (exitcode & 0xff) {
        char why[96];
        std::snprintf(why, sizeof why, "AMVIA_SPMDExit(%d) on rank %d", exitcode, me);
        vipl_boot_abort(exitcode, why); // vipl-run ends the job with this code
    }
    AMVIA_SPMDkillmyprocess(0);
    _exit(0); // the program's kill function returned
}

} // extern "C"
