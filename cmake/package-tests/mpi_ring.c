/* mpi_ring.c - an MPI program as a user of the installed package writes it
 * (package_mpi): `mpicc mpi_ring.c`, run by mpirun over the viastack
 * libfabric provider.  A message of each size (0 B to 1 MiB) travels once
 * round the ring of all ranks and comes back to rank 0 as sent, every rank
 * checking every byte; then an MPI_Allreduce of the ranks.  Prints
 * "mpi_ring: N ranks, all checks passed" at rank 0, exits non-zero on any
 * mismatch. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char pattern(int i, int len) { return (unsigned char)(i * 7 + len); }

static int check(const unsigned char *buf, int len, int rank, const char *what) {
    for (int i = 0; i < len; i++) {
        if (buf[i] != pattern(i, len)) {
            fprintf(stderr, "mpi_ring: rank %d: %s of %d bytes: byte %d is %d, not %d\n", rank, what, len, i, buf[i],
                    pattern(i, len));
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int max = 1 << 20;
    unsigned char *buf = malloc(max);
    if (!buf) {
        fprintf(stderr, "mpi_ring: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int bad = 0;
    for (int len = 0; len <= max; len = len ? len * 4 : 1) {
        if (rank == 0) {
            for (int i = 0; i < len; i++) buf[i] = pattern(i, len);
            MPI_Send(buf, len, MPI_BYTE, next, len, MPI_COMM_WORLD);
            MPI_Recv(buf, len, MPI_BYTE, prev, len, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad |= check(buf, len, rank, "the ring's return");
        } else {
            MPI_Status st;
            int count;
            MPI_Recv(buf, max, MPI_BYTE, prev, len, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            if (count != len) {
                fprintf(stderr, "mpi_ring: rank %d received %d bytes, not %d\n", rank, count, len);
                bad = 1;
            }
            bad |= check(buf, len, rank, "a receive");
            MPI_Send(buf, len, MPI_BYTE, next, len, MPI_COMM_WORLD);
        }
    }
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size * (size - 1) / 2) {
        fprintf(stderr, "mpi_ring: rank %d: allreduce gave %d, not %d\n", rank, sum, size * (size - 1) / 2);
        bad = 1;
    }
    int any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0 && !any_bad) printf("mpi_ring: %d ranks, all checks passed\n", size);
    free(buf);
    MPI_Finalize();
    return any_bad;
}
