/* mpi_rma - one-sided communication: windows from MPI_Win_create and
 * MPI_Win_allocate; MPI_Put, MPI_Get and MPI_Accumulate in fence epochs and in
 * passive-target epochs (MPI_Win_lock/unlock, exclusive and shared); large
 * transfers and derived datatypes; MPI_Fetch_and_op as a shared counter.
 * Any rank count >= 2. */
#include "mpi_check.h"

#include <string.h>

static int rank, size;

enum { SLOT = 16 }; /* ints per origin rank in the fence windows */

static int v(int origin, int target, int i) { return origin * 100000 + target * 100 + i; }

/* Fence epochs on a window over user memory: every rank puts its slot into
 * every other rank, then gets its right neighbour's whole array, then all
 * accumulate into rank 0's counters. */
static void test_fence(MPI_Win win, int *mem) {
    int *src = malloc(sizeof(int) * SLOT);
    MPI_OK(MPI_Win_fence(0, win));
    for (int t = 0; t < size; t++) {
        for (int i = 0; i < SLOT; i++) src[i] = v(rank, t, i);
        /* The origin buffer may be read until the epoch closes: a fence
         * after each put lets src be refilled for the next target. */
        MPI_OK(MPI_Put(src, SLOT, MPI_INT, t, (MPI_Aint)rank * SLOT, SLOT, MPI_INT, win));
        MPI_OK(MPI_Win_fence(0, win));
    }
    for (int o = 0; o < size; o++)
        for (int i = 0; i < SLOT; i++)
            CHECK(mem[o * SLOT + i] == v(o, rank, i), "fence put: slot %d [%d] = %d, expected %d", o, i,
                  mem[o * SLOT + i], v(o, rank, i));
    int right = (rank + 1) % size, *got = malloc(sizeof(int) * SLOT * (size_t)size);
    MPI_OK(MPI_Get(got, SLOT * size, MPI_INT, right, 0, SLOT * size, MPI_INT, win));
    MPI_OK(MPI_Win_fence(0, win));
    for (int o = 0; o < size; o++)
        for (int i = 0; i < SLOT; i++)
            CHECK(got[o * SLOT + i] == v(o, right, i), "fence get: slot %d [%d] = %d, expected %d", o, i,
                  got[o * SLOT + i], v(o, right, i));
    /* Accumulate: SUM into rank 0's slot 0, MAX into its slot 1, from all. */
    for (int i = 0; i < SLOT; i++) src[i] = rank + i;
    MPI_OK(MPI_Win_fence(0, win));
    if (rank == 0) memset(mem, 0, sizeof(int) * 2 * SLOT);
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Accumulate(src, SLOT, MPI_INT, 0, 0, SLOT, MPI_INT, MPI_SUM, win));
    MPI_OK(MPI_Accumulate(src, SLOT, MPI_INT, 0, SLOT, SLOT, MPI_INT, MPI_MAX, win));
    MPI_OK(MPI_Win_fence(0, win));
    if (rank == 0)
        for (int i = 0; i < SLOT; i++) {
            int sum = size * (size - 1) / 2 + size * i;
            CHECK(mem[i] == sum, "fence accumulate sum: [%d] = %d, expected %d", i, mem[i], sum);
            CHECK(mem[SLOT + i] == size - 1 + i, "fence accumulate max: [%d] = %d, expected %d", i, mem[SLOT + i],
                  size - 1 + i);
        }
    MPI_OK(MPI_Win_fence(0, win));
    free(src);
    free(got);
}

/* Large transfers: 4 MiB + 3 bytes put into the right neighbour and read
 * back from the left, and a strided vector target type. */
static void test_fence_large(void) {
    size_t n = (4u << 20) + 3;
    unsigned char *mem, *src = malloc(n), *back = malloc(n);
    MPI_Win win;
    MPI_OK(MPI_Win_allocate((MPI_Aint)n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    pattern_fill(src, n, rank, 1);
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Put(src, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win));
    MPI_OK(MPI_Win_fence(0, win));
    pattern_check(mem, n, left, 1, "large put");
    MPI_OK(MPI_Get(back, (int)n, MPI_BYTE, left, 0, (int)n, MPI_BYTE, win));
    MPI_OK(MPI_Win_fence(0, win));
    pattern_check(back, n, (left + size - 1) % size, 1, "large get");
    /* Every 4th int of the target gets a contiguous origin array. */
    int cnt = 100000, *ints = malloc(sizeof(int) * (size_t)cnt);
    for (int i = 0; i < cnt; i++) ints[i] = v(rank, right, i % 1000);
    MPI_Datatype strided;
    MPI_OK(MPI_Type_vector(cnt, 1, 4, MPI_INT, &strided));
    MPI_OK(MPI_Type_commit(&strided));
    memset(mem, 0, n);
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Put(ints, cnt, MPI_INT, right, 0, 1, strided, win));
    MPI_OK(MPI_Win_fence(0, win));
    int *m = (int *)mem;
    for (int i = 0; i < 4 * cnt; i++) {
        int want = i % 4 == 0 ? v(left, rank, (i / 4) % 1000) : 0;
        CHECK(m[i] == want, "strided put: int %d is %d, expected %d", i, m[i], want);
    }
    MPI_OK(MPI_Type_free(&strided));
    MPI_OK(MPI_Win_free(&win));
    free(src);
    free(back);
    free(ints);
}

/* Passive target: each rank, under an exclusive lock, writes its slot of
 * every other rank's window; under shared locks everyone adds to rank 0's
 * counter ROUNDS times.  Local reads of the window happen under a lock. */
static void test_lock(void) {
    enum { ROUNDS = 50 };
    int *mem;
    MPI_Win win;
    MPI_OK(MPI_Win_allocate(sizeof(int) * SLOT * (MPI_Aint)(size + 1), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                            &win));
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    memset(mem, 0, sizeof(int) * SLOT * (size_t)(size + 1));
    MPI_OK(MPI_Win_unlock(rank, win));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    int src[SLOT];
    for (int t = 0; t < size; t++) {
        int target = (rank + t) % size;
        for (int i = 0; i < SLOT; i++) src[i] = v(rank, target, i);
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win));
        MPI_OK(MPI_Put(src, SLOT, MPI_INT, target, rank * SLOT, SLOT, MPI_INT, win));
        MPI_OK(MPI_Win_unlock(target, win));
    }
    int one[SLOT];
    for (int i = 0; i < SLOT; i++) one[i] = i + 1;
    for (int k = 0; k < ROUNDS; k++) {
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MPI_OK(MPI_Accumulate(one, SLOT, MPI_INT, 0, size * SLOT, SLOT, MPI_INT, MPI_SUM, win));
        MPI_OK(MPI_Win_unlock(0, win));
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    for (int o = 0; o < size; o++)
        for (int i = 0; i < SLOT; i++)
            CHECK(mem[o * SLOT + i] == v(o, rank, i), "lock put: slot %d [%d] = %d, expected %d", o, i,
                  mem[o * SLOT + i], v(o, rank, i));
    if (rank == 0)
        for (int i = 0; i < SLOT; i++)
            CHECK(mem[size * SLOT + i] == size * ROUNDS * (i + 1), "lock accumulate: [%d] = %d, expected %d", i,
                  mem[size * SLOT + i], size * ROUNDS * (i + 1));
    MPI_OK(MPI_Win_unlock(rank, win));
    /* Get under a shared lock sees what the owner wrote. */
    int right = (rank + 1) % size, got[SLOT];
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MPI_OK(MPI_Get(got, SLOT, MPI_INT, right, 0, SLOT, MPI_INT, win));
    MPI_OK(MPI_Win_unlock(right, win));
    for (int i = 0; i < SLOT; i++)
        CHECK(got[i] == v(0, right, i), "lock get: [%d] = %d, expected %d", i, got[i], v(0, right, i));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Win_free(&win));
}

/* A shared counter on rank 0 taken with MPI_Fetch_and_op: the values handed
 * out are exactly 0 .. size*TAKES-1, each once. */
static void test_fetch_and_op(void) {
    enum { TAKES = 40 };
    long *ctr;
    MPI_Win win;
    MPI_OK(MPI_Win_allocate(sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &ctr, &win));
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    *ctr = 0;
    MPI_OK(MPI_Win_unlock(rank, win));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    long mine[TAKES], one = 1;
    MPI_OK(MPI_Win_lock_all(0, win));
    for (int k = 0; k < TAKES; k++) {
        MPI_OK(MPI_Fetch_and_op(&one, &mine[k], MPI_LONG, 0, 0, MPI_SUM, win));
        MPI_OK(MPI_Win_flush(0, win));
    }
    MPI_OK(MPI_Win_unlock_all(win));
    long *all = rank == 0 ? malloc(sizeof(long) * TAKES * (size_t)size) : NULL;
    MPI_OK(MPI_Gather(mine, TAKES, MPI_LONG, all, TAKES, MPI_LONG, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        char *seen = calloc((size_t)(TAKES * size), 1);
        for (int i = 0; i < TAKES * size; i++) {
            CHECK(all[i] >= 0 && all[i] < TAKES * size && !seen[all[i]],
                  "fetch_and_op: value %ld handed out twice or out of range", all[i]);
            seen[all[i]] = 1;
        }
        free(seen);
        free(all);
    }
    MPI_OK(MPI_Win_free(&win));
}

int main(int argc, char **argv) {
    check_init(&argc, &argv, &rank, &size);
    CHECK(size >= 2, "needs at least 2 ranks, got %d", size);
    int *mem = calloc((size_t)SLOT * size, sizeof(int));
    MPI_Win win;
    MPI_OK(MPI_Win_create(mem, sizeof(int) * SLOT * (MPI_Aint)size, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    test_fence(win, mem);
    MPI_OK(MPI_Win_free(&win));
    free(mem);
    test_fence_large();
    test_lock();
    test_fetch_and_op();
    check_done("mpi_rma", rank, size);
    return 0;
}
