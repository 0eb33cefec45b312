/* logp_mpi.c - logp's `mpi` layer: MPI point-to-point measured the way logp
 * measures its other layers (docs/logp.md, "The mpi layer"), under whatever
 * transport mpirun's MCA settings select (logp runs it over viastack;ofi_rxm,
 * vader and tcp;ofi_rxm).
 *
 *   mpirun -np 2 ... logp_mpi [--iters N] [--bulk-mb M] [--round]
 *
 * Rank 0 prints one JSON object per line:
 *   rtt_half_us   16-byte MPI_Send/MPI_Recv ping-pong, half the median round trip;
 *   o_s_us        slope of T(M) over bursts of M = 1..16 back-to-back 16-byte
 *                 MPI_Send (the finish, a 0-byte answer, is not timed);
 *   g_us          slope of T(M) over bursts of M = 64..256 (the steady state);
 *   o_r_us        the receiver's MPI_Recv of a 16-byte message that has
 *                 arrived: rank 1 learns through shared memory that rank 0 is
 *                 about to send, computes for 5 x RTT/2 without MPI calls, then
 *                 times the one MPI_Recv (median);
 *   bw_MBps       windowed MPI_Isend stream (one 0-byte answer per window),
 *                 bytes of payload per microsecond, per size;
 *   breakdown     the o_r probe again, in chunks, with VIPL's instrumentation on in both
 *                 processes (vipl_instr.h; libvipl.so is the library the
 *                 viastack provider runs on, one per process): the mean time
 *                 in MPI_Send and in MPI_Recv per message and every VIPL
 *                 counter of each side, so logp can tell how much of o_s and
 *                 o_r was spent below the provider.  Over other transports
 *                 VIPL is not used and the counters are empty.
 * --round: RTT/2, g and the bandwidth at 4 KB, 32 KB, 64 KB, 256 KB, 1 MB only
 * (one round of logp's interleaved comparison; 64 KB is where #28's bandwidth
 * bar starts).  Times are TSC cycles
 * (vipl_instr_now) converted with VIPL's calibrated rate; single timed
 * operations have one clock-read pair, measured and taken off. */
#include <vipl_instr.h>

#include <mpi.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { kTag = 1, kAckTag = 2, kMaxWindow = 64, kMaxCounters = 256 };

static int me;
static double cyc_per_ns;

static double ns_since(uint64_t t0) { return (double)(vipl_instr_now() - t0) / cyc_per_ns; }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, long n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Relative interquartile range of a series median() has sorted. */
static double spread_of(const double *sorted, long n) {
    const double med = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    return med > 0 ? (sorted[(3 * n) / 4] - sorted[n / 4]) / med : 0;
}

static void print_metric_spread(const char *metric, size_t bytes, double value, double spread) {
    if (me == 0)
        printf("{\"metric\":\"%s\",\"bytes\":%zu,\"median\":%.5f,\"spread\":%.4f}\n", metric, bytes, value, spread);
}

static void print_metric(const char *metric, size_t bytes, double value) {
    if (me == 0) printf("{\"metric\":\"%s\",\"bytes\":%zu,\"median\":%.5f}\n", metric, bytes, value);
}

/* Computation without library calls; after a window of spins the CPU is
 * offered to others (two ranks sharing a CPU on a busy machine still move). */
static void spin_ns(double ns) {
    uint64_t t0 = vipl_instr_now();
    while (ns_since(t0) < ns) __builtin_ia32_pause();
}

static void wait_flag(volatile uint64_t *flag, uint64_t value) {
    for (unsigned n = 1; __atomic_load_n(flag, __ATOMIC_ACQUIRE) != value; n++)
        if (n % 4096 == 0) sched_yield();
}

/* Median of an empty timed interval (one clock-read pair). */
static double timer_ns(void) {
    double v[201];
    for (int i = 0; i < 201; i++) {
        uint64_t t0 = vipl_instr_now();
        v[i] = ns_since(t0);
    }
    return median(v, 201);
}

/* Round trips of 16 bytes; returns RTT/2 in ns (median). */
static double rtt_half_ns(char *buf, long iters, double *scratch) {
    const int peer = 1 - me;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < iters; i++) {
        uint64_t t0 = vipl_instr_now();
        if (me == 0) {
            MPI_Send(buf, 16, MPI_BYTE, peer, kTag, MPI_COMM_WORLD);
            MPI_Recv(buf, 16, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, 16, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 16, MPI_BYTE, peer, kTag, MPI_COMM_WORLD);
        }
        scratch[i] = ns_since(t0);
    }
    return median(scratch, iters) / 2.0;
}

/* A burst of m back-to-back 16-byte sends; rank 0's time for the sends, ns. */
static double burst_ns(char *buf, int m) {
    double t = 0;
    if (me == 0) {
        uint64_t t0 = vipl_instr_now();
        for (int i = 0; i < m; i++) MPI_Send(buf, 16, MPI_BYTE, 1, kTag, MPI_COMM_WORLD);
        t = ns_since(t0);
        MPI_Recv(NULL, 0, MPI_BYTE, 1, kAckTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        for (int i = 0; i < m; i++) MPI_Recv(buf, 16, MPI_BYTE, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(NULL, 0, MPI_BYTE, 0, kAckTag, MPI_COMM_WORLD);
    }
    return t;
}

/* Least-squares slope of the median T(M) over the burst sizes, sizes
 * interleaved in rounds so that drift spreads over all of them. */
static double burst_slope_ns(char *buf, const int *sizes, int nsizes, long reps, double *scratch) {
    double x[8], y[8];
    for (long r = 0; r < reps; r++)
        for (int s = 0; s < nsizes; s++) scratch[(size_t)s * (size_t)reps + (size_t)r] = burst_ns(buf, sizes[s]);
    double mx = 0, my = 0, sxx = 0, sxy = 0;
    for (int s = 0; s < nsizes; s++) {
        x[s] = sizes[s];
        y[s] = median(scratch + (size_t)s * (size_t)reps, reps);
        mx += x[s] / nsizes;
        my += y[s] / nsizes;
    }
    for (int s = 0; s < nsizes; s++) {
        sxx += (x[s] - mx) * (x[s] - mx);
        sxy += (x[s] - mx) * (y[s] - my);
    }
    return sxy / sxx;
}

/* The receive probe.  flags[0]: rank 1 is ready for message i (i + 1);
 * flags[1]: rank 0 is about to send it (i + 1).  Rank 1 computes for delay_ns
 * after the second, so the message has arrived when it calls MPI_Recv; rank
 * 0's single MPI_Send is timed too.  Fills os[i] (rank 0) / orr[i] (rank 1). */
static void recv_probe(char *buf, volatile uint64_t *flags, long iters, double delay_ns, double clock_ns, double *os,
                       double *orr) {
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < iters; i++) {
        if (me == 0) {
            wait_flag(&flags[0], (uint64_t)i + 1);
            __atomic_store_n(&flags[1], (uint64_t)i + 1, __ATOMIC_RELEASE);
            uint64_t t0 = vipl_instr_now();
            MPI_Send(buf, 16, MPI_BYTE, 1, kTag, MPI_COMM_WORLD);
            os[i] = ns_since(t0) - clock_ns;
        } else {
            __atomic_store_n(&flags[0], (uint64_t)i + 1, __ATOMIC_RELEASE);
            wait_flag(&flags[1], (uint64_t)i + 1);
            spin_ns(delay_ns);
            uint64_t t0 = vipl_instr_now();
            MPI_Recv(buf, 16, MPI_BYTE, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            orr[i] = ns_since(t0) - clock_ns;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Microseconds per message of a windowed stream 0 -> 1. */
static double stream_us(char *buf, size_t bytes, int window, long windows) {
    MPI_Request req[kMaxWindow];
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t t0 = vipl_instr_now();
    for (long w = 0; w < windows; w++) {
        for (int i = 0; i < window; i++) {
            if (me == 0) MPI_Isend(buf + (size_t)i * bytes, (int)bytes, MPI_BYTE, 1, kTag, MPI_COMM_WORLD, &req[i]);
            else MPI_Irecv(buf + (size_t)i * bytes, (int)bytes, MPI_BYTE, 0, kTag, MPI_COMM_WORLD, &req[i]);
        }
        MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
        if (me == 0) MPI_Recv(NULL, 0, MPI_BYTE, 1, kAckTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Send(NULL, 0, MPI_BYTE, 0, kAckTag, MPI_COMM_WORLD);
    }
    return ns_since(t0) / 1e3 / ((double)windows * window);
}

/* Bandwidth of each size: the median of three streams of ~bulk_mb MB each
 * (at most `iters` messages, at least 4 windows), after one warm-up window. */
static void bandwidth(char *buf, const size_t *sizes, int nsizes, long bulk_mb, long iters) {
    for (int s = 0; s < nsizes; s++) {
        const size_t bytes = sizes[s];
        const int window = bytes <= 1024 ? kMaxWindow : 16;
        long windows = (long)(((size_t)bulk_mb << 20) / (bytes * (size_t)window));
        if (windows > iters / window) windows = iters / window; /* small messages: as many as the round trips */
        if (windows < 4) windows = 4;
        stream_us(buf, bytes, window, 1);
        double v[3];
        for (int r = 0; r < 3; r++) v[r] = (double)bytes / stream_us(buf, bytes, window, windows);
        print_metric("bw_MBps", bytes, median(v, 3));
    }
}

/* One side's VIPL counters as JSON members of the breakdown line. */
static int counters_json(char *out, size_t cap) {
    vipl_instr_sample s[kMaxCounters];
    size_t n = vipl_instr_snapshot(s, kMaxCounters);
    if (n > kMaxCounters) n = kMaxCounters;
    int len = 0;
    for (size_t i = 0; i < n && (size_t)len < cap; i++)
        len += snprintf(out + len, cap - (size_t)len,
                        "%s{\"name\":\"%s\",\"category\":\"%s\",\"count\":%llu,\"ns\":%.1f}", i ? "," : "", s[i].name,
                        vipl_instr_category_name(s[i].category), (unsigned long long)s[i].count, s[i].ns);
    return (size_t)len < cap ? len : -1;
}

/* The probe with the instrumentation on, in kChunks chunks, each counted
 * apart: the counters are sums, so a chunk in which a rank was descheduled
 * (a busy machine) inflates its means; the chunk printed is the one whose
 * total (mean time in MPI_Send + in MPI_Recv) is the median, with that same
 * chunk's counters of both sides.  Rank 0 prints it. */
enum { kChunks = 9, kCountersJson = 65536 };
static char chunk_json[2][kChunks][kCountersJson];
static void breakdown(char *buf, volatile uint64_t *flags, long iters, double delay_ns, double clock_ns, double *os,
                      double *orr) {
    const long per_chunk = iters / kChunks > 10 ? iters / kChunks : 10;
    double send_mean[kChunks], recv_mean[kChunks], total[kChunks];
    recv_probe(buf, flags, per_chunk, delay_ns, clock_ns, os, orr); /* warm */
    for (int c = 0; c < kChunks; c++) {
        vipl_instr_reset();
        vipl_instr_enable(1);
        recv_probe(buf, flags, per_chunk, delay_ns, clock_ns, os, orr);
        vipl_instr_enable(0);
        double mean = 0;
        for (long i = 0; i < per_chunk; i++) mean += (me == 0 ? os[i] : orr[i]) / (double)per_chunk;
        char *mine = chunk_json[0][c];
        int len = counters_json(mine, kCountersJson);
        if (len < 0) MPI_Abort(MPI_COMM_WORLD, 3);
        if (me == 1) {
            MPI_Send(&mean, 1, MPI_DOUBLE, 0, kAckTag, MPI_COMM_WORLD);
            MPI_Send(mine, len + 1, MPI_CHAR, 0, kAckTag, MPI_COMM_WORLD);
        } else {
            send_mean[c] = mean;
            MPI_Recv(&recv_mean[c], 1, MPI_DOUBLE, 1, kAckTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(chunk_json[1][c], kCountersJson, MPI_CHAR, 1, kAckTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total[c] = send_mean[c] + recv_mean[c];
        }
        flags[0] = flags[1] = 0; /* the next chunk counts from 1 again */
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (me != 0) return;
    double sorted[kChunks];
    memcpy(sorted, total, sizeof sorted);
    const double mid = median(sorted, kChunks); /* kChunks is odd: one of the totals */
    int pick = 0;
    while (pick < kChunks - 1 && total[pick] != mid) pick++;
    printf("{\"metric\":\"breakdown\",\"messages\":%ld,\"chunks\":%d,\"chunk_total_min_ns\":%.2f,"
           "\"chunk_total_max_ns\":%.2f,\"send_ns\":%.2f,\"recv_ns\":%.2f,\"sender\":[%s],\"receiver\":[%s]}\n",
           per_chunk, kChunks, sorted[0], sorted[kChunks - 1], send_mean[pick], recv_mean[pick], chunk_json[0][pick],
           chunk_json[1][pick]);
}

/* Shared memory for the probe's two flags (the ranks are on one host):
 * rank 0 creates it, names it to rank 1, and removes the name once mapped. */
static volatile uint64_t *map_flags(void) {
    char name[64];
    if (me == 0) snprintf(name, sizeof name, "/logp-mpi-%d", (int)getpid());
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
    int fd = shm_open(name, me == 0 ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
    if (fd >= 0 && me == 0 && ftruncate(fd, 4096) != 0) fd = -1;
    MPI_Barrier(MPI_COMM_WORLD); /* created and sized before rank 1 maps it */
    if (me == 1 && fd < 0) fd = shm_open(name, O_RDWR, 0600);
    void *p = fd >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0) close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) shm_unlink(name);
    if (p == MAP_FAILED) {
        fprintf(stderr, "logp_mpi: rank %d cannot map the shared flags %s (both ranks must be on one host)\n", me,
                name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return (volatile uint64_t *)p;
}

static int usage(const char *why) {
    if (me == 0)
        fprintf(stderr, "logp_mpi: %s; usage: logp_mpi [--iters N (>= 10)] [--bulk-mb M (>= 1)] [--round], 2 ranks\n",
                why);
    MPI_Finalize();
    return 2;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    long iters = 20000, bulk_mb = 64;
    int round_only = 0;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--bulk-mb") && i + 1 < argc) bulk_mb = strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--round")) round_only = 1;
        else return usage("unknown argument");
        if (end && *end) return usage("not a number");
    }
    if (np != 2) return usage("needs exactly 2 ranks");
    if (iters < 10 || bulk_mb < 1) return usage("--iters below 10 or --bulk-mb below 1");

    cyc_per_ns = vipl_instr_cycles_per_ns();
    const double clock_ns = timer_ns();
    char *buf = malloc(16u << 20);
    double *a = malloc(sizeof(double) * (size_t)iters * 8), *b = malloc(sizeof(double) * (size_t)iters);
    if (!buf || !a || !b) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(buf, 1, 16u << 20);
    const long reps = iters / 100 > 5 ? iters / 100 : 5;
    static const int short_m[] = {1, 2, 4, 8, 16}, long_m[] = {64, 128, 256};

    rtt_half_ns(buf, iters / 10 + 1, a); /* warm-up: connections, buffers */
    const double rtt2 = rtt_half_ns(buf, iters, a) - clock_ns / 2;
    print_metric_spread("rtt_half_us", 16, rtt2 / 1e3, spread_of(a, iters));
    print_metric("g_us", 16, burst_slope_ns(buf, long_m, 3, reps, a) / 1e3);
    if (round_only) {
        static const size_t sizes[] = {4096, 32768, 65536, 262144, 1048576};
        bandwidth(buf, sizes, 5, bulk_mb, iters);
    } else {
        print_metric("o_s_us", 16, burst_slope_ns(buf, short_m, 5, reps, a) / 1e3);
        volatile uint64_t *flags = map_flags();
        const double delay = 5 * rtt2;
        recv_probe(buf, flags, iters / 10 + 1, delay, clock_ns, a, b);
        recv_probe(buf, flags, iters, delay, clock_ns, a, b);
        if (me == 1) {
            double o_r[2] = {median(b, iters), 0};
            o_r[1] = spread_of(b, iters);
            MPI_Send(o_r, 2, MPI_DOUBLE, 0, kAckTag, MPI_COMM_WORLD);
        } else {
            double o_r[2];
            MPI_Recv(o_r, 2, MPI_DOUBLE, 1, kAckTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            print_metric_spread("o_r_us", 16, o_r[0] / 1e3, o_r[1]);
            print_metric("o_s_single_us", 16, median(a, iters) / 1e3);
        }
        static const size_t sizes[] = {16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576};
        bandwidth(buf, sizes, 9, bulk_mb, iters);
        /* the same flags from 1 again */
        flags[0] = flags[1] = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        breakdown(buf, flags, iters < 4500 ? iters : 4500, delay, clock_ns, a, b);
    }
    fflush(stdout);
    free(buf);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
