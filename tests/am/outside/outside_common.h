/* outside_common.h - the little check helpers shared by the programs in
 * tests/am/outside/ (AM-2 programs written from the specification and am.h
 * alone, by someone who had not read am/src). */
#ifndef OUTSIDE_COMMON_H
#define OUTSIDE_COMMON_H

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "am.h"
#include "am_spmd.h"

static int outside_errors;
#if defined(__GNUC__)
#define OUTSIDE_UNUSED __attribute__((unused))
#else
#define OUTSIDE_UNUSED
#endif
static int outside_rank;

#define EXPECT_RC(call, want)                                                                                          \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_ != (want)) {                                                                                           \
            fprintf(stderr, "rank %d: FAILED %s:%d: %s returned %s (%d), expected %s\n", outside_rank, __FILE__,       \
                    __LINE__, #call, AMVIA_ErrorName(rc_), rc_, #want);                                                \
            outside_errors++;                                                                                          \
        }                                                                                                              \
    } while (0)

#define EXPECT(cond)                                                                                                   \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "rank %d: FAILED %s:%d: %s\n", outside_rank, __FILE__, __LINE__, #cond);                   \
            outside_errors++;                                                                                          \
        }                                                                                                              \
    } while (0)

static OUTSIDE_UNUSED double outside_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Polls the bundles until *counter reaches value; gives up after 10 s (a
 * failure, not a hang). */
static OUTSIDE_UNUSED void outside_poll_until(eb_t a, eb_t b, volatile int *counter, int value, const char *what) {
    double end = outside_now() + 10.0;
    while (*counter < value) {
        if (a) AM_Poll(a);
        if (b) AM_Poll(b);
        if (outside_now() > end) {
            fprintf(stderr, "rank %d: FAILED waiting for %s: %d of %d after 10 s\n", outside_rank, what, *counter,
                    value);
            outside_errors++;
            return;
        }
    }
}

/* Polls the bundle for about ms milliseconds. */
static OUTSIDE_UNUSED void outside_poll_for(eb_t eb, int ms) {
    double end = outside_now() + ms * 1e-3;
    while (outside_now() < end) AM_Poll(eb);
}

static OUTSIDE_UNUSED int outside_same_name(const en_t *x, const en_t *y) {
    return x->id == y->id && x->addr_len == y->addr_len && memcmp(x->addr, y->addr, x->addr_len) == 0;
}

/* Sums the errors over the job, prints one line from rank 0, exits. */
static OUTSIDE_UNUSED void outside_finish(const char *prog) {
    int np = AM_SPMDNumProcs(), i, total = 0;
    int all[64];
    AM_SPMDAllGather(&outside_errors, all, sizeof(int));
    for (i = 0; i < np && i < 64; i++) total += all[i];
    if (outside_rank == 0) printf("%s: %d processes, %d errors\n", prog, np, total);
    fflush(stdout);
    AM_SPMDExit(total ? 1 : 0);
}

#endif
