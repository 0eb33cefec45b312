/* outside_teardown.c - freeing endpoints and bundles while messages are in
 * flight, and calls after AM_Terminate (AM-2 spec sections "Endpoints and
 * bundles", "Error model").  Two processes.
 *
 * Besides the start-up endpoint each process makes bundle X with endpoint x
 * and bundle Y with endpoint y; x and y map the peer's x and y.
 *
 *  1. rank 0 sends a burst of requests (short, medium, long) from x to the
 *     peer's x and frees x at once, without waiting for replies.  Rank 1
 *     serves them (its replies find no endpoint: they must fail cleanly),
 *     then its next request to the freed x is refused (handler 0
 *     EUNREACHABLE or a returned message) rather than hanging.
 *  2. rank 1 sends a burst from y and frees the whole bundle Y; rank 0
 *     serves the burst; its requests to the freed y are refused.
 *  3. stale handles are refused with AM_ERR_BAD_ARG; AM_Terminate frees
 *     what is left; calls after it return AM_ERR_NOT_INIT; AM_Init again
 *     works. */
#include "outside_common.h"

#define H_REQ 40
#define H_MED 41
#define H_LONG 42
#define H_REP 43
#define BURST 20

static int me;
static volatile int served, replies, returned_count;
static int last_status;
static char seg[1 << 16];
static char data[4096];

static void returned(int status, op_t opcode, void *token) {
    (void)opcode;
    (void)token;
    last_status = status;
    returned_count++;
}
static void req(void *token, int32_t i) {
    served++;
    AM_Reply1(token, H_REP, i); /* the requester may be gone: any result but a crash */
}
static void med(void *token, void *buf, size_t nbytes, int32_t i) {
    EXPECT(nbytes == sizeof data && memcmp(buf, data, nbytes) == 0);
    served++;
    AM_ReplyI1(token, H_REP, buf, 16, i);
}
static void lng(void *token, void *buf, size_t nbytes, int32_t i) {
    EXPECT(nbytes == sizeof data && memcmp(buf, data, nbytes) == 0);
    served++;
    AM_Reply1(token, H_REP, i);
}
static void rep(void *token, int32_t i) {
    (void)token;
    (void)i;
    replies++;
}

static void setup(eb_t *b, ep_t *e, en_t *name) {
    EXPECT_RC(AM_AllocateBundle(AM_SEQ, b), AM_OK);
    EXPECT_RC(AM_AllocateEndpoint(*b, e, name), AM_OK);
    EXPECT_RC(AM_SetTag(*e, AM_SPMDGetTag()), AM_OK);
    EXPECT_RC(AM_SetSeg(*e, seg, sizeof seg), AM_OK);
    EXPECT_RC(AM_SetHandler(*e, 0, returned), AM_OK);
    EXPECT_RC(AM_SetHandler(*e, H_REQ, req), AM_OK);
    EXPECT_RC(AM_SetHandler(*e, H_MED, med), AM_OK);
    EXPECT_RC(AM_SetHandler(*e, H_LONG, lng), AM_OK);
    EXPECT_RC(AM_SetHandler(*e, H_REP, rep), AM_OK);
}

static void burst(ep_t e) {
    int i;
    for (i = 0; i < BURST; i++) {
        EXPECT_RC(AM_Request1(e, 0, H_REQ, i), AM_OK);
        EXPECT_RC(AM_RequestI1(e, 0, H_MED, data, sizeof data, i), AM_OK);
        EXPECT_RC(AM_RequestXfer1(e, 0, (uintptr_t)(i % 8) * sizeof data, H_LONG, data, sizeof data, i), AM_OK);
    }
}

/* After the peer's endpoint went away: a request to it must not hang and
 * must not be delivered; it is refused at once or returned to handler 0. */
static void request_to_gone(eb_t b, ep_t e) {
    int base = returned_count;
    double end = outside_now() + 10.0;
    int rc = AM_Request1(e, 0, H_REQ, 99);
    if (rc == AM_OK) {
        while (returned_count == base && outside_now() < end) AM_Poll(b);
        EXPECT(returned_count > base);
    } else {
        EXPECT_RC(rc, AM_ERR_NOT_SENT);
        EXPECT(returned_count > base);
    }
    EXPECT(last_status == EUNREACHABLE || last_status == EBADENDPOINT);
}

int main(int argc, char **argv) {
    eb_t eb0, X, Y;
    ep_t ep0, x, y;
    en_t names[2], all[4];
    int rc, i, mask;
    tag_t t;

    if (AM_SPMDStartup(&argc, &argv, &eb0, &ep0) != AM_OK) return 1;
    me = outside_rank = AM_SPMDMyProc();
    if (AM_SPMDNumProcs() != 2) {
        if (me == 0) printf("outside_teardown: needs 2 processes\n");
        AM_SPMDExit(1);
    }
    for (i = 0; i < (int)sizeof data; i++) data[i] = (char)(i * 3 + 1);
    setup(&X, &x, &names[0]);
    setup(&Y, &y, &names[1]);
    AM_SPMDAllGather(names, all, sizeof names);
    EXPECT_RC(AM_Map(x, 0, all[(1 - me) * 2 + 0], AM_SPMDGetTag()), AM_OK);
    EXPECT_RC(AM_Map(y, 0, all[(1 - me) * 2 + 1], AM_SPMDGetTag()), AM_OK);
    AM_SPMDBarrier();
    /* connect both links: one round trip each */
    EXPECT_RC(AM_Request1(x, 0, H_REQ, -1), AM_OK);
    EXPECT_RC(AM_Request1(y, 0, H_REQ, -1), AM_OK);
    outside_poll_until(X, Y, &replies, 2, "first replies");
    outside_poll_until(X, Y, &served, 2, "first requests");
    AM_SPMDBarrier();

    /* ---- 1. free an endpoint with its requests in flight ---- */
    served = 0;
    AM_SPMDBarrier();
    if (me == 0) {
        burst(x);
        EXPECT_RC(AM_FreeEndpoint(x), AM_OK);
        EXPECT_RC(AM_Poll(X), AM_OK); /* the bundle lives on, empty */
        EXPECT_RC(AM_FreeEndpoint(x), AM_ERR_BAD_ARG);
        EXPECT_RC(AM_Request1(x, 0, H_REQ, 0), AM_ERR_BAD_ARG);
    } else {
        outside_poll_until(X, NULL, &served, 3 * BURST, "the burst to x");
        outside_poll_for(X, 50);
    }
    AM_SPMDBarrier();
    if (me == 1) {
        EXPECT(served == 3 * BURST);
        request_to_gone(X, x);
    }
    AM_SPMDBarrier();

    /* ---- 2. free a bundle with its requests in flight ---- */
    served = 0;
    AM_SPMDBarrier();
    if (me == 1) {
        burst(y);
        EXPECT_RC(AM_FreeBundle(Y), AM_OK);
        EXPECT_RC(AM_Poll(Y), AM_ERR_BAD_ARG);
        EXPECT_RC(AM_GetTag(y, &t), AM_ERR_BAD_ARG);
        EXPECT_RC(AM_SetEventMask(Y, AM_NOTEMPTY), AM_ERR_BAD_ARG);
    } else {
        outside_poll_until(Y, NULL, &served, 3 * BURST, "the burst to y");
        outside_poll_for(Y, 50);
    }
    AM_SPMDBarrier();
    if (me == 0) {
        EXPECT(served == 3 * BURST);
        request_to_gone(Y, y);
    }
    AM_SPMDBarrier();

    /* ---- 3. after AM_Terminate (done by AM_SPMDExit; here on purpose, once
     * both sides are past their last message) ---- */
    {
        int errs[2], total;
        AM_SPMDAllGather(&outside_errors, errs, sizeof(int));
        total = errs[0] + errs[1];
        if (me == 0) printf("outside_teardown: 2 processes, %d errors\n", total);
        fflush(stdout);
        AM_SPMDBarrier();
        EXPECT_RC(AM_Terminate(), AM_OK);
        EXPECT_RC(AM_Poll(eb0), AM_ERR_NOT_INIT);
        EXPECT_RC(AM_AllocateBundle(AM_SEQ, &X), AM_ERR_NOT_INIT);
        EXPECT_RC(AM_GetEventMask(eb0, &mask), AM_ERR_NOT_INIT);
        EXPECT_RC(AM_Request1(ep0, 0, H_REQ, 0), AM_ERR_NOT_INIT);
        EXPECT_RC(AM_Terminate(), AM_ERR_NOT_INIT);
        /* a fresh start in the same process */
        EXPECT_RC(AM_Init(), AM_OK);
        EXPECT_RC(AM_AllocateBundle(AM_SEQ, &X), AM_OK);
        EXPECT_RC(AM_AllocateEndpoint(X, &x, &names[0]), AM_OK);
        EXPECT_RC(AM_Poll(X), AM_OK);
        rc = AM_Terminate();
        EXPECT_RC(rc, AM_OK);
        if (outside_errors) fprintf(stderr, "rank %d: FAILED after AM_Terminate\n", me);
        return outside_errors || total ? 1 : 0;
    }
}
