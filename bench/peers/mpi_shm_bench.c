/* mpi_shm_bench.c - Open MPI's shared-memory transport measured the way logp
 * measures viastack's layers, so the two can be put side by side.
 *
 *   mpirun -np 2 --mca btl self,vader mpi_shm_bench [--rounds R] [--iters N] [--bulk-mb M]
 *
 * Two ranks on one host.  Per round:
 *   rtt_half_us  16-byte MPI_Send/MPI_Recv ping-pong, RTT/2;
 *   gap_us       16-byte messages streamed rank 0 -> 1 in windows of 64
 *                MPI_Isend (the receiver pre-posts 64 MPI_Irecv), one
 *                zero-byte acknowledgement per window: time per message, g;
 *   bw_MBps      the same stream with 4 KB, 32 KB, 256 KB and 1 MB messages
 *                (windows of 16), bytes per second of payload.
 * Rank 0 prints one JSON object per metric and size, with the median and the
 * spread (min, max) over the rounds, e.g.
 *   {"peer":"openmpi-shm","metric":"rtt_half_us","bytes":16,"median":0.41,...}
 * Timing uses MPI_Wtime; the first round of each metric is a warm-up and not
 * counted. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxRounds = 101, kWindowSmall = 64, kWindowBulk = 16 };

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *metric, size_t bytes, double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    printf("{\"peer\":\"openmpi-shm\",\"tool\":\"mpi_shm_bench\",\"metric\":\"%s\",\"bytes\":%zu,"
           "\"median\":%.4f,\"min\":%.4f,\"max\":%.4f,\"rounds\":%d}\n",
           metric, bytes, median, v[0], v[n - 1], n);
    fflush(stdout);
}

/* RTT/2 in microseconds of `iters` ping-pongs. */
static double pingpong(int me, char *buf, size_t bytes, long iters) {
    int peer = 1 - me;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        if (me == 0) {
            MPI_Send(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * (double)iters);
}

/* Microseconds per message of a windowed stream 0 -> 1. */
static double stream(int me, char *buf, size_t bytes, int window, long windows) {
    MPI_Request req[kWindowSmall];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long w = 0; w < windows; w++) {
        for (int i = 0; i < window; i++) {
            if (me == 0) MPI_Isend(buf + (size_t)i * bytes, (int)bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req[i]);
            else MPI_Irecv(buf + (size_t)i * bytes, (int)bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &req[i]);
        }
        MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
        if (me == 0) MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    }
    return (MPI_Wtime() - t0) * 1e6 / ((double)windows * window);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int rounds = 11;
    long iters = 20000;
    long bulk_mb = 256; /* payload per round and size of the bandwidth streams */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atol(argv[++i]);
        else if (!strcmp(argv[i], "--bulk-mb") && i + 1 < argc) bulk_mb = atol(argv[++i]);
        else {
            if (me == 0)
                fprintf(stderr,
                        "mpi_shm_bench: unknown argument '%s'; usage: mpi_shm_bench [--rounds R] [--iters N] "
                        "[--bulk-mb M]\n",
                        argv[i]);
            MPI_Finalize();
            return 2;
        }
    }
    if (np != 2 || rounds < 1 || rounds >= kMaxRounds || iters < 1 || bulk_mb < 1) {
        if (me == 0)
            fprintf(stderr, "mpi_shm_bench: needs exactly 2 ranks (got %d), 1 <= rounds < %d, iters >= 1\n", np,
                    kMaxRounds);
        MPI_Finalize();
        return 2;
    }
    static const size_t bulk_sizes[] = {4096, 32768, 262144, 1048576};
    char *buf = malloc(kWindowBulk * bulk_sizes[3] > kWindowSmall * 16 ? kWindowBulk * bulk_sizes[3] : 4096);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(buf, 1, kWindowBulk * bulk_sizes[3]);
    double v[kMaxRounds];

    for (int r = 0; r <= rounds; r++) {
        double x = pingpong(me, buf, 16, iters);
        if (r) v[r - 1] = x;
    }
    if (me == 0) report("rtt_half_us", 16, v, rounds);

    for (int r = 0; r <= rounds; r++) {
        double x = stream(me, buf, 16, kWindowSmall, iters / kWindowSmall + 1);
        if (r) v[r - 1] = x;
    }
    if (me == 0) report("gap_us", 16, v, rounds);

    for (int s = 0; s < 4; s++) {
        size_t bytes = bulk_sizes[s];
        long windows = (long)(((size_t)bulk_mb << 20) / (bytes * kWindowBulk)) + 1; /* ~bulk_mb MB a round */
        for (int r = 0; r <= rounds; r++) {
            double us = stream(me, buf, bytes, kWindowBulk, windows);
            if (r) v[r - 1] = (double)bytes / us; /* bytes per microsecond = MB/s */
        }
        if (me == 0) report("bw_MBps", bytes, v, rounds);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
