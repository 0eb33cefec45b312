/*
 * vipl_boot.h - job bootstrap for SPMD programs: who am I, how many are we,
 * a barrier and an all-gather to exchange addresses before VIs connect.
 *
 * Started by `vipl-run -n N prog ...`, each process sees the environment
 *   VIASTACK_JOB   job id (names the job's shared-memory files /dev/shm/viastack-<job>-*)
 *   VIASTACK_RANK  0..N-1
 *   VIASTACK_SIZE  N
 * and the calls below work over a shared-memory segment the launcher made.
 * Started with no launcher, a process is a job of one (rank 0, size 1).
 * Started by a PMIx launcher (mpirun, srun --mpi=pmix) the same calls go
 * through PMIx where viastack was built with it.
 *
 * All calls are collective where noted; every rank must make them in the same
 * order.  They are for start-up and shut-down, not for the data path.
 */
#ifndef VIPL_BOOT_H
#define VIPL_BOOT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes */
#define VIPL_BOOT_OK 0
#define VIPL_BOOT_ERR_ENV -1      /* VIASTACK_* variables malformed (message on stderr) */
#define VIPL_BOOT_ERR_SHM -2      /* the job's shared segment could not be opened */
#define VIPL_BOOT_ERR_ARG -3      /* bad argument (e.g. length over VIPL_BOOT_MAX_ITEM) */
#define VIPL_BOOT_ERR_TIMEOUT -4  /* a peer did not arrive in time (it died or hangs) */
#define VIPL_BOOT_ERR_NOT_INIT -5 /* vipl_boot_init was not called */

/* Largest item one rank contributes to vipl_boot_allgather. */
#define VIPL_BOOT_MAX_ITEM 4096

/* Joins the job (the first call) and takes a reference to it: every layer
 * of a process that uses the bootstrap and leaves it (AM SPMD, the Split-C
 * runtime, the program itself) calls it once and vipl_boot_finalize once.  Later
 * calls return the first call's result; a successful one counts as a user
 * until its vipl_boot_finalize. */
int vipl_boot_init(void);
/* As vipl_boot_init, but takes no reference: for code that never calls
 * vipl_boot_finalize (the VIPL providers; FM and BIP, which stay in the job
 * when they finalize, so that they can start again). */
int vipl_boot_lookup(void);
int vipl_boot_rank(void);
int vipl_boot_size(void);
/* The job id string ("" for a job of one started without a launcher). */
const char *vipl_boot_job(void);
/* Collective barrier. */
int vipl_boot_barrier(void);
/* Collective: every rank contributes len bytes (the same len on all ranks);
 * out receives size*len bytes, rank r's item at out + r*len. */
int vipl_boot_allgather(const void *mine, size_t len, void *out);
/* Collective: root's len bytes at buf are copied to buf on every rank. */
int vipl_boot_bcast(void *buf, size_t len, int root);
/* Drops one reference taken by vipl_boot_init; the last one leaves the job
 * (collective barrier first), so a library finalizing its use does not end
 * the bootstrap for the rest of the process.  Called without any reference
 * (only vipl_boot_lookup), it leaves the job too.  After the job is left,
 * further calls return the same result. */
int vipl_boot_finalize(void);
/* Make the launcher kill the whole job with this exit code (never returns). */
void vipl_boot_abort(int code, const char *why);

#ifdef __cplusplus
}
#endif
#endif /* VIPL_BOOT_H */
