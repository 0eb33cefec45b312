/* outside_par.c - an AM_PAR bundle used by several threads at once (AM-2
 * spec, "Endpoints and bundles": a bundle of type AM_PAR may be accessed
 * concurrently by several threads; handlers run in the thread that polls;
 * "Events": AM_WaitSema).  Two processes.
 *
 * Each process makes one AM_PAR bundle with one endpoint and maps the peer's
 * endpoint.  NTHREADS threads each send NREQ short requests naming (thread,
 * sequence) and poll the bundle until their replies are in; the request
 * handler counts each (thread, sequence) and replies with it.  Afterwards
 * every request handler and every reply handler must have run exactly once.
 * Then one thread waits in AM_WaitSema while another sends, and the waiter
 * wakes. */
#include <pthread.h>
#include <stdlib.h>

#include "outside_common.h"

#define NTHREADS 4
#define NREQ 500
#define H_REQ 20
#define H_REP 21

static eb_t bundle;
static ep_t endpoint;
static int seen_req[NTHREADS][NREQ];
static int seen_rep[NTHREADS][NREQ];
static int replies[NTHREADS];
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void req_handler(void *token, int32_t thread, int32_t seq) {
    EXPECT(thread >= 0 && thread < NTHREADS && seq >= 0 && seq < NREQ);
    if (thread >= 0 && thread < NTHREADS && seq >= 0 && seq < NREQ) {
        pthread_mutex_lock(&count_lock);
        seen_req[thread][seq]++;
        pthread_mutex_unlock(&count_lock);
    }
    EXPECT_RC(AM_Reply2(token, H_REP, thread, seq), AM_OK);
}

static void rep_handler(void *token, int32_t thread, int32_t seq) {
    (void)token;
    EXPECT(thread >= 0 && thread < NTHREADS && seq >= 0 && seq < NREQ);
    if (thread >= 0 && thread < NTHREADS && seq >= 0 && seq < NREQ) {
        pthread_mutex_lock(&count_lock);
        seen_rep[thread][seq]++;
        replies[thread]++;
        pthread_mutex_unlock(&count_lock);
    }
}

static int replies_of(int thread) {
    int n;
    pthread_mutex_lock(&count_lock);
    n = replies[thread];
    pthread_mutex_unlock(&count_lock);
    return n;
}

static void *sender(void *arg) {
    int me = (int)(intptr_t)arg, seq;
    double end;
    for (seq = 0; seq < NREQ; seq++) {
        EXPECT_RC(AM_Request2(endpoint, 0, H_REQ, me, seq), AM_OK);
        AM_Poll(bundle);
    }
    end = outside_now() + 20.0;
    while (replies_of(me) < NREQ && outside_now() < end) AM_Poll(bundle);
    EXPECT(replies_of(me) == NREQ);
    return NULL;
}

static volatile int woke;
static void *waiter(void *arg) {
    (void)arg;
    EXPECT_RC(AM_SetEventMask(bundle, AM_NOTEMPTY), AM_OK);
    EXPECT_RC(AM_WaitSema(bundle), AM_OK);
    woke = 1;
    return NULL;
}

int main(int argc, char **argv) {
    eb_t spmd_eb;
    ep_t spmd_ep;
    en_t mine, all[2];
    pthread_t th[NTHREADS], w;
    int i, t, s, peer;
    if (AM_SPMDStartup(&argc, &argv, &spmd_eb, &spmd_ep) != AM_OK) return 1;
    outside_rank = AM_SPMDMyProc();
    if (AM_SPMDNumProcs() != 2) {
        if (outside_rank == 0) fprintf(stderr, "outside_par: run on 2 processes\n");
        AM_SPMDExit(2);
    }
    peer = 1 - outside_rank;
    EXPECT_RC(AM_AllocateBundle(AM_PAR, &bundle), AM_OK);
    EXPECT_RC(AM_AllocateEndpoint(bundle, &endpoint, &mine), AM_OK);
    EXPECT_RC(AM_SetTag(endpoint, 99), AM_OK);
    EXPECT_RC(AM_SetHandler(endpoint, H_REQ, req_handler), AM_OK);
    EXPECT_RC(AM_SetHandler(endpoint, H_REP, rep_handler), AM_OK);
    if (outside_errors) outside_finish("outside_par");
    AM_SPMDAllGather(&mine, all, sizeof mine);
    EXPECT_RC(AM_Map(endpoint, 0, all[peer], 99), AM_OK);
    AM_SPMDBarrier();

    for (i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, sender, (void *)(intptr_t)i);
    for (i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    /* The peer's threads may still want our handlers: serve them until both are done. */
    {
        double end = outside_now() + 20.0;
        int done = 0, total;
        while (outside_now() < end) {
            pthread_mutex_lock(&count_lock);
            total = 0;
            for (t = 0; t < NTHREADS; t++)
                for (s = 0; s < NREQ; s++) total += seen_req[t][s];
            pthread_mutex_unlock(&count_lock);
            if (total >= NTHREADS * NREQ) {
                done = 1;
                break;
            }
            AM_Poll(bundle);
        }
        EXPECT(done);
    }
    for (t = 0; t < NTHREADS; t++)
        for (s = 0; s < NREQ; s++) {
            EXPECT(seen_req[t][s] == 1);
            EXPECT(seen_rep[t][s] == 1);
        }
    AM_SPMDBarrier();

    /* AM_WaitSema in one thread wakes for a request another process sends. */
    if (outside_rank == 0) {
        pthread_create(&w, NULL, waiter, NULL);
        AM_SPMDBarrier(); /* waiter started (it may still be on its way into the wait) */
        outside_poll_until(NULL, NULL, &woke, 1, "the AM_WaitSema thread to wake");
        pthread_join(w, NULL);
        AM_Poll(bundle); /* handles the request the wait took, which replies */
    } else {
        int before = replies_of(0);
        AM_SPMDBarrier();
        EXPECT_RC(AM_Request2(endpoint, 0, H_REQ, 0, 0), AM_OK);
        {
            double end = outside_now() + 10.0;
            while (replies_of(0) == before && outside_now() < end) AM_Poll(bundle);
        }
        EXPECT(replies_of(0) == before + 1);
    }
    AM_SPMDBarrier();
    EXPECT_RC(AM_FreeBundle(bundle), AM_OK);
    outside_finish("outside_par");
    return 0;
}
