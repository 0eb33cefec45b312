/*
 * amudp_style_program.c - an AM-2 program written as for Berkeley AMUDP
 * (amudp_spmd.h names: AMUDP_SPMDStartup, AMUDP_SPMDExit, the statistics
 * calls), built against viastack's am.h/am_spmd.h.  Also the test of the amx
 * SPMD and statistics extensions (tests/am/CMakeLists.txt):
 *
 *   amudp_style_program stats   known traffic; exact statistics; aggregate;
 *                               dump parsed; getenvMaster; AllGather; IsWorker
 *   amudp_style_program exit C  the last rank calls AMUDP_SPMDExit(C) while the
 *                               others wait in a barrier; every rank's exit
 *                               callback prints; the job ends with code C
 *   amudp_style_program fatal   the last rank calls AMUDP_FatalErr
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am.h"
#include "am_spmd.h"

#define NS 20 /* short requests to each rank, short replies (1 arg) */
#define NM 10 /* medium requests (100 bytes, 1 arg), medium replies (50 bytes) */
#define NB 2  /* mediums above 4096 bytes (5000, by RDMA), short replies */
#define NL 5  /* long requests (1000 bytes, 3 args), long replies (64 bytes) */
#define MB 100
#define MR 50
#define BB 5000
#define LB 1000
#define LR 64
#define DEPTH 4 /* request credits per peer (networkdepth) */

static ep_t ep;
static eb_t eb;
static int me, n, errors;
static volatile int replies;
static char seg[(1 << 20)];
static char buf[BB];

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            errors++;                                                                                                  \
            printf("rank %d: FAILED %s: ", me, #cond);                                                                 \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
        }                                                                                                              \
    } while (0)

static void short_req(void *token, int a0, int a1) { AM_Reply1(token, 10, a0 + a1); }
static void medium_req(void *token, void *b, int nbytes, int a0) {
    (void)b;
    (void)nbytes;
    (void)a0;
    AM_ReplyI0(token, 11, buf, MR);
}
static void bounce_req(void *token, void *b, int nbytes) {
    (void)b;
    AM_Reply1(token, 10, nbytes);
}
static void long_req(void *token, void *b, int nbytes, int a0, int a1, int a2) {
    (void)b;
    (void)nbytes;
    (void)a1;
    (void)a2;
    AM_ReplyXfer0(token, (uintptr_t)a0, 12, buf, LR);
}
static void short_rep(void *token, int a0) {
    (void)token;
    (void)a0;
    replies++;
}
static void medium_rep(void *token, void *b, int nbytes) {
    (void)token;
    (void)b;
    (void)nbytes;
    replies++;
}
static void long_rep(void *token, void *b, int nbytes) {
    (void)token;
    (void)b;
    (void)nbytes;
    replies++;
}

static void traffic(int ns, int nm, int nb, int nl) {
    int d, i, expect = replies + n * (ns + nm + nb + nl);
    for (d = 0; d < n; d++) {
        for (i = 0; i < ns; i++) AM_Request2(ep, d, 1, i, d);
        for (i = 0; i < nm; i++) AM_RequestI1(ep, d, 2, buf, MB, i);
        for (i = 0; i < nb; i++) AM_RequestI0(ep, d, 3, buf, BB);
        for (i = 0; i < nl; i++) AM_RequestXfer3(ep, d, (uintptr_t)(me * 4096), 4, buf, LB, me * 4096, 0, 0);
    }
    while (replies < expect) AM_Poll(eb);
    AMUDP_SPMDBarrier(); /* every rank's replies to us have been sent, too */
}

/* "Name: short A medium B long C total T" from a dump. */
static int dump_line(const char *text, const char *name, unsigned long long v[4]) {
    const char *p = strstr(text, name);
    if (!p) return 0;
    return sscanf(p + strlen(name), " short %llu medium %llu long %llu total %llu", &v[0], &v[1], &v[2], &v[3]) == 4;
}
static long long dump_value(const char *text, const char *name) {
    const char *p = strstr(text, name);
    long long v = -1;
    if (p) sscanf(p + strlen(name), " %lld", &v);
    return v;
}

static int run_stats(void) {
    amudp_stats_t st, sum = AMUDP_initial_stats, *all;
    unsigned long long v[4];
    const char *text;
    int r, c, gathered[3], *everyone;
    const unsigned long long N = (unsigned long long)n;

    /* getenvMaster: rank 0's value, whatever this rank's own environment says */
    const char *val = AMUDP_SPMDgetenvMaster("AMUDP_STYLE_VAR");
    CHECK(val && strcmp(val, "rank0") == 0, "getenvMaster gave %s", val ? val : "NULL");
    CHECK(AMUDP_SPMDgetenvMaster("AMUDP_STYLE_NO_SUCH_VAR") == NULL, "unknown key");
    CHECK(AMUDP_SPMDIsWorker(NULL), "started by vipl-run, so a worker");

    /* AllGather */
    gathered[0] = me;
    gathered[1] = me * me;
    gathered[2] = 42;
    everyone = (int *)malloc(sizeof gathered * (size_t)n);
    CHECK(AMUDP_SPMDAllGather(gathered, everyone, sizeof gathered) == AM_OK, "AllGather");
    for (r = 0; r < n; r++)
        CHECK(everyone[3 * r] == r && everyone[3 * r + 1] == r * r && everyone[3 * r + 2] == 42,
              "AllGather item of rank %d", r);
    free(everyone);

    /* warm-up traffic, then reset: only the pattern below is counted */
    traffic(3, 1, 1, 1);
    CHECK(AMX_ResetEndpointStatistics(ep) == AM_OK, "reset");
    AMUDP_SPMDBarrier(); /* nobody sends before every rank has reset */
    traffic(NS, NM, NB, NL);
    CHECK(AMUDP_GetEndpointStatistics(ep, &st) == AM_OK, "get");

    for (c = 0; c < AMVIA_NumCategories; c++) {
        CHECK(st.RequestsReceived[c] == st.RequestsSent[c], "category %d requests in/out", c);
        CHECK(st.RepliesReceived[c] == st.RepliesSent[c], "category %d replies in/out", c);
    }
    CHECK(st.RequestsSent[0] == NS * N, "short requests %llu", (unsigned long long)st.RequestsSent[0]);
    CHECK(st.RequestsSent[1] == (NM + NB) * N, "medium requests %llu", (unsigned long long)st.RequestsSent[1]);
    CHECK(st.RequestsSent[2] == NL * N, "long requests %llu", (unsigned long long)st.RequestsSent[2]);
    CHECK(st.RepliesSent[0] == (NS + NB) * N, "short replies %llu", (unsigned long long)st.RepliesSent[0]);
    CHECK(st.RepliesSent[1] == NM * N, "medium replies %llu", (unsigned long long)st.RepliesSent[1]);
    CHECK(st.RepliesSent[2] == NL * N, "long replies %llu", (unsigned long long)st.RepliesSent[2]);
    CHECK(st.RequestDataBytesSent[0] == NS * N * 8, "short request data");
    CHECK(st.RequestDataBytesSent[1] == N * (NM * (4 + MB) + NB * BB), "medium request data %llu",
          (unsigned long long)st.RequestDataBytesSent[1]);
    CHECK(st.RequestDataBytesSent[2] == N * NL * (12 + LB), "long request data");
    CHECK(st.ReplyDataBytesSent[0] == N * (NS + NB) * 4, "short reply data");
    CHECK(st.ReplyDataBytesSent[1] == N * NM * MR, "medium reply data");
    CHECK(st.ReplyDataBytesSent[2] == N * NL * LR, "long reply data");
    {
        unsigned long long tot = 0;
        for (c = 0; c < AMVIA_NumCategories; c++) {
            tot += st.RequestTotalBytesSent[c] + st.ReplyTotalBytesSent[c];
            /* each message: a 16-byte header at least, on top of its data */
            CHECK(st.RequestTotalBytesSent[c] >= st.RequestDataBytesSent[c] + 16 * st.RequestsSent[c],
                  "request total bytes of category %d", c);
            CHECK(st.ReplyTotalBytesSent[c] >= st.ReplyDataBytesSent[c] + 16 * st.RepliesSent[c],
                  "reply total bytes of category %d", c);
        }
        CHECK(st.TotalBytesSent == tot, "TotalBytesSent %llu != %llu", (unsigned long long)st.TotalBytesSent, tot);
    }
    CHECK(st.ReturnedMessages == 0, "returned");
    CHECK(st.Endpoints == 1, "Endpoints");

    /* this rank's dump parses back to the same numbers */
    text = AMUDP_DumpStatistics(NULL, &st, 0);
    CHECK(dump_line(text, "Requests sent:", v) && v[0] == st.RequestsSent[0] && v[1] == st.RequestsSent[1] &&
              v[2] == st.RequestsSent[2] && v[3] == v[0] + v[1] + v[2],
          "dump: Requests sent");
    CHECK(dump_line(text, "Replies received:", v) && v[0] == st.RepliesReceived[0] && v[2] == st.RepliesReceived[2],
          "dump: Replies received");
    CHECK(dump_value(text, "Total bytes sent:") == (long long)st.TotalBytesSent, "dump: Total bytes sent");

    /* aggregate over the job (gathered to every rank) */
    all = (amudp_stats_t *)malloc(sizeof st * (size_t)n);
    CHECK(AMUDP_SPMDAllGather(&st, all, sizeof st) == AM_OK, "AllGather stats");
    for (r = 0; r < n; r++) AMUDP_AggregateStatistics(&sum, &all[r]);
    free(all);
    CHECK(sum.Endpoints == N, "aggregate Endpoints");
    CHECK(sum.RequestsSent[0] == NS * N * N && sum.RequestsReceived[2] == NL * N * N, "aggregate counts");
    CHECK(sum.TotalBytesSent == N * st.TotalBytesSent, "aggregate bytes (the pattern is symmetric)");
    if (me == 0) {
        text = AMUDP_DumpStatistics(stdout, &sum, 1);
        CHECK(dump_line(text, "Requests sent:", v) && v[0] == NS * N * N && v[1] == (NM + NB) * N * N &&
                  v[2] == NL * N * N,
              "global dump: Requests sent");
        CHECK(dump_value(text, "Unreceived requests:") == 0 && dump_value(text, "Unreceived replies:") == 0,
              "global dump: balance");
        CHECK(strstr(text, "AM statistics (global,") != NULL, "global dump header");
    }

    /* credit stalls: 3*DEPTH requests in a row to one rank cannot all find a credit */
    AMUDP_SPMDBarrier();
    AMX_ResetEndpointStatistics(ep);
    AMUDP_SPMDBarrier();
    {
        int i, expect = replies + 3 * DEPTH;
        for (i = 0; i < 3 * DEPTH; i++) AM_Request2(ep, (me + 1) % n, 1, i, 0);
        while (replies < expect) AM_Poll(eb);
    }
    AMUDP_GetEndpointStatistics(ep, &st);
    CHECK(st.CreditStalls >= 1, "credit stalls %llu", (unsigned long long)st.CreditStalls);
    CHECK(st.RequestsSent[0] == 3 * DEPTH, "burst requests");
    AMUDP_SPMDBarrier();
    printf("rank %d: %d errors\n", me, errors);
    return errors;
}

static void on_exit_cb(int code) { printf("exit callback: rank %d code %d\n", me, code); }

int main(int argc, char **argv) {
    uint64_t pid = 0;
    const char *mode = argc > 1 ? argv[1] : "stats";
    const char *rank_env = getenv("VIASTACK_RANK");
    /* each rank's own value; getenvMaster must give rank 0's */
    char mine[32];
    snprintf(mine, sizeof mine, "rank%s", rank_env ? rank_env : "0");
    setenv("AMUDP_STYLE_VAR", mine, 1);

    if (AMUDP_SPMDStartup(&argc, &argv, 0, DEPTH, NULL, &pid, &eb, &ep) != AM_OK) {
        fprintf(stderr, "startup failed\n");
        return 2;
    }
    me = AMUDP_SPMDMyProc();
    n = AMUDP_SPMDNumProcs();
    AMUDP_SPMDSetExitCallback(on_exit_cb);
    AM_SetSeg(ep, seg, sizeof seg);
    AM_SetHandler(ep, 1, short_req);
    AM_SetHandler(ep, 2, medium_req);
    AM_SetHandler(ep, 3, bounce_req);
    AM_SetHandler(ep, 4, long_req);
    AM_SetHandler(ep, 10, short_rep);
    AM_SetHandler(ep, 11, medium_rep);
    AM_SetHandler(ep, 12, long_rep);
    AMUDP_SPMDBarrier();
    if (me == 0) printf("amudp_style_program: %d processes, job id %llx, mode %s\n", n, (unsigned long long)pid, mode);

    if (strcmp(mode, "exit") == 0) {
        int code = argc > 2 ? atoi(argv[2]) : 7;
        if (me == n - 1) AMUDP_SPMDExit(code);
        AMUDP_SPMDBarrier(); /* never completes: the last rank ended the job */
        printf("rank %d: ERROR: the barrier returned\n", me);
        return 3;
    }
    if (strcmp(mode, "fatal") == 0) {
        if (me == n - 1) AMUDP_FatalErr("test fatal error %d on rank %d", 42, me);
        AMUDP_SPMDBarrier();
        printf("rank %d: ERROR: the barrier returned\n", me);
        return 3;
    }
    {
        int errs = run_stats(), total = 0, r, *all = (int *)malloc(sizeof(int) * (size_t)n);
        AMUDP_SPMDAllGather(&errs, all, sizeof errs);
        for (r = 0; r < n; r++) total += all[r];
        free(all);
        if (me == 0) printf("amudp_style_program: %d processes, %d errors\n", n, total);
        AM_SPMDExit(total ? 1 : 0); /* the collective exit: every rank */
    }
    return 0;
}
