/* mpi_threads.c - MPI_THREAD_MULTIPLE, written from the MPI standard
 * (MPI 3.1, section 12.4 "MPI and Threads"): 4 threads per rank communicate
 * at once.
 *
 *  1. MPI_Init_thread asks for MPI_THREAD_MULTIPLE; the program fails unless
 *     it is provided (a run that silently got less would prove nothing).
 *  2. Each thread has a communicator of its own (MPI_Comm_dup of
 *     MPI_COMM_WORLD, made by the main thread: collective calls on one
 *     communicator may not run concurrently).  On it, every round, the
 *     thread posts a nonblocking receive from every other rank and a
 *     nonblocking send to every other rank (MPI_Irecv, MPI_Isend,
 *     MPI_Waitall), then a blocking ring exchange (MPI_Sendrecv); sizes run
 *     from 1 byte to 200 KB, past Open MPI's eager limits, and every byte is
 *     checked.
 *  3. The same traffic with all threads on MPI_COMM_WORLD, told apart by
 *     their tags only.
 */
#include "mpi_check.h"

#include <pthread.h>
#include <string.h>

#define NTHREADS 4
#define ROUNDS 12
#define MAXLEN (200 * 1000)

static int rank, size;
static MPI_Comm comms[NTHREADS];

struct worker {
    int t;
    MPI_Comm comm;
    int tag_base; /* phase 3: the thread's tags */
    pthread_t th;
};

static size_t len_of(int round, int t) {
    static const size_t lens[] = {1, 100, 4096, 70000, 33, MAXLEN};
    return lens[(round + t) % (sizeof(lens) / sizeof(lens[0]))];
}

/* The sequence number a pattern carries: who, which thread, which round. */
static int seq_of(int t, int round, int kind) { return (t * 1000 + round) * 4 + kind; }

static void *run(void *arg) {
    struct worker *w = arg;
    int nreq = 2 * (size - 1);
    unsigned char *out = malloc(MAXLEN), *in = malloc((size_t)size * MAXLEN);
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t)nreq);
    CHECK(out && in && req, "out of memory");
    for (int round = 0; round < ROUNDS; round++) {
        size_t len = len_of(round, w->t);
        int tag = w->tag_base + round;
        /* all to all, nonblocking */
        int n = 0;
        for (int p = 0; p < size; p++)
            if (p != rank)
                MPI_OK(MPI_Irecv(in + (size_t)p * MAXLEN, (int)len, MPI_UNSIGNED_CHAR, p, tag, w->comm, &req[n++]));
        pattern_fill(out, len, rank, seq_of(w->t, round, 0));
        for (int p = 0; p < size; p++)
            if (p != rank) MPI_OK(MPI_Isend(out, (int)len, MPI_UNSIGNED_CHAR, p, tag, w->comm, &req[n++]));
        MPI_Status st[2 * 64];
        CHECK(nreq <= 2 * 64, "too many ranks for this test");
        MPI_OK(MPI_Waitall(nreq, req, st));
        for (int p = 0, k = 0; p < size; p++) {
            if (p == rank) continue;
            int count;
            MPI_OK(MPI_Get_count(&st[k], MPI_UNSIGNED_CHAR, &count));
            CHECK(count == (int)len && st[k].MPI_SOURCE == p && st[k].MPI_TAG == tag,
                  "thread %d round %d: from %d got %d bytes, tag %d (expected %zu, tag %d)", w->t, round,
                  st[k].MPI_SOURCE, count, st[k].MPI_TAG, len, tag);
            k++;
            pattern_check(in + (size_t)p * MAXLEN, len, p, seq_of(w->t, round, 0), "nonblocking message");
        }
        /* a blocking ring exchange */
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        pattern_fill(out, len, rank, seq_of(w->t, round, 1));
        MPI_Status s;
        MPI_OK(MPI_Sendrecv(out, (int)len, MPI_UNSIGNED_CHAR, right, tag, in, MAXLEN, MPI_UNSIGNED_CHAR, left, tag,
                            w->comm, &s));
        int count;
        MPI_OK(MPI_Get_count(&s, MPI_UNSIGNED_CHAR, &count));
        CHECK(count == (int)len, "thread %d round %d: ring message of %d bytes, expected %zu", w->t, round, count, len);
        pattern_check(in, len, left, seq_of(w->t, round, 1), "ring message");
    }
    free(out);
    free(in);
    free(req);
    return NULL;
}

static void phase(int shared_world) {
    struct worker w[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        w[t].t = t;
        w[t].comm = shared_world ? MPI_COMM_WORLD : comms[t];
        w[t].tag_base = shared_world ? 100 * (t + 1) : 0;
        CHECK(pthread_create(&w[t].th, NULL, run, &w[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < NTHREADS; t++) pthread_join(w[t].th, NULL);
}

int main(int argc, char **argv) {
    (void)check_init; /* MPI_Init_thread instead: the level is what this program tests */
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_Init_thread provided level %d, not MPI_THREAD_MULTIPLE (%d)", provided,
          MPI_THREAD_MULTIPLE);
    for (int t = 0; t < NTHREADS; t++) {
        MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
        MPI_Comm_set_errhandler(comms[t], MPI_ERRORS_RETURN);
    }
    phase(0);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    phase(1);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int t = 0; t < NTHREADS; t++) MPI_OK(MPI_Comm_free(&comms[t]));
    if (rank == 0)
        printf("mpi_threads: %d ranks x %d threads, own communicators and shared tags: all checks passed\n", size,
               NTHREADS);
    MPI_Finalize();
    return 0;
}
