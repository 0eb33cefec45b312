/* ofi_msg.c - the viastack libfabric provider's FI_EP_MSG endpoints, written
 * from libfabric's man pages (fi_getinfo(3), fi_cm(3), fi_eq(3), fi_cq(3),
 * fi_msg(3), fi_rma(3), fi_mr(3)).  Two ranks under vipl-run: rank 0 listens
 * on service 7100, rank 1 connects to node "0" (rank 0 by the VIPL name
 * service).
 *
 *  1. bad input: hints the provider cannot meet, a bad node and service
 *  2. a connection request rejected with data (FI_ECONNREFUSED + err_data)
 *  3. a connection accepted, cm data both ways (FI_CONNREQ, FI_CONNECTED)
 *  4. a ping-pong of 0 B .. 64 KiB messages, checked byte by byte
 *  5. RMA: fi_write, fi_read, fi_writedata (FI_REMOTE_CQ_DATA at the target)
 *  6. late receives: 3 x rx_size sends while the receiver posts nothing for
 *     300 ms: the sends wait in the provider (FI_RM_ENABLED: never refused
 *     for want of a receive), nothing is lost, order is kept
 *  7. bad input on a connected endpoint (error codes, nothing delivered)
 *  8. fi_shutdown: FI_SHUTDOWN on both sides
 */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ofi_check.h"

#define SERVICE "7100"
#define MAXMSG (64 * 1024)
#define NBUF 8

static int rank;

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;
static struct fid_cq *txcq, *rxcq;
static struct fid_ep *ep;
static struct fid_mr *mr;
static struct fi_info *info;
static char *buf; /* [NBUF receive slots | send area | RMA target] */
static size_t rx_size;

static char *rx_slot(int i) { return buf + (size_t)i * MAXMSG; }
static char *tx_area(void) { return buf + (size_t)NBUF * MAXMSG; }
static char *rma_area(void) { return buf + (size_t)(NBUF + 1) * MAXMSG; }
static size_t buf_len(void) { return (size_t)(NBUF + 2) * MAXMSG; }

static struct fi_info *hints_msg(void) {
    struct fi_info *h = fi_allocinfo();
    h->ep_attr->type = FI_EP_MSG;
    h->caps = FI_MSG | FI_RMA;
    h->mode = FI_CONTEXT | FI_RX_CQ_DATA;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    h->fabric_attr->prov_name = strdup("viastack");
    return h;
}

static void bad_getinfo(void) {
    struct fi_info *h = hints_msg(), *out = NULL;
    h->ep_attr->type = FI_EP_DGRAM; /* no provider layers datagrams on it */
    EXPECT_RC(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &out), -FI_ENODATA);
    h->ep_attr->type = FI_EP_MSG;
    h->addr_format = FI_SOCKADDR_IN;
    EXPECT_RC(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &out), -FI_ENODATA);
    h->addr_format = FI_FORMAT_UNSPEC;
    h->domain_attr->mr_mode = FI_MR_VIRT_ADDR; /* the application cannot register locally */
    EXPECT_RC(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &out), -FI_ENODATA);
    fi_freeinfo(h);
    h = hints_msg();
    EXPECT_RC(fi_getinfo(FI_VERSION(1, 17), "no-such-node.invalid", SERVICE, 0, h, &out), -FI_ENODATA);
    if (out) FAIL("an info was delivered for a bad node");
    fi_freeinfo(h);
}

static void wait_eq(uint32_t want_event, struct fi_eq_cm_entry *entry, size_t len) {
    uint32_t event;
    ssize_t n = fi_eq_sread(eq, &event, entry, len, 20000, 0);
    if (n == -FI_EAVAIL) {
        struct fi_eq_err_entry err = {0};
        fi_eq_readerr(eq, &err, 0);
        FAIL("EQ error %d (%s) waiting for event %u", err.err, fi_strerror(err.err), want_event);
    }
    if (n < 0) FAIL("fi_eq_sread: %zd (%s) waiting for event %u", n, fi_strerror((int)-n), want_event);
    if (event != want_event) FAIL("event %u, expected %u", event, want_event);
}

static void open_active(struct fi_info *fi) {
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE, .size = 512};
    CHECK(fi_domain(fabric, fi, &domain, NULL));
    CHECK(fi_cq_open(domain, &cq_attr, &txcq, NULL));
    CHECK(fi_cq_open(domain, &cq_attr, &rxcq, NULL));
    CHECK(fi_endpoint(domain, fi, &ep, NULL));
    CHECK(fi_ep_bind(ep, &eq->fid, 0));
    CHECK(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT));
    CHECK(fi_ep_bind(ep, &rxcq->fid, FI_RECV));
    CHECK(fi_enable(ep));
    buf = aligned_alloc(4096, buf_len());
    memset(buf, 0, buf_len());
    CHECK(fi_mr_reg(domain, buf, buf_len(), FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
                    0, 0, 0, &mr, NULL));
    rx_size = fi->rx_attr->size;
}

static void post_recv(int slot) { CHECK(fi_recv(ep, rx_slot(slot), MAXMSG, fi_mr_desc(mr), 0, rx_slot(slot))); }

/* One completion of cq; fails on an error entry. */
static void wait_cq(struct fid_cq *cq, struct fi_cq_data_entry *e) {
    time_t start = time(NULL);
    for (;;) {
        ssize_t n = fi_cq_read(cq, e, 1);
        if (n == 1) return;
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err = {0};
            fi_cq_readerr(cq, &err, 0);
            FAIL("CQ error %d (%s)", err.err, fi_strerror(err.err));
        }
        if (n != -FI_EAGAIN) FAIL("fi_cq_read: %zd", n);
        if (time(NULL) - start > 30) FAIL("no completion in 30 s");
    }
}

/* Sends len bytes of the send area, retrying on -FI_EAGAIN. */
static int send_retry(size_t len, int with_data, uint64_t data) {
    int eagain = 0;
    for (;;) {
        ssize_t rc = with_data ? fi_senddata(ep, tx_area(), len, fi_mr_desc(mr), data, 0, tx_area())
                               : fi_send(ep, tx_area(), len, fi_mr_desc(mr), 0, tx_area());
        if (rc == 0) break;
        if (rc != -FI_EAGAIN) FAIL("fi_send: %zd (%s)", rc, fi_strerror((int)-rc));
        eagain = 1;
        struct fi_cq_data_entry e;
        if (fi_cq_read(txcq, &e, 1) == -FI_EAVAIL) FAIL("send error while waiting for credits");
    }
    struct fi_cq_data_entry e;
    wait_cq(txcq, &e);
    return eagain;
}

static void fill(char *p, size_t len, unsigned seed) {
    for (size_t i = 0; i < len; i++) p[i] = (char)(seed * 31 + i * 7);
}
static void check_fill(const char *p, size_t len, unsigned seed) {
    for (size_t i = 0; i < len; i++)
        if (p[i] != (char)(seed * 31 + i * 7)) FAIL("byte %zu of message %u differs", i, seed);
}

struct rma_info {
    uint64_t addr, key;
};

static void server(void) {
    struct fi_info *h = hints_msg();
    struct fi_info *pinfo;
    CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, SERVICE, FI_SOURCE, h, &pinfo));
    CHECK(fi_fabric(pinfo->fabric_attr, &fabric, NULL));
    struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
    CHECK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
    struct fid_pep *pep;
    CHECK(fi_passive_ep(fabric, pinfo, &pep, NULL));
    CHECK(fi_pep_bind(pep, &eq->fid, 0));
    CHECK(fi_listen(pep));
    size_t cm_size = 0, optlen = sizeof(cm_size);
    CHECK(fi_getopt(&pep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &cm_size, &optlen));
    if (cm_size < 16) FAIL("cm data size %zu", cm_size);
    char name[64];
    size_t namelen = 4;
    EXPECT_RC(fi_getname(&pep->fid, name, &namelen), -FI_ETOOSMALL);
    if (namelen == 4) FAIL("fi_getname did not say how long a name is");

    /* 2. reject the first request, with data */
    char entry_buf[sizeof(struct fi_eq_cm_entry) + 64];
    struct fi_eq_cm_entry *entry = (void *)entry_buf;
    wait_eq(FI_CONNREQ, entry, sizeof(entry_buf));
    if (memcmp(entry->data, "first", 6) != 0) FAIL("connection request data \"%.6s\"", (char *)entry->data);
    EXPECT_RC(fi_reject(pep, entry->info->handle, "x", cm_size + 1), -FI_EINVAL);
    CHECK(fi_reject(pep, entry->info->handle, "go away", 8));
    fi_freeinfo(entry->info);

    /* 3. accept the second */
    wait_eq(FI_CONNREQ, entry, sizeof(entry_buf));
    if (memcmp(entry->data, "second", 7) != 0) FAIL("connection request data \"%.7s\"", (char *)entry->data);
    info = entry->info;
    open_active(info);
    for (int i = 0; i < NBUF; i++) post_recv(i);
    CHECK(fi_accept(ep, "welcome", 8));
    wait_eq(FI_CONNECTED, entry, sizeof(entry_buf));
    if (entry->fid != &ep->fid) FAIL("FI_CONNECTED for another fid");

    /* 4. ping-pong: echo what arrives */
    struct fi_cq_data_entry e;
    int slot = 0;
    for (size_t len = 0, it = 0; len <= MAXMSG; len = len ? len * 4 : 1, it++) {
        wait_cq(rxcq, &e);
        if (e.len != len || !(e.flags & FI_RECV))
            FAIL("received %zu bytes (flags %#lx), expected %zu", e.len, (unsigned long)e.flags, len);
        check_fill(e.op_context, len, (unsigned)it);
        memcpy(tx_area(), e.op_context, len);
        post_recv(slot = (int)(((char *)e.op_context - buf) / MAXMSG));
        send_retry(len, 0, 0);
    }

    /* 5. RMA: tell the client where; then wait for its writedata */
    struct rma_info ri = {(uint64_t)(uintptr_t)rma_area(), fi_mr_key(mr)};
    fill(rma_area(), 4096, 77);
    memcpy(tx_area(), &ri, sizeof(ri));
    send_retry(sizeof(ri), 0, 0);
    wait_cq(rxcq, &e); /* the fi_writedata: a receive completion with data */
    if (!(e.flags & FI_REMOTE_CQ_DATA) || !(e.flags & FI_REMOTE_WRITE) || e.data != 0xdeadbeef)
        FAIL("writedata completion flags %#lx data %#lx", (unsigned long)e.flags, (unsigned long)e.data);
    post_recv((int)(((char *)e.op_context - buf) / MAXMSG));
    check_fill(rma_area() + 8192, 1000, 5); /* written by fi_write before the writedata */
    check_fill(rma_area() + 16384, 100, 6); /* written by fi_writedata */

    /* 6. late receives: the client sends 3 x rx_size messages while nothing new
     * is posted here; then post them late, one at a time, and check order. */
    wait_cq(rxcq, &e); /* "go" marker consumed one of the NBUF slots */
    usleep(300 * 1000);
    int total = (int)(3 * rx_size);
    int got = 0, slot_i = (int)(((char *)e.op_context - buf) / MAXMSG);
    post_recv(slot_i);
    while (got < total) {
        wait_cq(rxcq, &e);
        if (e.len != sizeof(int)) FAIL("late message of %zu bytes", e.len);
        int seq;
        memcpy(&seq, e.op_context, sizeof(seq));
        if (seq != got) FAIL("late message %d arrived as number %d", seq, got);
        got++;
        post_recv((int)(((char *)e.op_context - buf) / MAXMSG));
        if (got % 50 == 0) usleep(1000); /* stay slower than the sender */
    }

    /* 8. the client shuts down */
    wait_eq(FI_SHUTDOWN, entry, sizeof(entry_buf));
    if (entry->fid != &ep->fid) FAIL("FI_SHUTDOWN for another fid");
    CHECK(fi_close(&ep->fid));
    CHECK(fi_close(&mr->fid));
    CHECK(fi_close(&txcq->fid));
    CHECK(fi_close(&rxcq->fid));
    CHECK(fi_close(&pep->fid));
    CHECK(fi_close(&eq->fid));
    CHECK(fi_close(&domain->fid));
    CHECK(fi_close(&fabric->fid));
    fi_freeinfo(info);
    fi_freeinfo(pinfo);
    fi_freeinfo(h);
}

static void client(void) {
    struct fi_info *h = hints_msg();
    CHECK(fi_getinfo(FI_VERSION(1, 17), "0", SERVICE, 0, h, &info));
    if (!info->dest_addr) FAIL("no destination address from node \"0\"");
    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
    CHECK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
    char entry_buf[sizeof(struct fi_eq_cm_entry) + 64];
    struct fi_eq_cm_entry *entry = (void *)entry_buf;

    /* 2. the first request is rejected with data */
    open_active(info);
    size_t cm_size = 0, optlen = sizeof(cm_size);
    CHECK(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &cm_size, &optlen));
    static char big[256];
    EXPECT_RC(fi_connect(ep, info->dest_addr, big, cm_size + 1), -FI_EINVAL);
    CHECK(fi_connect(ep, info->dest_addr, "first", 6));
    uint32_t event;
    ssize_t n = fi_eq_sread(eq, &event, entry, sizeof(entry_buf), 20000, 0);
    if (n != -FI_EAVAIL) FAIL("rejected connect: fi_eq_sread = %zd, expected -FI_EAVAIL", n);
    char err_data[64];
    struct fi_eq_err_entry err = {.err_data = err_data, .err_data_size = sizeof(err_data)};
    EXPECT_RC(fi_eq_readerr(eq, &err, 0), sizeof(err));
    if (err.err != FI_ECONNREFUSED || err.fid != &ep->fid) FAIL("reject: err %d (%s)", err.err, fi_strerror(err.err));
    if (err.err_data_size != 8 || memcmp(err_data, "go away", 8) != 0)
        FAIL("reject data of %zu bytes", err.err_data_size);

    /* 3. the second is accepted: a fresh endpoint, receives posted first */
    CHECK(fi_close(&ep->fid));
    CHECK(fi_close(&mr->fid));
    CHECK(fi_close(&txcq->fid));
    CHECK(fi_close(&rxcq->fid));
    CHECK(fi_close(&domain->fid));
    free(buf);
    open_active(info);
    for (int i = 0; i < NBUF; i++) post_recv(i);
    EXPECT_RC(fi_send(ep, tx_area(), 1, fi_mr_desc(mr), 0, NULL), -FI_ENOTCONN);
    CHECK(fi_connect(ep, info->dest_addr, "second", 7));
    wait_eq(FI_CONNECTED, entry, sizeof(entry_buf));
    if (entry->fid != &ep->fid || memcmp(entry->data, "welcome", 8) != 0)
        FAIL("FI_CONNECTED: wrong fid or accept data");
    char peer[64];
    size_t peerlen = sizeof(peer);
    CHECK(fi_getpeer(ep, peer, &peerlen));
    if (peerlen != info->dest_addrlen || memcmp(peer, info->dest_addr, peerlen) != 0)
        FAIL("fi_getpeer is not the address connected to");

    /* 4. ping-pong */
    struct fi_cq_data_entry e;
    for (size_t len = 0, it = 0; len <= MAXMSG; len = len ? len * 4 : 1, it++) {
        fill(tx_area(), len, (unsigned)it);
        send_retry(len, 0, 0);
        wait_cq(rxcq, &e);
        if (e.len != len) FAIL("echo of %zu bytes, expected %zu", e.len, len);
        check_fill(e.op_context, len, (unsigned)it);
        post_recv((int)(((char *)e.op_context - buf) / MAXMSG));
    }

    /* 5. RMA */
    wait_cq(rxcq, &e);
    struct rma_info ri;
    memcpy(&ri, e.op_context, sizeof(ri));
    post_recv((int)(((char *)e.op_context - buf) / MAXMSG));
    CHECK(fi_read(ep, rma_area(), 4096, fi_mr_desc(mr), 0, ri.addr, ri.key, NULL));
    wait_cq(txcq, &e);
    if (!(e.flags & FI_READ)) FAIL("read completion flags %#lx", (unsigned long)e.flags);
    check_fill(rma_area(), 4096, 77);
    fill(tx_area(), 1000, 5);
    CHECK(fi_write(ep, tx_area(), 1000, fi_mr_desc(mr), 0, ri.addr + 8192, ri.key, NULL));
    wait_cq(txcq, &e);
    fill(tx_area() + 2000, 100, 6);
    for (;;) {
        ssize_t rc =
            fi_writedata(ep, tx_area() + 2000, 100, fi_mr_desc(mr), 0xdeadbeef, 0, ri.addr + 16384, ri.key, NULL);
        if (rc == 0) break;
        if (rc != -FI_EAGAIN) FAIL("fi_writedata: %zd", rc);
    }
    wait_cq(txcq, &e);

    /* 7. bad input on the connected endpoint: error codes, nothing sent */
    EXPECT_RC(fi_send(ep, tx_area(), info->ep_attr->max_msg_size + 1, fi_mr_desc(mr), 0, NULL), -FI_EMSGSIZE);
    EXPECT_RC(fi_send(ep, tx_area(), 10, NULL, 0, NULL), -FI_EINVAL); /* FI_MR_LOCAL: no desc */
    char tmp[65536];
    EXPECT_RC(fi_inject(ep, tmp, info->tx_attr->inject_size + 1, 0), -FI_EINVAL);
    struct fid_mr *bad;
    EXPECT_RC(fi_mr_reg(domain, tmp, sizeof(tmp), 1ULL << 62, 0, 0, 0, &bad, NULL), -FI_EINVAL);

    /* 6. late receives: flood the server, counting -FI_EAGAIN returns */
    send_retry(0, 0, 0); /* "go" */
    int total = (int)(3 * rx_size), eagain = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int seq = 0; seq < total; seq++) {
        memcpy(tx_area(), &seq, sizeof(seq));
        eagain += send_retry(sizeof(seq), 0, 0);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    /* The receiver sleeps 300 ms before posting anything: sends that did not
     * wait for its receives would have completed (or broken the VI) long before. */
    if (ms < 200)
        FAIL("%d sends to a receiver that posted %d receives late completed in %.0f ms: "
             "they did not wait for the receives",
             total, NBUF, ms);
    printf("[1] late receives: %d messages in %.0f ms, %d refused with -FI_EAGAIN\n", total, ms, eagain);

    /* 8. shutdown */
    CHECK(fi_shutdown(ep, 0));
    wait_eq(FI_SHUTDOWN, entry, sizeof(entry_buf));
    EXPECT_RC(fi_send(ep, tx_area(), 1, fi_mr_desc(mr), 0, NULL), -FI_ENOTCONN);
    CHECK(fi_close(&ep->fid));
    CHECK(fi_close(&mr->fid));
    CHECK(fi_close(&txcq->fid));
    CHECK(fi_close(&rxcq->fid));
    CHECK(fi_close(&eq->fid));
    CHECK(fi_close(&domain->fid));
    CHECK(fi_close(&fabric->fid));
    fi_freeinfo(info);
    fi_freeinfo(h);
}

int main(void) {
    const char *r = getenv("VIASTACK_RANK"), *s = getenv("VIASTACK_SIZE");
    if (!r || !s || atoi(s) != 2) {
        fprintf(stderr, "run me under vipl-run -n 2\n");
        return 2;
    }
    rank = atoi(r);
    bad_getinfo();
    if (rank == 0) server();
    else client();
    printf("[%d] ofi_msg: all checks passed\n", rank);
    free(buf);
    return 0;
}
