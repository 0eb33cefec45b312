/* am_soak.c - the AM-2 half of the soak (issue #16): every rank sends short
 * requests, and some mediums, to every other rank in a shuffled order, for
 * several rounds, while serving the requests aimed at it; every request is
 * answered by a reply.  Only the public am.h / am_spmd.h are used.
 *
 *   vipl-run -n N am_soak REQUESTS [ROUNDS]
 *
 * REQUESTS is the job's total (spread evenly over the N(N-1) ordered pairs and
 * the rounds, rounded up).  Each request carries (sequence number, source,
 * round); the target keeps the next expected sequence number per source and
 * the requester the next expected reply per target, so a lost, duplicated or
 * reordered message (VI reliable delivery is in order, docs/am.md) is an error
 * at once.  Every 8th request is a medium whose payload is a pattern of
 * (source, sequence), checked in the handler; every 16th medium, and the
 * first WARM requests of every pair, have the largest size (AM_MaxMedium, the
 * RDMA ring path when it is above 4096 B).
 * After the last round the per-pair counts are compared with what was sent.
 *
 * Each rank prints, after AM_SPMDExit has terminated AM and left the job (from
 * an atexit handler), one line the driver (soak_driver.cpp) parses:
 *   soak-rank am R: fds_before=A fds_after=B shm_maps_during=M shm_maps_after=0 rss_half_kb=X rss_last_kb=Y anon_half_kb=P anon_last_kb=Q shmem_last_kb=S hwm_kb=Z errors=E
 * and rank 0 a summary line "am_soak: ...".  Exit code 0 only when every check
 * passed on that rank and no descriptor was left open.
 *
 * SOAK_BREAK (rank 0 only) makes the run wrong on purpose, to show that the
 * checks fail: "fd" leaves a descriptor open, "shm" leaves the
 * job's boot segment mapped, "seq" skips one sequence number
 * (a lost message to the receiver), "hang" stops sending and polling (a
 * deadlock: the launcher's timeout ends the job). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "am.h"
#include "am_spmd.h"
#include "soak_probe.h"

#define H_SHORT 1
#define H_MEDIUM 2
#define H_REPLY 3
/* The first WARM requests of every pair are mediums of the largest size: they
 * go through every slot of the target's medium ring (docs/am.md: k+1 request
 * slots per MAP, k = 8 by default) in the first round, so later growth of
 * private memory is not the ring being touched for the first time. */
#define WARM 32

static ep_t ep;
static eb_t eb;
static int me = -1, np;
static long errors;
static int32_t *next_from;  /* next sequence number expected from each source */
static int32_t *next_reply; /* next reply sequence expected from each target */
static en_t *names;         /* every rank's endpoint name, by rank */
static long *got_from;      /* requests served, per source */
static long replies, served, mediums_served;
static size_t max_medium;
static uint8_t *payload; /* the requester's medium buffer */
static int fds_before = -1;
static int shm_maps_during = -1;
static const char *breaking = ""; /* SOAK_BREAK on rank 0: fd, shm, seq or hang */
static long rss_half = -1, rss_last = -1, anon_half = -1, anon_last = -1, shmem_last = -1;

static void fail(const char *what, int peer, long a, long b) {
    if (errors < 20) fprintf(stderr, "am_soak rank %d: %s (peer %d: got %ld, expected %ld)\n", me, what, peer, a, b);
    errors++;
}

static size_t medium_len(int32_t seq) {
    if (seq < WARM || (seq / 8) % 16 == 0) return max_medium;
    return 1 + (size_t)(seq * 37u) % 2048u;
}
static uint8_t pattern(int src, int32_t seq, size_t i) {
    return (uint8_t)(i * 131u + (unsigned)seq * 7u + (unsigned)src * 29u + 1u);
}

/* The checks every request handler makes: the source is who it claims, the
 * sequence number is the next one from that source. */
static int check_request(void *token, int32_t seq, int32_t src) {
    en_t from;
    if (src < 0 || src >= np || src == me) {
        fail("request from a bad source", src, src, -1);
        return 0;
    }
    if (AM_GetSourceEndpoint(token, &from) != AM_OK || memcmp(&from, &names[src], sizeof from) != 0) {
        fail("request's source endpoint is not the rank it names", src, -1, src);
        return 0;
    }
    if (seq != next_from[src])
        fail("request out of sequence (lost, duplicated or reordered)", src, seq, next_from[src]);
    next_from[src] = seq + 1;
    got_from[src]++;
    served++;
    return 1;
}

static void short_handler(void *token, int32_t seq, int32_t src, int32_t round) {
    if (!check_request(token, seq, src)) return;
    if (AM_Reply3(token, H_REPLY, seq, me, round) != AM_OK) fail("AM_Reply3 failed", src, 0, 0);
}

static void medium_handler(void *token, void *buf, size_t nbytes, int32_t seq, int32_t src, int32_t round) {
    size_t i;
    const uint8_t *p = (const uint8_t *)buf;
    if (!check_request(token, seq, src)) return;
    mediums_served++;
    if (nbytes != medium_len(seq)) fail("medium length", src, (long)nbytes, (long)medium_len(seq));
    else
        for (i = 0; i < nbytes; i++)
            if (p[i] != pattern(src, seq, i)) {
                fail("medium payload corrupt at byte", src, (long)i, -1);
                break;
            }
    if (AM_Reply3(token, H_REPLY, seq, me, round) != AM_OK) fail("AM_Reply3 failed", src, 0, 0);
}

static void reply_handler(void *token, int32_t seq, int32_t from, int32_t round) {
    (void)token;
    (void)round;
    if (from < 0 || from >= np || from == me) {
        fail("reply from a bad source", from, from, -1);
        return;
    }
    if (seq != next_reply[from])
        fail("reply out of sequence (lost, duplicated or reordered)", from, seq, next_reply[from]);
    next_reply[from] = seq + 1;
    replies++;
}

static void returned(int status, op_t opcode, void *token) {
    (void)token;
    fail("message returned to sender", -1, status, opcode);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs after AM_SPMDExit terminated AM and left the job (exit() calls the
 * handlers registered before start-up last). */
static void report_at_exit(void) {
    int fds_after = soak_fd_count();
    long hwm = soak_hwm_kb();
    printf("soak-rank am %d: fds_before=%d fds_after=%d shm_maps_during=%d shm_maps_after=%d rss_half_kb=%ld "
           "rss_last_kb=%ld anon_half_kb=%ld anon_last_kb=%ld shmem_last_kb=%ld hwm_kb=%ld errors=%ld\n",
           me, fds_before, fds_after, shm_maps_during, soak_shm_mappings(), rss_half, rss_last, anon_half, anon_last,
           shmem_last, hwm, errors);
    fflush(stdout);
    if (fds_after != fds_before) {
        fprintf(stderr, "am_soak rank %d: %d file descriptors open after AM_SPMDExit, %d before start-up\n", me,
                fds_after, fds_before);
        _exit(3);
    }
}

int main(int argc, char **argv) {
    long total, rounds, per_pair, r, i, n_sends;
    int *order, k, rc;
    int32_t *next_send;
    long sent = 0, mediums_sent = 0, expected_in;
    double t0, t1;
    long sums[6], *all;

    fds_before = soak_fd_count();
    atexit(report_at_exit);
    if (AM_SPMDStartup(&argc, &argv, &eb, &ep) != AM_OK) return 1;
    me = AM_SPMDMyProc();
    np = AM_SPMDNumProcs();
    breaking = getenv("SOAK_BREAK") && me == 0 ? getenv("SOAK_BREAK") : "";
    if (strcmp(breaking, "fd") == 0 && open("/dev/null", O_RDONLY) < 0) perror("open");
    if (strcmp(breaking, "shm") == 0) {
        char path[256];
        int fd;
        snprintf(path, sizeof path, "/dev/shm/viastack-%s-boot", getenv("VIASTACK_JOB"));
        fd = open(path, O_RDONLY);
        if (fd < 0 || mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) perror(path);
        if (fd >= 0) close(fd);
    }
    total = argc > 1 ? atol(argv[1]) : 10000;
    rounds = argc > 2 ? atol(argv[2]) : 4;
    if (total < 1 || rounds < 1 || np < 2) {
        if (me == 0) fprintf(stderr, "usage: vipl-run -n N (N >= 2) am_soak REQUESTS [ROUNDS]\n");
        AM_SPMDExit(2);
    }
    per_pair = (total + (long)np * (np - 1) * rounds - 1) / ((long)np * (np - 1) * rounds);
    max_medium = (size_t)AM_MaxMedium();

    next_from = calloc((size_t)np, sizeof *next_from);
    next_reply = calloc((size_t)np, sizeof *next_reply);
    next_send = calloc((size_t)np, sizeof *next_send);
    got_from = calloc((size_t)np, sizeof *got_from);
    names = calloc((size_t)np, sizeof *names);
    n_sends = per_pair * (np - 1);
    order = malloc((size_t)n_sends * sizeof *order);
    payload = malloc(max_medium);
    all = malloc((size_t)np * sizeof sums);
    if (!next_from || !names || !next_reply || !next_send || !got_from || !order || !payload || !all) {
        fprintf(stderr, "am_soak rank %d: out of memory\n", me);
        AM_SPMDExit(1);
    }
    for (k = 0; k < np; k++)
        if (AM_GetTranslationName(ep, k, &names[k]) != AM_OK) fail("AM_GetTranslationName", k, -1, 0);
    rc = AM_SetHandler(ep, H_SHORT, short_handler) | AM_SetHandler(ep, H_MEDIUM, medium_handler) |
        AM_SetHandler(ep, H_REPLY, reply_handler) | AM_SetHandler(ep, 0, returned);
    if (rc != AM_OK) fail("AM_SetHandler", -1, rc, 0);
    AM_SPMDBarrier();

    t0 = now_s();
    for (r = 0; r < rounds; r++) {
        /* Every other rank per_pair times, shuffled (a different order each round). */
        for (i = 0, k = 1; k < np; k++) {
            long j;
            for (j = 0; j < per_pair; j++) order[i++] = (me + k) % np;
        }
        soak_shuffle(order, n_sends, (unsigned long long)(me * 7919 + r + 1));
        while (strcmp(breaking, "hang") == 0) sleep(1); /* peers wait for its requests forever */
        for (i = 0; i < n_sends; i++) {
            int to = order[i];
            int32_t seq = next_send[to]++;
            if (r == 0 && i == 0 && strcmp(breaking, "seq") == 0) seq = next_send[to]++;
            if (seq < WARM || seq % 8 == 7) {
                size_t len = medium_len(seq), b;
                /* the previous medium's payload was copied out when AM_RequestI returned */
                for (b = 0; b < len; b++) payload[b] = pattern(me, seq, b);
                rc = AM_RequestI3(ep, to, H_MEDIUM, payload, len, seq, me, (int32_t)r);
                mediums_sent++;
            } else {
                rc = AM_Request3(ep, to, H_SHORT, seq, me, (int32_t)r);
            }
            if (rc != AM_OK) {
                fail("AM_Request failed", to, rc, AM_OK);
                AM_SPMDExit(1);
            }
            sent++;
            if ((i & 15) == 15) AM_Poll(eb);
        }
        expected_in = per_pair * (np - 1) * (r + 1);
        while (replies < sent || served < expected_in)
            if (AM_Poll(eb) != AM_OK) {
                fail("AM_Poll failed", -1, 0, 0);
                AM_SPMDExit(1);
            }
        AM_SPMDBarrier();
        if (r == (rounds - 1) / 2) { /* the middle round: the driver compares the last with it */
            rss_half = soak_rss_kb();
            anon_half = soak_status_kb("RssAnon");
            shm_maps_during = soak_shm_mappings();
        }
    }
    t1 = now_s();
    rss_last = soak_rss_kb();
    anon_last = soak_status_kb("RssAnon");
    shmem_last = soak_status_kb("RssShmem");

    /* Exact counts per pair. */
    for (k = 0; k < np; k++) {
        long want = k == me ? 0 : per_pair * rounds;
        if (got_from[k] != want) fail("requests served from source", k, got_from[k], want);
        if (k != me && next_reply[k] != want) fail("replies received from target", k, next_reply[k], want);
    }
    sums[0] = sent;
    sums[1] = replies;
    sums[2] = served;
    sums[3] = mediums_sent;
    sums[4] = errors;
    sums[5] = (long)((t1 - t0) * 1e6);
    if (AM_SPMDAllGather(sums, all, sizeof sums) != AM_OK) fail("AM_SPMDAllGather", -1, 0, 0);
    if (me == 0) {
        long t[6] = {0, 0, 0, 0, 0, 0};
        int p, f;
        for (p = 0; p < np; p++)
            for (f = 0; f < 6; f++)
                t[f] = f == 5 ? (all[p * 6 + f] > t[f] ? all[p * 6 + f] : t[f]) : t[f] + all[p * 6 + f];
        printf("am_soak: %d processes, %ld rounds, %ld requests (%ld mediums), %ld replies, %ld served, "
               "%ld messages, %.2f s, %ld errors, shm_files=%d job=%s\n",
               np, rounds, t[0], t[3], t[1], t[2], t[0] + t[1], t[5] * 1e-6, t[4], soak_job_shm_files(),
               getenv("VIASTACK_JOB") ? getenv("VIASTACK_JOB") : "-");
        if (t[0] != t[1] || t[0] != t[2]) fail("job totals: requests, replies and served differ", -1, t[0], t[2]);
    }
    free(order);
    free(payload);
    free(all);
    free(next_from);
    free(next_reply);
    free(next_send);
    free(got_from);
    free(names);
    AM_SPMDExit(errors ? 1 : 0);
    return 0;
}
