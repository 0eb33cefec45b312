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
/* Collective barrier that keeps polling the start-up bundle. */
int AM_SPMDBarrier(void);
/* Collective: every rank gives len bytes; dest gets N*len bytes, rank r's at r*len. */
int AM_SPMDAllGather(void *source, void *dest, size_t len);
/* The tag every endpoint of this job was given (unique per job). */
tag_t AM_SPMDGetTag(void);
/* Collective exit: barrier, AM_Terminate, leave the job, exit(exitcode). */
void AM_SPMDExit(int exitcode);

#ifdef __cplusplus
}
#endif
#endif /* VIASTACK_AM_SPMD_H */
