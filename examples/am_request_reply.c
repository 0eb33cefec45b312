/*
 * am_request_reply.c - Active Messages: a short request runs a handler on the
 * destination, whose reply runs a handler back on the requester.
 *
 *   vipl-run -n 2 ./am_request_reply        (any number of processes works)
 *
 * Every process asks its right-hand neighbour to square a number; the
 * neighbour's request handler replies with the result, and the requester
 * polls (AM_Poll) until its reply handler has run.
 */
#include <stdio.h>

#include <am.h>
#include <am_spmd.h>

#define H_SQUARE 1 /* request handler: square a0, reply with it */
#define H_RESULT 2 /* reply handler: store the result */

static volatile int answered;
static int result;

static void square_handler(void *token, int32_t x) { AM_Reply1(token, H_RESULT, x * x); }

static void result_handler(void *token, int32_t y) {
    (void)token;
    result = y;
    answered = 1;
}

int main(int argc, char **argv) {
    eb_t eb;
    ep_t ep;
    if (AM_SPMDStartup(&argc, &argv, &eb, &ep) != AM_OK) return 1;
    AM_SetHandler(ep, H_SQUARE, square_handler);
    AM_SetHandler(ep, H_RESULT, result_handler);
    AM_SPMDBarrier(); /* every handler is set before the first request */

    int me = AM_SPMDMyProc(), n = AM_SPMDNumProcs();
    int x = me + 3;
    AM_Request1(ep, (me + 1) % n, H_SQUARE, x);
    while (!answered) AM_Poll(eb); /* runs our reply handler, and serves our neighbour's request */
    printf("am_request_reply: rank %d: %d squared by rank %d is %d\n", me, x, (me + 1) % n, result);
    int ok = result == x * x;
    AM_SPMDExit(ok ? 0 : 1);
    return 0;
}
