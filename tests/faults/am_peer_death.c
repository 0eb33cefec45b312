/* am_peer_death.c - AM-2 as a program written to the spec sees a peer die.
 * Rank 1 leaves without a word after a barrier (as after kill -9, but with
 * exit code 0 so the launcher does not end the job for us); rank 0 keeps
 * sending requests to it.  The spec's answer for a message that cannot be
 * delivered is the returned-message handler (handler 0) with EUNREACHABLE;
 * the request call itself may also refuse.  Prints how long detection took
 * and exits 0 if it came within 5 s, 1 otherwise. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "am.h"
#include "am_spmd.h"

static volatile int unreachable, returned_other;
static volatile int replies;

static void request_handler(void *token, int a) { AM_Reply1(token, 2, a); }
static void reply_handler(void *token, int a) {
    (void)token;
    (void)a;
    replies++;
}
/* The AM-2 returned-message handler: (status, opcode, argblock, token). */
static void returned_handler(int status, op_t opcode, void *argblock, void *token) {
    (void)opcode;
    (void)argblock;
    (void)token;
    if (status == EUNREACHABLE) unreachable++;
    else returned_other++;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    eb_t eb;
    ep_t ep;
    if (AM_SPMDStartup(&argc, &argv, &eb, &ep) != AM_OK) return 2;
    if (AM_SetHandler(ep, 0, (void (*)())returned_handler) != AM_OK ||
        AM_SetHandler(ep, 1, (void (*)())request_handler) != AM_OK ||
        AM_SetHandler(ep, 2, (void (*)())reply_handler) != AM_OK)
        return 2;
    const int me = AM_SPMDMyProc();
    AM_SPMDBarrier();
    if (me == 1) {
        fflush(NULL);
        _exit(0); /* gone without AM_SPMDExit or a goodbye */
    }
    if (me != 0) _exit(0);
    const double t0 = now();
    int refused = 0, n = 0;
    while (now() - t0 < 20 && !unreachable && !refused) {
        int rc = AM_Request1(ep, 1, 1, n++);
        if (rc != AM_OK) refused = rc;
        AM_Poll(eb);
    }
    const double secs = now() - t0;
    printf("am_peer_death: %s after %.3f s (%d requests, %d returned EUNREACHABLE, request call %s)\n",
           unreachable || refused ? "detected" : "NOT detected", secs, n, unreachable,
           refused ? AMVIA_ErrorName(refused) : "never refused");
    fflush(stdout);
    _exit((unreachable || refused) && secs < 5.0 ? 0 : 1);
}
