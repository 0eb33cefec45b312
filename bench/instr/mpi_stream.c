/* mpi_stream.c - a windowed MPI_Isend stream from rank 0 to rank 1, the
 * pattern of logp_mpi's bandwidth (windows of 16 messages, message i of a
 * window at buf + i * size, one 0-byte answer per window), for
 * ofi_protocol.sh to count what each message costs.
 *
 *   mpirun -n 2 ... mpi_stream SIZE WINDOWS
 *
 * With MPI_STREAM_PRINT set, rank 0 prints the payload rate. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kWindow = 16, kTag = 1, kAckTag = 2 };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    char *end1 = NULL, *end2 = NULL;
    const long size = argc == 3 ? strtol(argv[1], &end1, 10) : -1;
    const long windows = argc == 3 ? strtol(argv[2], &end2, 10) : -1;
    if (np != 2 || size < 0 || size > (1L << 24) || windows < 1 || *end1 || *end2) {
        if (me == 0) fprintf(stderr, "mpi_stream: usage: mpi_stream SIZE (0..16777216) WINDOWS (>= 1), 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    char *buf = malloc((size_t)size * kWindow + 1);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(buf, me + 1, (size_t)size * kWindow + 1);
    MPI_Request req[kWindow];
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (long w = 0; w < windows; w++) {
        for (int i = 0; i < kWindow; i++) {
            char *b = buf + (size_t)i * (size_t)size;
            if (me == 0) MPI_Isend(b, (int)size, MPI_BYTE, 1, kTag, MPI_COMM_WORLD, &req[i]);
            else MPI_Irecv(b, (int)size, MPI_BYTE, 0, kTag, MPI_COMM_WORLD, &req[i]);
        }
        MPI_Waitall(kWindow, req, MPI_STATUSES_IGNORE);
        if (me == 0) MPI_Recv(NULL, 0, MPI_BYTE, 1, kAckTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Send(NULL, 0, MPI_BYTE, 0, kAckTag, MPI_COMM_WORLD);
    }
    const double t = MPI_Wtime() - t0;
    if (me == 0 && getenv("MPI_STREAM_PRINT"))
        printf("mpi_stream: %ld B: %.1f MB/s\n", size, (double)size * kWindow * (double)windows / t / 1e6);
    free(buf);
    MPI_Finalize();
    return 0;
}
