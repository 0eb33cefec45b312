/* mpi_fault - the program run_fault.sh kills a rank of with SIGKILL.
 *
 * Every rank loops over a ring exchange and an Allreduce, so at any moment
 * each is in communication with its neighbours.  After WARMUP iterations each
 * rank prints its pid on a line "mpi_fault: rank R pid P" and goes on; the
 * script kills one of them with `kill -9` and measures how long the job takes
 * to end.  Left alone, the loop stops after RUN_SECONDS and the program exits
 * with status 3, so a run nobody killed never passes for one that ended on
 * the kill. */
#include "mpi_check.h"

#include <unistd.h>

enum { WARMUP = 100, RUN_SECONDS = 60 };

int main(int argc, char **argv) {
    int rank, size;
    check_init(&argc, &argv, &rank, &size);
    CHECK(size >= 2, "needs at least 2 ranks, got %d", size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    static char out[65536], in[65536];
    double start = MPI_Wtime();
    int go = 1;
    for (int it = 0; go; it++) {
        if (it == WARMUP) {
            printf("mpi_fault: rank %d pid %d\n", rank, (int)getpid());
            fflush(stdout);
        }
        int n = 1 + (it * 7919) % (int)sizeof out;
        MPI_OK(MPI_Sendrecv(out, n, MPI_CHAR, right, 0, in, (int)sizeof in, MPI_CHAR, left, 0, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
        /* Stop when any rank's clock says so, all ranks together. */
        int more = MPI_Wtime() - start < RUN_SECONDS, all;
        MPI_OK(MPI_Allreduce(&more, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        go = all;
    }
    if (rank == 0) fprintf(stderr, "mpi_fault: ran %d s and nobody was killed\n", RUN_SECONDS);
    MPI_Finalize();
    return 3;
}
