/* mpi_count_pingpong.c - N round trips of a 16-byte MPI_Send / MPI_Recv
 * between 2 ranks on one host, sequenced so that no MPI_Recv ever waits:
 * count_mpi.sh runs it under callgrind, collecting only inside MPI_Send and
 * MPI_Recv, so that a count per round trip is the work of the MPI library and
 * what it runs on, not polls whose number the machine's load decides
 * (docs/mpi.md, "Instructions per MPI round trip").
 *
 *   mpirun -np 2 ... mpi_count_pingpong N        (N >= 1)
 *
 * Round trip i: rank 0 sends, then raises a shared flag; rank 1 waits for the
 * flag outside MPI, receives (the message is there: every transport counted
 * delivers an eager 16-byte message within the sender's MPI_Send), answers,
 * raises the other flag; rank 0 waits for it, then receives.  A warm-up of 100
 * round trips (connections, buffers) comes first, not collected; whatever of
 * the set-up is collected is the same for every N, so differencing two N
 * removes it. */
#include <mpi.h>

#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { kTag = 1, kBytes = 16, kWarmup = 100 };

static void wait_flag(volatile uint64_t *flag, uint64_t value) {
    for (unsigned n = 1; __atomic_load_n(flag, __ATOMIC_ACQUIRE) != value; n++)
        if (n % 64 == 0) sched_yield(); /* under callgrind each rank is slow: give the CPU away */
}

/* Two flags in memory both ranks map (rank 0 creates and names it). */
static volatile uint64_t *map_flags(int me) {
    char name[64];
    if (me == 0) snprintf(name, sizeof name, "/mpi-count-%d", (int)getpid());
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
    int fd = me == 0 ? shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600) : -1;
    if (fd >= 0 && ftruncate(fd, 4096) != 0) {
        close(fd);
        fd = -1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 1) fd = shm_open(name, O_RDWR, 0600);
    void *p = fd >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0) close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) shm_unlink(name);
    if (p == MAP_FAILED) {
        fprintf(stderr, "mpi_count_pingpong: rank %d cannot map the shared flags %s (both ranks must be on one host)\n",
                me, name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return (volatile uint64_t *)p;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    char *end = NULL;
    const long n = argc == 2 ? strtol(argv[1], &end, 10) : 0;
    if (np != 2 || argc != 2 || !end || *end || n < 1) {
        if (me == 0)
            fprintf(stderr, "mpi_count_pingpong: %s; usage: mpi_count_pingpong N (round trips, >= 1), 2 ranks\n",
                    np != 2 ? "needs exactly 2 ranks" : "N must be a whole number >= 1");
        MPI_Finalize();
        return 2;
    }
    char buf[kBytes];
    memset(buf, 1, sizeof buf);
    const int peer = 1 - me;
    /* The warm-up waits for its messages as any ping-pong does, so it calls
     * MPI_Isend / MPI_Irecv + MPI_Wait, which callgrind does not collect. */
    for (int i = 0; i < kWarmup; i++) {
        MPI_Request req;
        if (me == 0) MPI_Isend(buf, kBytes, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, &req);
        else MPI_Irecv(buf, kBytes, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (me == 0) MPI_Irecv(buf, kBytes, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, &req);
        else MPI_Isend(buf, kBytes, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    volatile uint64_t *flags = map_flags(me);
    for (long i = 1; i <= n; i++) {
        if (me == 0) {
            MPI_Send(buf, kBytes, MPI_BYTE, peer, kTag, MPI_COMM_WORLD);
            __atomic_store_n(&flags[0], (uint64_t)i, __ATOMIC_RELEASE);
            wait_flag(&flags[1], (uint64_t)i);
            MPI_Recv(buf, kBytes, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            wait_flag(&flags[0], (uint64_t)i);
            MPI_Recv(buf, kBytes, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, kBytes, MPI_BYTE, peer, kTag, MPI_COMM_WORLD);
            __atomic_store_n(&flags[1], (uint64_t)i, __ATOMIC_RELEASE);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) printf("mpi_count_pingpong: %ld round trips of %d bytes\n", n, kBytes);
    MPI_Finalize();
    return 0;
}
