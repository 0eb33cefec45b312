/* ofi_threads.c - a libfabric program with 4 threads per process, written
 * from libfabric's man pages (fi_getinfo(3), fi_domain(3) "Threading Models",
 * fi_endpoint(3), fi_cq(3), fi_msg(3), fi_av(3), fi_cm(3), fi_eq(3)).
 *
 *   ofi_threads msg|rdm [iterations]
 *
 * Two ranks under vipl-run.  The domain is opened at FI_THREAD_SAFE.  Each of
 * the 4 threads of a rank has an endpoint of its own; the endpoints of a rank
 * share one completion queue, which every thread polls: a completion read by
 * one thread may belong to another, whose operation context it marks done.
 * Thread t of rank 1 sends messages of varying size (1 B .. 20 KB: eager and,
 * under ofi_rxm, rendezvous sizes) with a pattern of (t, iteration) to thread t
 * of rank 0, which checks every byte and echoes the message; rank 1 checks
 * the echo.  All four pairs run at once.
 *
 *  msg: the provider's FI_EP_MSG endpoints (provider "viastack"): rank 0
 *       listens on one passive endpoint, rank 1 connects 4 times; the
 *       connection data names the thread.
 *  rdm: FI_EP_RDM over "viastack;ofi_rxm": thread t's endpoint is bound to
 *       service 7310+t on rank 0 and 7320+t on rank 1; each rank inserts the
 *       other's 4 names (node "0" / "1": ranks by the VIPL name service) into
 *       one shared address vector.
 */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ofi_check.h"

#define NTHREADS 4
#define MAXMSG (20 * 1000)
#define MSG_SERVICE "7300"

static int rank, rdm;
static long iterations = 200;

static struct fi_info *info; /* the provider's answer to our hints */
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;
static struct fid_cq *cq; /* shared by every endpoint of this rank */
static struct fid_av *av; /* rdm: shared by every endpoint of this rank */

/* An operation's context: whichever thread reads its completion marks it. */
struct op {
    struct fi_context2 ctx; /* fi_getinfo(3) FI_CONTEXT2: the provider's scratch space */
    atomic_int done;
    size_t len;
};

struct worker {
    int t;
    struct fid_ep *ep;
    struct fid_mr *mr;
    fi_addr_t peer; /* rdm: the partner thread's endpoint */
    uint8_t *sbuf, *rbuf;
    pthread_t th;
};
static struct worker workers[NTHREADS];

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One pass over the shared CQ: completions of any thread's operations. */
static void poll_cq(void) {
    struct fi_cq_msg_entry e[8];
    ssize_t n = fi_cq_read(cq, e, 8);
    if (n == -FI_EAGAIN) return;
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err = {0};
        fi_cq_readerr(cq, &err, 0);
        FAIL("completion error %d (%s)", err.err, fi_strerror(err.err));
    }
    if (n < 0) FAIL("fi_cq_read = %zd (%s)", n, fi_strerror((int)-n));
    for (ssize_t i = 0; i < n; i++) {
        struct op *o = e[i].op_context;
        if (!o) FAIL("a completion without its context");
        o->len = e[i].len;
        if (atomic_exchange_explicit(&o->done, 1, memory_order_release)) FAIL("an operation completed twice");
    }
}

static void wait_op(struct op *o, const char *what) {
    double deadline = now_s() + 60;
    for (unsigned spin = 0; !atomic_load_explicit(&o->done, memory_order_acquire); spin++) {
        poll_cq();
        if ((spin & 1023) == 1023) {
            if (now_s() > deadline) FAIL("no completion of %s within 60 s", what);
            sched_yield();
        }
    }
}

static size_t size_of(long k) {
    static const size_t sizes[] = {1, 64, 200, 1000, 4096, MAXMSG, 17, 8192};
    return sizes[k % (sizeof(sizes) / sizeof(sizes[0]))];
}
static uint8_t pattern(int t, long k, size_t i) { return (uint8_t)(t * 61 + k * 7 + i * 13 + 1); }

static void post_recv(struct worker *w, struct op *o) {
    atomic_store(&o->done, 0);
    for (;;) {
        ssize_t rc = fi_recv(w->ep, w->rbuf, MAXMSG, fi_mr_desc(w->mr), rdm ? w->peer : 0, o);
        if (rc == 0) return;
        if (rc != -FI_EAGAIN) FAIL("fi_recv = %zd (%s)", rc, fi_strerror((int)-rc));
        poll_cq();
    }
}

static void send_msg(struct worker *w, struct op *o, size_t len) {
    atomic_store(&o->done, 0);
    for (;;) {
        ssize_t rc = fi_send(w->ep, w->sbuf, len, fi_mr_desc(w->mr), rdm ? w->peer : 0, o);
        if (rc == 0) return;
        if (rc != -FI_EAGAIN) FAIL("fi_send = %zd (%s)", rc, fi_strerror((int)-rc));
        poll_cq();
    }
}

static void check(const struct worker *w, long k, const uint8_t *b, size_t len, size_t want, const char *who) {
    if (len != want) FAIL("thread %d iteration %ld: %s %zu bytes, expected %zu", w->t, k, who, len, want);
    for (size_t i = 0; i < len; i++)
        if (b[i] != pattern(w->t, k, i))
            FAIL("thread %d iteration %ld: %s byte %zu is %u, expected %u", w->t, k, who, i, b[i], pattern(w->t, k, i));
}

static void *run(void *arg) {
    struct worker *w = arg;
    struct op r, s;
    for (long k = 0; k < iterations; k++) {
        size_t len = size_of(k);
        post_recv(w, &r);
        if (rank == 1) {
            for (size_t i = 0; i < len; i++) w->sbuf[i] = pattern(w->t, k, i);
            send_msg(w, &s, len);
            wait_op(&s, "a send");
            wait_op(&r, "the echo");
            check(w, k, w->rbuf, r.len, len, "echo of");
        } else {
            wait_op(&r, "a message");
            check(w, k, w->rbuf, r.len, len, "received");
            memcpy(w->sbuf, w->rbuf, len);
            send_msg(w, &s, len);
            wait_op(&s, "the echo's send");
        }
    }
    return NULL;
}

static struct fi_info *hints_for(void) {
    struct fi_info *h = fi_allocinfo();
    h->caps = FI_MSG;
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->ep_attr->type = rdm ? FI_EP_RDM : FI_EP_MSG;
    h->domain_attr->threading = FI_THREAD_SAFE;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    h->fabric_attr->prov_name = strdup(rdm ? "viastack;ofi_rxm" : "viastack");
    return h;
}

static void open_worker(struct worker *w, struct fi_info *i) {
    CHECK(fi_endpoint(domain, i, &w->ep, w));
    CHECK(fi_ep_bind(w->ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    if (rdm) CHECK(fi_ep_bind(w->ep, &av->fid, 0));
    else CHECK(fi_ep_bind(w->ep, &eq->fid, 0));
    CHECK(fi_enable(w->ep));
    w->sbuf = malloc(2 * MAXMSG);
    w->rbuf = w->sbuf + MAXMSG;
    CHECK(fi_mr_reg(domain, w->sbuf, 2 * MAXMSG, FI_SEND | FI_RECV, 0, 0, 0, &w->mr, NULL));
}

static void wait_event(uint32_t want, struct fi_eq_cm_entry *entry, size_t len) {
    uint32_t event;
    ssize_t rc = fi_eq_sread(eq, &event, entry, len, 30000, 0);
    if (rc == -FI_EAVAIL) {
        struct fi_eq_err_entry err = {0};
        fi_eq_readerr(eq, &err, 0);
        FAIL("EQ error %d (%s)", err.err, fi_strerror(err.err));
    }
    if (rc < 0) FAIL("fi_eq_sread = %zd (%s)", rc, fi_strerror((int)-rc));
    if (event != want) FAIL("EQ event %u, expected %u", event, want);
}

/* msg: rank 0 accepts 4 connections on one passive endpoint, rank 1 makes them. */
static void connect_msg(void) {
    uint8_t buf[sizeof(struct fi_eq_cm_entry) + 64];
    struct fi_eq_cm_entry *entry = (struct fi_eq_cm_entry *)buf;
    if (rank == 0) {
        struct fi_info *h = hints_for(), *pi;
        CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, MSG_SERVICE, FI_SOURCE, h, &pi));
        struct fid_pep *pep;
        CHECK(fi_passive_ep(fabric, pi, &pep, NULL));
        CHECK(fi_pep_bind(pep, &eq->fid, 0));
        CHECK(fi_listen(pep));
        for (int n = 0; n < NTHREADS; n++) {
            wait_event(FI_CONNREQ, entry, sizeof(buf));
            int t = entry->data[0];
            if (t < 0 || t >= NTHREADS || workers[t].ep) FAIL("a connection request names thread %d", t);
            open_worker(&workers[t], entry->info);
            CHECK(fi_accept(workers[t].ep, NULL, 0));
            fi_freeinfo(entry->info);
            wait_event(FI_CONNECTED, entry, sizeof(buf));
            if (entry->fid != &workers[t].ep->fid) FAIL("FI_CONNECTED for another endpoint");
        }
        fi_freeinfo(h);
        fi_freeinfo(pi);
        return; /* the passive endpoint is left to the process's end */
    }
    struct fi_info *h = hints_for(), *ci;
    CHECK(fi_getinfo(FI_VERSION(1, 17), "0", MSG_SERVICE, 0, h, &ci));
    for (int t = 0; t < NTHREADS; t++) {
        open_worker(&workers[t], ci);
        uint8_t name = (uint8_t)t;
        CHECK(fi_connect(workers[t].ep, ci->dest_addr, &name, 1));
        wait_event(FI_CONNECTED, entry, sizeof(buf));
        if (entry->fid != &workers[t].ep->fid) FAIL("FI_CONNECTED for another endpoint");
    }
    fi_freeinfo(h);
    fi_freeinfo(ci);
}

/* rdm: each thread's endpoint bound to a service of its own; the peers' names
 * come from fi_getinfo on the other rank's node and the partner's service. */
static void open_rdm(void) {
    struct fi_av_attr aa = {.type = FI_AV_MAP};
    CHECK(fi_av_open(domain, &aa, &av, NULL));
    for (int t = 0; t < NTHREADS; t++) {
        char mine[16], theirs[16];
        snprintf(mine, sizeof(mine), "%d", (rank == 0 ? 7310 : 7320) + t);
        snprintf(theirs, sizeof(theirs), "%d", (rank == 0 ? 7320 : 7310) + t);
        struct fi_info *h = hints_for(), *si, *pi;
        CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, mine, FI_SOURCE, h, &si));
        open_worker(&workers[t], si);
        CHECK(fi_getinfo(FI_VERSION(1, 17), rank == 0 ? "1" : "0", theirs, 0, h, &pi));
        if (fi_av_insert(av, pi->dest_addr, 1, &workers[t].peer, 0, NULL) != 1)
            FAIL("fi_av_insert of thread %d's peer", t);
        fi_freeinfo(h);
        fi_freeinfo(si);
        fi_freeinfo(pi);
    }
}

int main(int argc, char **argv) {
    const char *r = getenv("VIASTACK_RANK");
    if (argc < 2 || (strcmp(argv[1], "msg") && strcmp(argv[1], "rdm")) || !r) {
        fprintf(stderr, "usage: vipl-run -n 2 ofi_threads msg|rdm [iterations]\n");
        return 2;
    }
    rank = atoi(r);
    rdm = strcmp(argv[1], "rdm") == 0;
    if (argc > 2) iterations = atol(argv[2]);
    if (iterations <= 0) FAIL("iterations must be positive: %s", argv[2]);

    struct fi_info *h = hints_for();
    CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info));
    fi_freeinfo(h);
    if (info->domain_attr->threading != FI_THREAD_SAFE)
        FAIL("the domain offers threading %d, not FI_THREAD_SAFE", info->domain_attr->threading);
    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    CHECK(fi_domain(fabric, info, &domain, NULL));
    struct fi_eq_attr ea = {.wait_obj = FI_WAIT_UNSPEC};
    CHECK(fi_eq_open(fabric, &ea, &eq, NULL));
    struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE};
    CHECK(fi_cq_open(domain, &ca, &cq, NULL));
    if (rdm) open_rdm();
    else connect_msg();

    double t0 = now_s();
    for (int t = 0; t < NTHREADS; t++) {
        workers[t].t = t;
        if (pthread_create(&workers[t].th, NULL, run, &workers[t])) FAIL("pthread_create");
    }
    for (int t = 0; t < NTHREADS; t++) pthread_join(workers[t].th, NULL);
    double dt = now_s() - t0;

    /* rdm: the partner may still read its last echo; a message each way
     * makes sure both ranks are done before the endpoints close. */
    for (int t = 0; t < NTHREADS; t++) {
        struct worker *w = &workers[t];
        struct op rr, ss;
        post_recv(w, &rr);
        w->sbuf[0] = 0xee;
        send_msg(w, &ss, 1);
        wait_op(&ss, "the closing send");
        wait_op(&rr, "the closing message");
    }
    for (int t = 0; t < NTHREADS; t++) {
        CHECK(fi_close(&workers[t].ep->fid));
        CHECK(fi_close(&workers[t].mr->fid));
        free(workers[t].sbuf);
    }
    CHECK(fi_close(&cq->fid));
    if (av) CHECK(fi_close(&av->fid));
    CHECK(fi_close(&eq->fid));
    CHECK(fi_close(&domain->fid));
    CHECK(fi_close(&fabric->fid));
    fi_freeinfo(info);
    printf("[%d] ofi_threads %s: %d threads x %ld messages, every byte checked (%.2f s): passed\n", rank, argv[1],
           NTHREADS, iterations, dt);
    return 0;
}
