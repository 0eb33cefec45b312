/* mpi_coll - collectives: Bcast, Reduce (predefined, MAXLOC and a
 * non-commutative user op), Allreduce (also in place), Gather(v),
 * Scatter(v), Allgather(v), Alltoall(v), Reduce_scatter_block, Barrier, Scan
 * and Exscan, every root, small and large counts.  Any rank count >= 2. */
#include "mpi_check.h"

#include <string.h>
#include <unistd.h>

static int rank, size;

/* Counts of small, middle and large messages (the large ones cross every
 * eager limit and the collective algorithms' switch points). */
static const int counts[] = {1, 3, 1000, 65537, 1 << 20};
enum { NCOUNTS = sizeof counts / sizeof counts[0] };

static int value(int r, int i) { return (r + 1) * 1000 + (i % 977); }

static void test_bcast(void) {
    for (int c = 0; c < NCOUNTS; c++) {
        int n = counts[c];
        unsigned char *b = malloc((size_t)n + 1);
        for (int root = 0; root < size; root++) {
            if (rank == root) pattern_fill(b + 1, (size_t)n, root, c);
            else memset(b + 1, 0, (size_t)n);
            MPI_OK(MPI_Bcast(b + 1, n, MPI_BYTE, root, MPI_COMM_WORLD));
            pattern_check(b + 1, (size_t)n, root, c, "bcast");
        }
        free(b);
    }
}

/* A 2x2 integer matrix product: associative, not commutative, so the result
 * shows whether the operands were combined in rank order. */
static void matmul_op(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                    a[2] * b[1] + a[3] * b[3]};
        memcpy(b, r, sizeof r);
    }
}

static void rank_matrix(int r, int m[4]) {
    /* Upper/lower unit triangular, alternating: products stay small. */
    m[0] = 1;
    m[3] = 1;
    m[1] = (r % 2 == 0) ? r + 1 : 0;
    m[2] = (r % 2 == 0) ? 0 : r + 1;
}

static void test_reduce(void) {
    for (int c = 0; c < NCOUNTS; c++) {
        int n = counts[c];
        int *in = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n);
        double *din = malloc(sizeof(double) * (size_t)n), *dout = malloc(sizeof(double) * (size_t)n);
        for (int i = 0; i < n; i++) {
            in[i] = value(rank, i);
            din[i] = (double)((rank * 7 + i) % size);
        }
        for (int root = 0; root < size; root++) {
            MPI_OK(MPI_Reduce(in, out, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
            MPI_OK(MPI_Reduce(din, dout, n, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD));
            if (rank != root) continue;
            for (int i = 0; i < n; i++) {
                int sum = 0;
                for (int r = 0; r < size; r++) sum += value(r, i);
                CHECK(out[i] == sum, "reduce sum, root %d, count %d: [%d] = %d, expected %d", root, n, i, out[i], sum);
                double mx = 0;
                for (int r = 0; r < size; r++)
                    if ((double)((r * 7 + i) % size) > mx) mx = (double)((r * 7 + i) % size);
                CHECK(dout[i] == mx, "reduce max, root %d: [%d] = %g, expected %g", root, i, dout[i], mx);
            }
        }
        free(in);
        free(out);
        free(din);
        free(dout);
    }
    /* MAXLOC: the largest value, and the lowest rank holding it. */
    struct {
        double v;
        int r;
    } in = {(double)(rank % 3), rank}, out;
    MPI_OK(MPI_Reduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        double best = size >= 3 ? 2 : size - 1;
        CHECK(out.v == best && out.r == (int)best, "maxloc: (%g, %d), expected (%g, %d)", out.v, out.r, best,
              (int)best);
    }
    /* The user op combines in rank order: M0 * M1 * ... * M(n-1). */
    MPI_Datatype mat;
    MPI_OK(MPI_Type_contiguous(4, MPI_INT, &mat));
    MPI_OK(MPI_Type_commit(&mat));
    MPI_Op op;
    MPI_OK(MPI_Op_create(matmul_op, 0, &op));
    int mine[4], prod[4];
    rank_matrix(rank, mine);
    MPI_OK(MPI_Reduce(mine, prod, 1, mat, op, size - 1, MPI_COMM_WORLD));
    if (rank == size - 1) {
        int want[4];
        rank_matrix(0, want);
        for (int r = 1; r < size; r++) {
            int m[4], len = 1;
            rank_matrix(r, m);
            /* want = want * m: inout = in * inout with in = want. */
            matmul_op(want, m, &len, &mat);
            memcpy(want, m, sizeof m);
        }
        CHECK(memcmp(want, prod, sizeof want) == 0, "non-commutative reduce: [%d %d; %d %d], expected [%d %d; %d %d]",
              prod[0], prod[1], prod[2], prod[3], want[0], want[1], want[2], want[3]);
    }
    MPI_OK(MPI_Op_free(&op));
    MPI_OK(MPI_Type_free(&mat));
}

static void test_allreduce(void) {
    for (int c = 0; c < NCOUNTS; c++) {
        int n = counts[c];
        long *b = malloc(sizeof(long) * (size_t)n), *out = malloc(sizeof(long) * (size_t)n);
        for (int i = 0; i < n; i++) b[i] = value(rank, i);
        MPI_OK(MPI_Allreduce(b, out, n, MPI_LONG, MPI_MIN, MPI_COMM_WORLD));
        MPI_OK(MPI_Allreduce(MPI_IN_PLACE, b, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++) {
            long sum = 0;
            for (int r = 0; r < size; r++) sum += value(r, i);
            CHECK(b[i] == sum, "allreduce in place, count %d: [%d] = %ld, expected %ld", n, i, b[i], sum);
            CHECK(out[i] == value(0, i), "allreduce min: [%d] = %ld, expected %d", i, out[i], value(0, i));
        }
        free(b);
        free(out);
    }
}

/* Gatherv/Scatterv: rank r contributes r+1 blocks of `k` ints, placed with a
 * gap of 3 ints between ranks at the root. */
static void test_gather_scatter(void) {
    for (int k = 1; k <= 40000; k *= 200) {
        int *rc = malloc(sizeof(int) * (size_t)size), *dp = malloc(sizeof(int) * (size_t)size);
        int total = 0;
        for (int r = 0; r < size; r++) {
            rc[r] = (r + 1) * k;
            dp[r] = total;
            total += rc[r] + 3;
        }
        int mine = (rank + 1) * k;
        int *s = malloc(sizeof(int) * (size_t)mine), *all = malloc(sizeof(int) * (size_t)total);
        int *fixed = malloc(sizeof(int) * (size_t)(k * size));
        for (int root = 0; root < size; root++) {
            for (int i = 0; i < mine; i++) s[i] = value(rank, i);
            for (int i = 0; i < total; i++) all[i] = -1;
            MPI_OK(MPI_Gatherv(s, mine, MPI_INT, all, rc, dp, MPI_INT, root, MPI_COMM_WORLD));
            MPI_OK(MPI_Gather(s, k, MPI_INT, fixed, k, MPI_INT, root, MPI_COMM_WORLD));
            if (rank == root) {
                for (int r = 0; r < size; r++) {
                    for (int i = 0; i < rc[r]; i++)
                        CHECK(all[dp[r] + i] == value(r, i), "gatherv root %d: rank %d [%d] = %d", root, r, i,
                              all[dp[r] + i]);
                    for (int g = 0; g < 3; g++)
                        CHECK(all[dp[r] + rc[r] + g] == -1, "gatherv wrote into the gap after rank %d", r);
                    for (int i = 0; i < k; i++)
                        CHECK(fixed[r * k + i] == value(r, i), "gather root %d: rank %d [%d]", root, r, i);
                }
                /* The root scatters back what it gathered, shifted by one. */
                for (int i = 0; i < total; i++) all[i] += 1;
                for (int i = 0; i < k * size; i++) fixed[i] += 2;
            }
            MPI_OK(MPI_Scatterv(all, rc, dp, MPI_INT, s, mine, MPI_INT, root, MPI_COMM_WORLD));
            for (int i = 0; i < mine; i++)
                CHECK(s[i] == value(rank, i) + 1, "scatterv root %d: [%d] = %d, expected %d", root, i, s[i],
                      value(rank, i) + 1);
            MPI_OK(MPI_Scatter(fixed, k, MPI_INT, s, k, MPI_INT, root, MPI_COMM_WORLD));
            for (int i = 0; i < k; i++) CHECK(s[i] == value(rank, i) + 2, "scatter root %d: [%d] = %d", root, i, s[i]);
        }
        /* Allgather and Allgatherv: everyone gets what Gather(v) gave a root. */
        for (int i = 0; i < mine; i++) s[i] = value(rank, i);
        for (int i = 0; i < total; i++) all[i] = -1;
        MPI_OK(MPI_Allgather(s, k, MPI_INT, fixed, k, MPI_INT, MPI_COMM_WORLD));
        MPI_OK(MPI_Allgatherv(s, mine, MPI_INT, all, rc, dp, MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < size; r++) {
            for (int i = 0; i < k; i++) CHECK(fixed[r * k + i] == value(r, i), "allgather: rank %d [%d]", r, i);
            for (int i = 0; i < rc[r]; i++) CHECK(all[dp[r] + i] == value(r, i), "allgatherv: rank %d [%d]", r, i);
        }
        free(s);
        free(all);
        free(fixed);
        free(rc);
        free(dp);
    }
}

/* Alltoall: block j of rank i holds (i, j, index).  Alltoallv: rank i sends
 * rank j (i + j) % 3 * k + 1 ints. */
static int a2a(int from, int to, int i) { return from * 1000003 + to * 1009 + i; }

static void test_alltoall(void) {
    for (int k = 1; k <= 30000; k *= 100) {
        int *s = malloc(sizeof(int) * (size_t)(k * size)), *r = malloc(sizeof(int) * (size_t)(k * size));
        for (int j = 0; j < size; j++)
            for (int i = 0; i < k; i++) s[j * k + i] = a2a(rank, j, i);
        MPI_OK(MPI_Alltoall(s, k, MPI_INT, r, k, MPI_INT, MPI_COMM_WORLD));
        for (int j = 0; j < size; j++)
            for (int i = 0; i < k; i++)
                CHECK(r[j * k + i] == a2a(j, rank, i), "alltoall: block %d [%d] = %d", j, i, r[j * k + i]);
        free(s);
        free(r);

        int *sc = malloc(sizeof(int) * (size_t)size), *sd = malloc(sizeof(int) * (size_t)size);
        int *rc = malloc(sizeof(int) * (size_t)size), *rd = malloc(sizeof(int) * (size_t)size);
        int st = 0, rt = 0;
        for (int j = 0; j < size; j++) {
            sc[j] = (rank + j) % 3 * k + 1;
            sd[j] = st;
            st += sc[j];
            rc[j] = (j + rank) % 3 * k + 1;
            rd[j] = rt;
            rt += rc[j];
        }
        s = malloc(sizeof(int) * (size_t)st);
        r = malloc(sizeof(int) * (size_t)rt);
        for (int j = 0; j < size; j++)
            for (int i = 0; i < sc[j]; i++) s[sd[j] + i] = a2a(rank, j, i);
        MPI_OK(MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD));
        for (int j = 0; j < size; j++)
            for (int i = 0; i < rc[j]; i++)
                CHECK(r[rd[j] + i] == a2a(j, rank, i), "alltoallv: from %d [%d] = %d", j, i, r[rd[j] + i]);
        free(s);
        free(r);
        free(sc);
        free(sd);
        free(rc);
        free(rd);
    }
}

static void test_reduce_scatter_scan(void) {
    enum { K = 5 };
    int *in = malloc(sizeof(int) * (size_t)(K * size)), out[K];
    for (int i = 0; i < K * size; i++) in[i] = rank + i;
    MPI_OK(MPI_Reduce_scatter_block(in, out, K, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < K; i++) {
        int want = size * (size - 1) / 2 + size * (rank * K + i);
        CHECK(out[i] == want, "reduce_scatter_block: [%d] = %d, expected %d", i, out[i], want);
    }
    free(in);
    int v = rank + 1, incl = 0, excl = -12345;
    MPI_OK(MPI_Scan(&v, &incl, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MPI_OK(MPI_Exscan(&v, &excl, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(incl == (rank + 1) * (rank + 2) / 2, "scan: %d, expected %d", incl, (rank + 1) * (rank + 2) / 2);
    if (rank > 0) CHECK(excl == rank * (rank + 1) / 2, "exscan: %d, expected %d", excl, rank * (rank + 1) / 2);
}

/* Nobody leaves a barrier before the last rank enters it: rank 0 enters
 * 300 ms late, and every other rank must wait at least that long. */
static void test_barrier(void) {
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    if (rank == 0) usleep(300 * 1000);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    double waited = MPI_Wtime() - t0;
    CHECK(waited >= 0.25, "barrier: left after %.3f s although rank 0 entered 0.3 s late", waited);
}

int main(int argc, char **argv) {
    check_init(&argc, &argv, &rank, &size);
    CHECK(size >= 2, "needs at least 2 ranks, got %d", size);
    test_barrier();
    test_bcast();
    test_reduce();
    test_allreduce();
    test_gather_scatter();
    test_alltoall();
    test_reduce_scatter_scan();
    test_barrier();
    check_done("mpi_coll", rank, size);
    return 0;
}
