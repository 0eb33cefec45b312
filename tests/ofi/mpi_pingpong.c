/* mpi_pingpong.c - an MPI smoke test of the route Open MPI mtl:ofi ->
 * ofi_rxm -> viastack -> VIPL: a 2-rank ping-pong of 0 B .. 1 MiB (eager
 * and rendezvous sizes of rxm), checked byte by byte, a barrier and an
 * allreduce. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "run me on 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int max = 1 << 20;
    unsigned char *a = malloc(max), *b = malloc(max);
    int peer = 1 - rank;
    for (int len = 0; len <= max; len = len ? len * 4 : 1) {
        for (int it = 0; it < 10; it++) {
            if (rank == 0) {
                for (int i = 0; i < len; i++) a[i] = (unsigned char)(i * 13 + it + len);
                MPI_Send(a, len, MPI_BYTE, peer, it, MPI_COMM_WORLD);
                MPI_Recv(b, len, MPI_BYTE, peer, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (memcmp(a, b, (size_t)len) != 0) {
                    fprintf(stderr, "echo of %d bytes differs\n", len);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            } else {
                MPI_Status st;
                MPI_Recv(b, len, MPI_BYTE, peer, it, MPI_COMM_WORLD, &st);
                int n;
                MPI_Get_count(&st, MPI_BYTE, &n);
                if (n != len) {
                    fprintf(stderr, "received %d bytes, expected %d\n", n, len);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                MPI_Send(b, len, MPI_BYTE, peer, it, MPI_COMM_WORLD);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != 2) {
        fprintf(stderr, "allreduce gave %d\n", sum);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) printf("mpi_pingpong: all checks passed\n");
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
