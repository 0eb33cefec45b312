/* fi_shm_bench.c - libfabric's shared-memory provider measured the way logp
 * measures viastack's layers, so the two can be put side by side.
 *
 *   fi_shm_bench [--provider shm] [--rounds R] [--iters N] [--bulk-mb M] [--cpus A,B]
 *
 * --cpus binds rank 0 to CPU A and rank 1 to CPU B (logp passes the CPUs its
 * own two ranks are bound to, so both sides of a comparison run in the same
 * placement).
 * The program forks itself into two processes on this host (rank 0 the
 * parent, rank 1 the child), each opening a reliable-datagram (FI_EP_RDM)
 * endpoint of the provider; they exchange endpoint names and the registered
 * buffer's address and key over a socketpair.  Per round:
 *   rtt_half_us  16-byte fi_send/fi_recv ping-pong, RTT/2;
 *   gap_us       16-byte fi_send stream 0 -> 1, windows of 64 (the receiver
 *                posts 64 fi_recv, then a zero-byte acknowledgement);
 *   put_bw_MBps  fi_write (RMA) stream of 4 KB, 32 KB, 256 KB and 1 MB into the
 *                peer's registered buffer, windows of 16, until every write
 *                completed at the initiator (as ucp_put_bw measures).
 * Rank 0 prints one JSON object per metric and size, with the median and the
 * spread over the rounds (the first round is a warm-up, not counted). */
#define _GNU_SOURCE
#include <rdma/fabric.h>
#include <sched.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMaxRounds = 101, kWindowSmall = 64, kWindowBulk = 16 };
static const size_t kBulk[] = {4096, 32768, 262144, 1048576};
#define kBufLen (kWindowBulk * 1048576u)

struct fab {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    struct fid_mr *mr;
    void *desc;
    fi_addr_t peer;
    uint64_t peer_addr, peer_key;
    char *buf;
    long tx_pending, rx_pending;
    int me, sock;
};

static struct fi_context tx_ctx, rx_ctx; /* a completion's kind, by context */

static void die(const struct fab *f, const char *what, int rc) {
    fprintf(stderr, "fi_shm_bench[rank %d]: %s failed: %s\n", f->me, what, fi_strerror(-rc));
    exit(1);
}
#define CHECK(f, call)                                                                                                 \
    do {                                                                                                               \
        int rc_ = (int)(call);                                                                                         \
        if (rc_) die((f), #call, rc_);                                                                                 \
    } while (0)

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static void xchg(struct fab *f, const void *out, void *in, size_t len) {
    if (write(f->sock, out, len) != (ssize_t)len || read(f->sock, in, len) != (ssize_t)len) {
        fprintf(stderr, "fi_shm_bench[rank %d]: the exchange with the other process failed\n", f->me);
        exit(1);
    }
}

/* One look at the completion queue (which also drives the provider's progress). */
static void poll_once(struct fab *f) {
    struct fi_cq_entry e[16];
    ssize_t n = fi_cq_read(f->cq, e, 16);
    if (n == -FI_EAGAIN) return;
    if (n < 0) {
        struct fi_cq_err_entry err = {0};
        fi_cq_readerr(f->cq, &err, 0);
        fprintf(stderr, "fi_shm_bench[rank %d]: completion error: %s\n", f->me, fi_strerror(err.err));
        exit(1);
    }
    for (ssize_t i = 0; i < n; i++) {
        if (e[i].op_context == &tx_ctx) f->tx_pending--;
        else f->rx_pending--;
    }
}

/* Reaps completions until at most tx_left sends and rx_left receives are pending. */
static void progress(struct fab *f, long tx_left, long rx_left) {
    while (f->tx_pending > tx_left || f->rx_pending > rx_left) poll_once(f);
}

static void post_send(struct fab *f, const void *p, size_t len) {
    ssize_t rc;
    while ((rc = fi_send(f->ep, p, len, f->desc, f->peer, &tx_ctx)) == -FI_EAGAIN) poll_once(f);
    if (rc) die(f, "fi_send", (int)rc);
    f->tx_pending++;
}

static void post_recv(struct fab *f, void *p, size_t len) {
    ssize_t rc;
    while ((rc = fi_recv(f->ep, p, len, f->desc, f->peer, &rx_ctx)) == -FI_EAGAIN) poll_once(f);
    if (rc) die(f, "fi_recv", (int)rc);
    f->rx_pending++;
}

static void open_fabric(struct fab *f, const char *prov) {
    struct fi_info *hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_RMA;
    hints->mode = FI_CONTEXT;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->fabric_attr->prov_name = strdup(prov);
    CHECK(f, fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &f->info));
    fi_freeinfo(hints);
    CHECK(f, fi_fabric(f->info->fabric_attr, &f->fabric, NULL));
    CHECK(f, fi_domain(f->fabric, f->info, &f->domain, NULL));
    struct fi_cq_attr cqa = {.size = 1024, .format = FI_CQ_FORMAT_CONTEXT};
    CHECK(f, fi_cq_open(f->domain, &cqa, &f->cq, NULL));
    struct fi_av_attr ava = {.type = FI_AV_TABLE};
    CHECK(f, fi_av_open(f->domain, &ava, &f->av, NULL));
    CHECK(f, fi_endpoint(f->domain, f->info, &f->ep, NULL));
    CHECK(f, fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(f, fi_ep_bind(f->ep, &f->av->fid, 0));
    CHECK(f, fi_enable(f->ep));

    char name[256] = {0}, peer_name[256];
    size_t len = sizeof name;
    CHECK(f, fi_getname(&f->ep->fid, name, &len));
    xchg(f, name, peer_name, sizeof name);
    if (fi_av_insert(f->av, peer_name, 1, &f->peer, 0, NULL) != 1) die(f, "fi_av_insert", -FI_EINVAL);

    if (posix_memalign((void **)&f->buf, 4096, kBufLen)) die(f, "posix_memalign", -FI_ENOMEM);
    memset(f->buf, f->me + 1, kBufLen);
    CHECK(f,
          fi_mr_reg(f->domain, f->buf, kBufLen, FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE, 0, 0, 0, &f->mr, NULL));
    f->desc = fi_mr_desc(f->mr);
    uint64_t mine[2] = {(f->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)f->buf : 0,
                        fi_mr_key(f->mr)},
             theirs[2];
    xchg(f, mine, theirs, sizeof mine);
    f->peer_addr = theirs[0];
    f->peer_key = theirs[1];
}

static void sync_ranks(struct fab *f) {
    char a = 0, b;
    xchg(f, &a, &b, 1);
}

static double pingpong(struct fab *f, long iters) {
    sync_ranks(f);
    double t0 = now_us();
    for (long i = 0; i < iters; i++) {
        if (f->me == 0) {
            post_recv(f, f->buf + 4096, 16);
            post_send(f, f->buf, 16);
            progress(f, 0, 0);
        } else {
            post_recv(f, f->buf + 4096, 16);
            progress(f, f->tx_pending, 0);
            post_send(f, f->buf, 16);
            progress(f, 0, 0);
        }
    }
    return (now_us() - t0) / (2.0 * (double)iters);
}

static double stream(struct fab *f, long windows) {
    sync_ranks(f);
    double t0 = now_us();
    for (long w = 0; w < windows; w++) {
        if (f->me == 0) {
            post_recv(f, f->buf + 8192, 0);
            for (int i = 0; i < kWindowSmall; i++) post_send(f, f->buf + (size_t)i * 16, 16);
            progress(f, 0, 0);
        } else {
            for (int i = 0; i < kWindowSmall; i++) post_recv(f, f->buf + (size_t)i * 16, 16);
            progress(f, f->tx_pending, 0);
            post_send(f, f->buf + 8192, 0);
            progress(f, 0, 0);
        }
    }
    return (now_us() - t0) / ((double)windows * kWindowSmall);
}

/* Microseconds per message of windows of fi_write of `bytes`. */
static double put_stream(struct fab *f, size_t bytes, long windows) {
    double t0 = now_us();
    for (long w = 0; w < windows; w++) {
        for (int i = 0; i < kWindowBulk; i++) {
            ssize_t rc;
            size_t off = (size_t)i * bytes;
            while ((rc = fi_write(f->ep, f->buf + off, bytes, f->desc, f->peer, f->peer_addr + off, f->peer_key,
                                  &tx_ctx)) == -FI_EAGAIN)
                poll_once(f);
            if (rc) die(f, "fi_write", (int)rc);
            f->tx_pending++;
        }
        progress(f, 0, f->rx_pending);
    }
    return (now_us() - t0) / ((double)windows * kWindowBulk);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *prov, const char *metric, size_t bytes, double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    printf("{\"peer\":\"libfabric-%s\",\"tool\":\"fi_shm_bench\",\"metric\":\"%s\",\"bytes\":%zu,"
           "\"median\":%.4f,\"min\":%.4f,\"max\":%.4f,\"rounds\":%d}\n",
           prov, metric, bytes, median, v[0], v[n - 1], n);
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *prov = "shm";
    int rounds = 11;
    long iters = 20000;
    long bulk_mb = 256;     /* payload per round and size of the bandwidth streams */
    int cpus[2] = {-1, -1}; /* --cpus A,B: the first process on A, the forked one on B */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--provider") && i + 1 < argc) prov = argv[++i];
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atol(argv[++i]);
        else if (!strcmp(argv[i], "--bulk-mb") && i + 1 < argc) bulk_mb = atol(argv[++i]);
        else if (!strcmp(argv[i], "--cpus") && i + 1 < argc) {
            if (sscanf(argv[++i], "%d,%d", &cpus[0], &cpus[1]) != 2 || cpus[0] < 0 || cpus[1] < 0 ||
                cpus[0] >= CPU_SETSIZE || cpus[1] >= CPU_SETSIZE) {
                fprintf(stderr, "fi_shm_bench: --cpus wants two CPU numbers, e.g. --cpus 0,1\n");
                return 2;
            }
        } else {
            fprintf(stderr,
                    "fi_shm_bench: unknown argument '%s'; usage: fi_shm_bench [--provider P] [--rounds R] "
                    "[--iters N] [--bulk-mb M] [--cpus A,B]\n",
                    argv[i]);
            return 2;
        }
    }
    if (rounds < 1 || rounds >= kMaxRounds || iters < 1 || bulk_mb < 1) {
        fprintf(stderr, "fi_shm_bench: 1 <= rounds < %d and iters >= 1\n", kMaxRounds);
        return 2;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        perror("fi_shm_bench: socketpair");
        return 1;
    }
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        perror("fi_shm_bench: fork");
        return 1;
    }
    struct fab f = {.me = child == 0, .sock = child == 0 ? sv[1] : sv[0]};
    if (cpus[f.me] >= 0) { /* bound as the caller's ranks are (logp's --bind core) */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpus[f.me], &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            perror("fi_shm_bench: sched_setaffinity (--cpus)");
            return 1;
        }
    }
    close(child == 0 ? sv[0] : sv[1]);
    open_fabric(&f, prov);
    double v[kMaxRounds];

    for (int r = 0; r <= rounds; r++) {
        double x = pingpong(&f, iters);
        if (r) v[r - 1] = x;
    }
    if (f.me == 0) report(prov, "rtt_half_us", 16, v, rounds);
    for (int r = 0; r <= rounds; r++) {
        double x = stream(&f, iters / kWindowSmall + 1);
        if (r) v[r - 1] = x;
    }
    if (f.me == 0) report(prov, "gap_us", 16, v, rounds);
    for (int s = 0; s < 4; s++) {
        long windows = (long)(((size_t)bulk_mb << 20) / (kBulk[s] * kWindowBulk)) + 1;
        for (int r = 0; r <= rounds; r++) {
            sync_ranks(&f);
            double x = 0;
            if (f.me == 0) {
                x = (double)kBulk[s] / put_stream(&f, kBulk[s], windows);
                post_send(&f, f.buf, 0); /* done */
                progress(&f, 0, 0);
            } else {
                /* The target drives the provider's progress while the writes
                 * land (shm serves large RMA through the peer's progress). */
                post_recv(&f, f.buf + kBufLen - 4096, 0);
                progress(&f, 0, 0);
            }
            if (r) v[r - 1] = x;
        }
        if (f.me == 0) report(prov, "put_bw_MBps", kBulk[s], v, rounds);
    }
    sync_ranks(&f);
    fi_close(&f.mr->fid);
    fi_close(&f.ep->fid);
    fi_close(&f.av->fid);
    fi_close(&f.cq->fid);
    fi_close(&f.domain->fid);
    fi_close(&f.fabric->fid);
    fi_freeinfo(f.info);
    free(f.buf);
    if (child > 0) {
        int st = 0;
        waitpid(child, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    return 0;
}
