/*
 * am_spmd.h - SPMD start-up for AM-2 programs (in the spirit of amudp_spmd.h).
 *
 * Run the program with the launcher: `vipl-run -n N prog args`.  A program
 * started without it is a job of one.
 *
 *   eb_t eb; ep_t ep;
 *   AM_SPMDStartup(&argc, &argv, &eb, &ep);   // collective
 *   ... AM_SetHandler(ep, ...), AM_SPMDBarrier(), AM_Request4(ep, peer, ...) ...
 *   AM_SPMDExit(0);                            // collective, does not return
 *
 * The amx/AMUDP spellings (AMX_SPMDStartup, AMX_SPMDExit - which is the
 * non-collective AMVIA_SPMDExit -, AMUDP_SPMDgetenvMaster, ...) are at the end.
 *
 * AM_SPMDStartup initializes AM, allocates one AM_SEQ bundle and one endpoint,
 * gives the endpoint the job's tag, sets a segment if asked (see below), and
 * maps every rank r of the job at translation index r (itself included), so
 * `AM_Request*(ep, r, ...)` reaches rank r.  Handlers may be set afterwards,
 * but set them before the first barrier so no message finds them missing.
 *
 * AM_SPMDBarrier and AM_SPMDExit poll the bundle while they wait: a process in
 * the barrier still serves requests (and, in inline firmware mode, drives its
 * NIC), so peers that need its replies never deadlock on it.
 */
#ifndef VIASTACK_AM_SPMD_H
#define VIASTACK_AM_SPMD_H

#include "am.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective start-up.  argc/argv may be NULL (they are not modified today).
 * Returns AM_OK, or an AM_ERR_* code with a message on stderr. */
int AM_SPMDStartup(int *argc, char ***argv, eb_t *eb, ep_t *ep);
/* As AM_SPMDStartup, also registering seg[0, seglen) as the endpoint's segment
 * before mapping, so every peer learns it at connection time. */
int AM_SPMDStartupSeg(int *argc, char ***argv, void *seg, uintptr_t seglen, eb_t *eb, ep_t *ep);
int AM_SPMDMyProc(void);   /* this process's rank, 0..N-1 (-1 before start-up) */
int AM_SPMDNumProcs(void); /* N (-1 before start-up) */
/* Collective barrier that keeps polling the start-up bundle; flushes stdout
 * and stderr on entry, so output before the barrier is not mixed with after. */
int AM_SPMDBarrier(void);
/* Collective: every rank gives len bytes; dest gets N*len bytes, rank r's at r*len. */
int AM_SPMDAllGather(void *source, void *dest, size_t len);
/* The tag every endpoint of this job was given (unique per job). */
tag_t AM_SPMDGetTag(void);
/* Collective exit: barrier, AM_Terminate, leave the job, exit(exitcode).
 * Every rank must call it (a job's clean end); the exit callback runs first. */
void AM_SPMDExit(int exitcode);

/* ---- the amx SPMD extension (AMUDP/AMMPI's amudp_spmd.h shapes) ------------------ */

/* Non-collective: ends the WHOLE job from any one rank, at once.  Runs this
 * rank's exit callback, flushes stdio, tells every connected peer (a peer
 * runs its own exit callback and exits with the same code at its next AM
 * call - AM_Poll, a request, a barrier), then leaves:
 *   exitcode != 0: vipl_boot_abort - vipl-run stops the ranks that did not
 *                  poll and exits with exitcode (taken modulo 256);
 *   exitcode == 0: this process exits 0; peers end as they poll (a peer that
 *                  never makes another AM call runs on).
 * Does not return.  (AMUDP_SPMDExit returns int; so does this, formally.) */
int AMVIA_SPMDExit(int exitcode);
typedef void (*amvia_exitcallback_t)(int);
/* Registers fn to run (with the exit code) when the job ends through
 * AM_SPMDExit or AMVIA_SPMDExit on any rank; NULL for none.  The callback may
 * print, but must not make AM calls.  Returns AM_OK. */
int AM_SPMDSetExitCallback(amvia_exitcallback_t fn);
/* getenv() of rank 0's environment as it was at AM_SPMDStartup; NULL when
 * the key is not there or before start-up.  Do not modify the result. */
const char *AM_SPMDgetenvMaster(const char *keyname);
/* Non-zero when this process was started by a launcher (vipl-run, or a PMIx
 * launcher) as a rank of a job; 0 when started by hand (it then runs as a job
 * of one).  argv is accepted for the amx shape and not read. */
int AM_SPMDIsWorker(char **argv);
/* AM_SPMDStartup in the amx shape: networkdepth (> 0) sets the request
 * credits per peer (AM_SetExpectedResources), 0 keeps the default;
 * *networkpid (if not NULL) receives the job's tag, the same on every rank. */
int AMVIA_SPMDStartup(int *argc, char ***argv, int networkdepth, uint64_t *networkpid, eb_t *eb, ep_t *ep);

/* The function that finally ends this process when the job ends through
 * AMVIA_SPMDExit (on the calling rank for exit code 0, and on every peer the
 * exit notice reaches): _exit by default.  A program may point it at its own
 * function (AMUDP/AMMPI's AMX_SPMDkillmyprocess); it is called with the exit
 * code after the exit callback ran and stdio was flushed, and must not return. */
extern void (*AMVIA_SPMDkillmyprocess)(int);
/* AMMPI_SPMDBroadcast: len bytes from rootid's buf to buf on every rank.
 * Collective; blocks without polling (as AMMPI's); AM_OK, AM_ERR_NOT_INIT
 * before start-up, AM_ERR_BAD_ARG for a NULL buf or a rootid outside the job. */
int AMVIA_SPMDBroadcast(void *buf, size_t len, int rootid);
/* AMMPI_SPMDSetThreadMode: asks for the thread support of the layer below
 * (MPI's, for AMMPI) before AM_SPMDStartup.  viastack's bundles are AM_SEQ:
 * several threads may call AM only one at a time, which MPI calls
 * MPI_THREAD_SERIALIZED; that is what *provided_level reports, and the call
 * returns non-zero (success) for any usingthreads. */
int AMVIA_SPMDSetThreadMode(int usingthreads, const char **provided_level, int *argc, char ***argv);
/* AMUDP_SPMDStartup's shape as a function (so its address can be taken):
 * nproc and spawnfn are ignored, the launcher (vipl-run, PMIx) starts the ranks. */
typedef int (*amvia_spawnfn_t)(int nproc, int argc, char **argv);
int AMVIA_SPMDStartupAMUDP(int *argc, char ***argv, int nproc, int networkdepth, amvia_spawnfn_t spawnfn,
                           uint64_t *networkpid, eb_t *eb, ep_t *ep);

/* The amx names of the SPMD calls (AMX_* as in GASNet's amx headers) and the
 * AMUDP_* ones.  AMUDP_SPMDStartup's nproc and spawnfn are ignored: vipl-run
 * (or a PMIx launcher) starts the ranks. */
#define AMX_SPMDStartup(pargc, pargv, networkdepth, pnetworkpid, peb, pep)                                             \
    AMVIA_SPMDStartup((pargc), (pargv), (networkdepth), (pnetworkpid), (peb), (pep))
#define AMX_SPMDExit AMVIA_SPMDExit
#define AMX_SPMDSetExitCallback AM_SPMDSetExitCallback
#define AMX_SPMDgetenvMaster AM_SPMDgetenvMaster
#define AMX_SPMDIsWorker AM_SPMDIsWorker
#define AMX_SPMDNumProcs AM_SPMDNumProcs
#define AMX_SPMDMyProc AM_SPMDMyProc
#define AMX_SPMDBarrier AM_SPMDBarrier
#define AMX_SPMDAllGather AM_SPMDAllGather
#define AMX_SPMDkillmyprocess AMVIA_SPMDkillmyprocess
#ifndef AMVIA_NO_AMUDP_NAMES
#define AMUDP_SPMDStartup AMVIA_SPMDStartupAMUDP
#define amudp_spawnfn_t amvia_spawnfn_t
#define AMUDP_SPMDkillmyprocess AMVIA_SPMDkillmyprocess
#define AMMPI_SPMDStartup AMVIA_SPMDStartup
#define spawnfn_t amvia_spawnfn_t
#define AMMPI_SPMDExit AMVIA_SPMDExit
#define AMMPI_SPMDSetExitCallback AM_SPMDSetExitCallback
#define AMMPI_SPMDkillmyprocess AMVIA_SPMDkillmyprocess
#define AMMPI_SPMDSetThreadMode AMVIA_SPMDSetThreadMode
#define AMMPI_SPMDIsWorker AM_SPMDIsWorker
#define AMMPI_SPMDNumProcs AM_SPMDNumProcs
#define AMMPI_SPMDMyProc AM_SPMDMyProc
#define AMMPI_SPMDBarrier AM_SPMDBarrier
#define AMMPI_SPMDAllGather AM_SPMDAllGather
#define AMMPI_SPMDBroadcast AMVIA_SPMDBroadcast
#define AMMPI_SPMDgetenvMaster AM_SPMDgetenvMaster
#define AMUDP_SPMDExit AMVIA_SPMDExit
#define AMUDP_SPMDSetExitCallback AM_SPMDSetExitCallback
#define AMUDP_SPMDgetenvMaster AM_SPMDgetenvMaster
#define AMUDP_SPMDIsWorker AM_SPMDIsWorker
#define AMUDP_SPMDNumProcs AM_SPMDNumProcs
#define AMUDP_SPMDMyProc AM_SPMDMyProc
#define AMUDP_SPMDBarrier AM_SPMDBarrier
#define AMUDP_SPMDAllGather AM_SPMDAllGather
#define amudp_exitcallback_t amvia_exitcallback_t
#define amudp_stats_t amvia_stats_t
#define AMUDP_initial_stats AMVIA_initial_stats
#define AMUDP_GetEndpointStatistics AMVIA_GetEndpointStatistics
#define AMUDP_ResetEndpointStatistics AMVIA_ResetEndpointStatistics
#define AMUDP_AggregateStatistics AMVIA_AggregateStatistics
#define AMUDP_DumpStatistics AMVIA_DumpStatistics
#define AMUDP_FatalErr AMVIA_FatalErr
#endif

#ifdef __cplusplus
}
#endif
#endif /* VIASTACK_AM_SPMD_H */
