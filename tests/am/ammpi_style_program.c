/*
 * ammpi_style_program.c - an AM-2 program written as for Berkeley AMMPI: it
 * includes <ammpi.h> and <ammpi_spmd.h> (two-line forwarding headers to
 * viastack's am.h and am_spmd.h, cmake/package-tests/amx/) and uses AMMPI's
 * names: AMMPI_SPMDSetThreadMode, AMMPI_SPMDStartup, AMMPI_SPMDBroadcast,
 * the generic AMMPI_Request/AMMPI_Reply entry points, AMMPI_GetSourceId,
 * AMMPI_SetHandlerCallbacks, AM-2's AM_GetXferN, AMX_SPMDkillmyprocess and the non-collective
 * AMMPI_SPMDExit.  Run under vipl-run with any number of ranks; every rank
 * prints "rank R: killmyprocess(0)" as the job ends, and rank 0 first prints
 * "ammpi_style_program: N processes, E errors".
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ammpi.h>
#include <ammpi_spmd.h>

#define H_PING 1
#define H_PONG 2
#define H_GOT 3
#define H_XFER 4
#define NPING 50
#define SEGLEN (256 * 1024)
#define GETLEN 40000        /* bytes per get: a long reply by RDMA */
#define GETDST (128 * 1024) /* where the gets land in our segment */
#define BCASTLEN 10000      /* more than one vipl_boot item */

static ep_t ep;
static eb_t eb;
static int me, n, errors;
static volatile int pongs, got_count, xfers, returned_badseg, returned_badentry;
static unsigned char seg[SEGLEN];

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            errors++;                                                                                                  \
            printf("rank %d: FAILED %s: ", me, #cond);                                                                 \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
            fflush(stdout);                                                                                            \
        }                                                                                                              \
    } while (0)

static unsigned char pattern(int rank, int i) { return (unsigned char)(rank * 37 + i * 11 + 5); }

static void ping(void *token, int src, int i) {
    int id = -1;
    CHECK(AMMPI_GetSourceId(token, &id) == AM_OK && id == src, "GetSourceId gave %d, the sender is %d", id, src);
    CHECK(AMMPI_Reply(token, H_PONG, 2, i + 1, me) == AM_OK, "AMMPI_Reply");
}
static void pong(void *token, int v, int from) {
    (void)token;
    (void)v;
    (void)from;
    pongs++;
}
static void got(void *token, void *buf, int nbytes, int from, int tagv) {
    (void)token;
    CHECK(buf == seg + GETDST && nbytes == GETLEN, "get landed at %p (%d bytes)", buf, nbytes);
    CHECK(tagv == 77, "get argument %d", tagv);
    for (int i = 0; i < nbytes; i++)
        if (((unsigned char *)buf)[i] != pattern(from, i)) {
            CHECK(0, "get byte %d is %d, rank %d's pattern says %d", i, ((unsigned char *)buf)[i], from,
                  pattern(from, i));
            break;
        }
    got_count++;
}
static void xfer(void *token, void *buf, int nbytes, int a0) {
    CHECK(nbytes == 64 && buf == seg + 1024 * (1 + a0), "RequestXfer of %d bytes at %p", nbytes, buf);
    CHECK(AMMPI_Reply(token, H_PONG, 2, 0, me) == AM_OK, "reply to an xfer");
    xfers++;
}
static void returned(int status, op_t opcode, void *token) {
    (void)token;
    if (status == EBADSEGOFF && opcode == AM_REQUEST_XFER_M) returned_badseg++;
    else if (status == EBADENTRY && opcode == AM_REQUEST_XFER_M) returned_badentry++;
    else CHECK(0, "unexpected returned message: status %d opcode %d", status, opcode);
}

/* Handler callbacks: every user handler is bracketed by pre and post.  Request
   handlers never nest; a reply handler may run inside a request handler whose
   reply waits for a send slot (docs/am.md, the deadlock rule), so the brackets
   nest at most one deep, a reply inside a request. */
static volatile int pre_calls, post_calls, pre_pings;
static int open_is_req[2];
static void pre_cb(ammpi_category_t cat, int isReq, int handlerId, void *token, void *buf, size_t nbytes, int numargs,
                   uint32_t *args) {
    (void)buf;
    const int depth = pre_calls - post_calls;
    CHECK(token != NULL && (depth == 0 || (depth == 1 && open_is_req[0] && !isReq)),
          "pre callback nesting: depth %d, outer %s, inner %s", depth,
          depth ? (open_is_req[0] ? "request" : "reply") : "-", isReq ? "request" : "reply");
    if (depth >= 0 && depth < 2) open_is_req[depth] = isReq;
    if (handlerId == H_PING) {
        CHECK(cat == ammpi_Short && isReq && numargs == 2 && nbytes == 0 && (int)args[0] >= 0 && (int)args[0] < n,
              "pre callback of a ping: cat %d isReq %d numargs %d", (int)cat, isReq, numargs);
        pre_pings++;
    }
    pre_calls++;
}
static void post_cb(ammpi_category_t cat, int isReq) {
    (void)cat;
    const int depth = pre_calls - post_calls;
    CHECK(depth >= 1 && depth <= 2 && open_is_req[depth - 1] == isReq, "post callback without its pre (depth %d)",
          depth);
    post_calls++;
}

static void my_kill(int code) {
    printf("rank %d: killmyprocess(%d)\n", me, code);
    fflush(stdout);
    _exit(code);
}

static void poll_until(volatile int *counter, int target) {
    for (long spins = 0; *counter < target; spins++) {
        AM_Poll(eb);
        if (spins > 200000000L) {
            CHECK(0, "waited too long: %d of %d", *counter, target);
            return;
        }
    }
}

int main(int argc, char **argv) {
    const char *level = NULL;
    CHECK(AMMPI_SPMDSetThreadMode(0, &level, &argc, &argv) != 0 && level, "SetThreadMode");
    uint64_t pid = 0;
    if (AMMPI_SPMDStartup(&argc, &argv, 0, &pid, &eb, &ep) != AM_OK) {
        printf("AMMPI_SPMDStartup failed\n");
        return 1;
    }
    me = AMMPI_SPMDMyProc();
    n = AMMPI_SPMDNumProcs();
    AMX_SPMDkillmyprocess = my_kill;
    for (int i = 0; i < SEGLEN; i++) seg[i] = pattern(me, i);
    CHECK(AM_SetSeg(ep, seg, SEGLEN) == AM_OK, "AM_SetSeg");
    AM_SetHandler(ep, 0, returned);
    AM_SetHandler(ep, H_PING, ping);
    AM_SetHandler(ep, H_PONG, pong);
    AM_SetHandler(ep, H_GOT, got);
    AM_SetHandler(ep, H_XFER, xfer);
    CHECK(AMMPI_SetHandlerCallbacks(ep, pre_cb, post_cb) == AM_OK, "SetHandlerCallbacks");
    AMMPI_SPMDBarrier();

    /* Broadcast from the last rank, more than one bootstrap item. */
    static unsigned char b[BCASTLEN];
    for (int i = 0; i < BCASTLEN; i++) b[i] = me == n - 1 ? pattern(99, i) : 0;
    CHECK(AMMPI_SPMDBroadcast(b, BCASTLEN, n - 1) == AM_OK, "broadcast");
    for (int i = 0; i < BCASTLEN; i++)
        if (b[i] != pattern(99, i)) {
            CHECK(0, "broadcast byte %d", i);
            break;
        }
    CHECK(AMMPI_SPMDBroadcast(b, 1, n) == AM_ERR_BAD_ARG, "a broadcast from rank %d is refused", n);

    /* Generic requests and replies to every rank, itself included. */
    for (int r = 0; r < n; r++)
        for (int i = 0; i < NPING; i++) CHECK(AMMPI_Request(ep, r, H_PING, 2, me, i) == AM_OK, "AMMPI_Request");
    poll_until(&pongs, n * NPING);
    AMMPI_SPMDBarrier(); /* every rank's pings have run here */
    CHECK(pre_pings == n * NPING && pre_calls == post_calls && pre_calls >= 2 * n * NPING,
          "callbacks: %d pings, %d pre, %d post", pre_pings, pre_calls, post_calls);
    CHECK(AMMPI_SetHandlerCallbacks(ep, NULL, NULL) == AM_OK, "callbacks off");
    CHECK(AMMPI_Request(ep, 0, H_PING, 17) == AM_ERR_BAD_ARG, "17 arguments are refused");

    /* A generic long request into the next rank's segment. */
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    CHECK(AMMPI_RequestXfer(ep, next, H_XFER, seg, 64, (uintptr_t)(1024 * (1 + me)), 0, 1, me) == AM_OK, "xfer");
    poll_until(&pongs, n * NPING + 1);
    AMMPI_SPMDBarrier();
    CHECK(xfers == 1, "%d xfers arrived", xfers);
    for (int i = 0; i < SEGLEN; i++) seg[i] = pattern(me, i); /* undo the xfer */
    AMMPI_SPMDBarrier();

    /* Gets: the previous rank's bytes from offset 0 land at GETDST here. */
    CHECK(AM_GetXfer2(ep, prev, 0, H_GOT, GETDST, GETLEN, prev, 77) == AM_OK, "AM_GetXfer2");
    poll_until(&got_count, 1);
    /* A source outside the peer's segment comes back to handler 0. */
    CHECK(AM_GetXfer0(ep, prev, SEGLEN + 8, H_GOT, 0, 16) == AM_OK, "a bad get is sent");
    poll_until(&returned_badseg, 1);
    CHECK(AM_GetXfer0(ep, prev, 0, 0, 0, 16) == AM_ERR_BAD_ARG, "handler 0 is refused");
    CHECK(AM_GetXfer0(ep, 100000, 0, H_GOT, 0, 16) == AM_ERR_BAD_ARG, "an index outside the table is refused");
    /* An unmapped index: not sent, and handler 0 hears EBADENTRY. */
    CHECK(AM_GetXfer0(ep, n + 5, 0, H_GOT, 0, 16) == AM_ERR_NOT_SENT, "an unmapped index is not sent");
    CHECK(returned_badentry == 1, "handler 0 heard %d EBADENTRY", returned_badentry);
    AMMPI_SPMDBarrier();

    int all[256];
    CHECK(n <= 256, "at most 256 ranks here");
    AMMPI_SPMDAllGather(&errors, all, sizeof(int));
    if (me == 0) {
        int sum = 0;
        for (int r = 0; r < n; r++) sum += all[r];
        printf("ammpi_style_program: %d processes, %d errors\n", n, sum);
        fflush(stdout);
    }
    AMMPI_SPMDBarrier();
    /* The AMMPI exit path: rank 0 ends the job; every other rank is ended by
     * the notice at its next poll, through AMX_SPMDkillmyprocess. */
    if (me == 0) AMMPI_SPMDExit(0);
    for (;;) {
        AM_Poll(eb);
        usleep(100);
    }
}
