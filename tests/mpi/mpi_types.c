/* mpi_types - derived datatypes: vector, indexed, struct, subarray and
 * resized types, sent and received against contiguous buffers and against
 * each other, small and past the rendezvous size; sizes and extents as the
 * standard defines them; MPI_Pack/MPI_Unpack.  Any rank count >= 2: every
 * rank exchanges with its ring neighbours. */
#include "mpi_check.h"

#include <string.h>

static int rank, size, right, left;

static double val(int r, int i) { return r * 1e6 + i; }

/* One column of a ROWS x COLS row-major matrix, sent as a vector and
 * received contiguous, then back into a column of another matrix. */
static void test_vector(int rows, int cols) {
    double *m = malloc(sizeof(double) * (size_t)rows * cols), *col = malloc(sizeof(double) * (size_t)rows);
    for (int i = 0; i < rows * cols; i++) m[i] = val(rank, i);
    MPI_Datatype column;
    MPI_OK(MPI_Type_vector(rows, 1, cols, MPI_DOUBLE, &column));
    MPI_OK(MPI_Type_commit(&column));
    int tsize;
    MPI_Aint lb, extent;
    MPI_OK(MPI_Type_size(column, &tsize));
    MPI_OK(MPI_Type_get_extent(column, &lb, &extent));
    CHECK(tsize == rows * (int)sizeof(double), "vector: size %d, expected %zu", tsize, rows * sizeof(double));
    CHECK(lb == 0 && extent == (MPI_Aint)(((size_t)(rows - 1) * cols + 1) * sizeof(double)),
          "vector: lb %ld extent %ld", (long)lb, (long)extent);
    int c = 2 % cols;
    MPI_OK(MPI_Sendrecv(m + c, 1, column, right, 1, col, rows, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < rows; i++)
        CHECK(col[i] == val(left, i * cols + c), "vector %dx%d: element %d is %g, expected %g", rows, cols, i, col[i],
              val(left, i * cols + c));
    /* Contiguous in, column out: lands in column 0 of m, rest untouched. */
    MPI_OK(MPI_Sendrecv(col, rows, MPI_DOUBLE, right, 2, m, 1, column, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int from = (left + size - 1) % size;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            double want = j == 0 ? val(from, i * cols + c) : val(rank, i * cols + j);
            CHECK(m[i * cols + j] == want, "vector receive %dx%d: (%d,%d) is %g, expected %g", rows, cols, i, j,
                  m[i * cols + j], want);
        }
    MPI_OK(MPI_Type_free(&column));
    free(m);
    free(col);
}

/* Blocks of lengths 1, 3, 2 at 0, 4, 10, repeated `reps` times (the type's
 * extent is 12 ints). */
static void test_indexed(int reps) {
    int bl[3] = {1, 3, 2}, dp[3] = {0, 4, 10};
    MPI_Datatype idx;
    MPI_OK(MPI_Type_indexed(3, bl, dp, MPI_INT, &idx));
    MPI_OK(MPI_Type_commit(&idx));
    MPI_Aint lb, extent;
    MPI_OK(MPI_Type_get_extent(idx, &lb, &extent));
    CHECK(extent == 12 * (MPI_Aint)sizeof(int), "indexed: extent %ld", (long)extent);
    int *a = malloc(sizeof(int) * 12 * (size_t)reps), *packed = malloc(sizeof(int) * 6 * (size_t)reps);
    for (int i = 0; i < 12 * reps; i++) a[i] = rank * 100000 + i;
    MPI_OK(MPI_Sendrecv(a, reps, idx, right, 3, packed, 6 * reps, MPI_INT, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    static const int pick[6] = {0, 4, 5, 6, 10, 11};
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < 6; k++)
            CHECK(packed[r * 6 + k] == left * 100000 + r * 12 + pick[k], "indexed x%d: element %d is %d, expected %d",
                  reps, r * 6 + k, packed[r * 6 + k], left * 100000 + r * 12 + pick[k]);
    MPI_OK(MPI_Type_free(&idx));
    free(a);
    free(packed);
}

/* An array of C structs with padding, described by a struct type resized to
 * sizeof(struct rec) so consecutive elements line up. */
struct rec {
    char tag;
    double x;
    int n[3];
    short s;
};

static void test_struct(int count) {
    int bl[4] = {1, 1, 3, 1};
    MPI_Aint dp[4] = {offsetof(struct rec, tag), offsetof(struct rec, x), offsetof(struct rec, n),
                      offsetof(struct rec, s)};
    MPI_Datatype ty[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT}, st, rec;
    MPI_OK(MPI_Type_create_struct(4, bl, dp, ty, &st));
    MPI_OK(MPI_Type_create_resized(st, 0, sizeof(struct rec), &rec));
    MPI_OK(MPI_Type_commit(&rec));
    int tsize;
    MPI_OK(MPI_Type_size(rec, &tsize));
    CHECK(tsize == 1 + 8 + 12 + 2, "struct: size %d, expected 23", tsize);
    struct rec *out = malloc(sizeof *out * (size_t)count), *in = malloc(sizeof *in * (size_t)count);
    memset(out, 0x77, sizeof *out * (size_t)count); /* padding: must not matter */
    memset(in, 0, sizeof *in * (size_t)count);
    for (int i = 0; i < count; i++) {
        out[i].tag = (char)('a' + (i + rank) % 26);
        out[i].x = val(rank, i) + 0.5;
        for (int k = 0; k < 3; k++) out[i].n[k] = rank * 10 + k + i;
        out[i].s = (short)(i % 30000);
    }
    MPI_OK(MPI_Sendrecv(out, count, rec, right, 4, in, count, rec, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < count; i++) {
        CHECK(in[i].tag == (char)('a' + (i + left) % 26) && in[i].x == val(left, i) + 0.5 &&
                  in[i].n[0] == left * 10 + i && in[i].n[2] == left * 10 + 2 + i && in[i].s == (short)(i % 30000),
              "struct x%d: element %d is {%c, %g, %d, %d}", count, i, in[i].tag, in[i].x, in[i].n[0], in[i].s);
    }
    MPI_OK(MPI_Type_free(&st));
    MPI_OK(MPI_Type_free(&rec));
    free(out);
    free(in);
}

/* A 4x5 block at (2,3) of an 8x10 int array goes to the 4x5 block at (1,0)
 * of the receiver's 6x7 array. */
static void test_subarray(void) {
    int sz_s[2] = {8, 10}, sub[2] = {4, 5}, st_s[2] = {2, 3};
    int sz_r[2] = {6, 7}, st_r[2] = {1, 0};
    MPI_Datatype ts, tr;
    MPI_OK(MPI_Type_create_subarray(2, sz_s, sub, st_s, MPI_ORDER_C, MPI_INT, &ts));
    MPI_OK(MPI_Type_create_subarray(2, sz_r, sub, st_r, MPI_ORDER_C, MPI_INT, &tr));
    MPI_OK(MPI_Type_commit(&ts));
    MPI_OK(MPI_Type_commit(&tr));
    MPI_Aint lb, extent;
    MPI_OK(MPI_Type_get_extent(ts, &lb, &extent));
    CHECK(lb == 0 && extent == 80 * (MPI_Aint)sizeof(int), "subarray: lb %ld extent %ld, expected the whole array",
          (long)lb, (long)extent);
    int a[80], b[42];
    for (int i = 0; i < 80; i++) a[i] = rank * 1000 + i;
    for (int i = 0; i < 42; i++) b[i] = -1;
    MPI_OK(MPI_Sendrecv(a, 1, ts, right, 5, b, 1, tr, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 7; j++) {
            int in = i >= 1 && i < 5 && j < 5;
            int want = in ? left * 1000 + (i - 1 + 2) * 10 + (j + 3) : -1;
            CHECK(b[i * 7 + j] == want, "subarray: (%d,%d) is %d, expected %d", i, j, b[i * 7 + j], want);
        }
    MPI_OK(MPI_Type_free(&ts));
    MPI_OK(MPI_Type_free(&tr));
}

/* A column type resized to one double's extent: rank 0 scatters whole
 * columns of a size x size matrix, one per rank. */
static void test_resized_scatter(void) {
    int n = size;
    double *m = malloc(sizeof(double) * (size_t)n * n), *col = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n * n; i++) m[i] = val(0, i);
    MPI_Datatype column, col1;
    MPI_OK(MPI_Type_vector(n, 1, n, MPI_DOUBLE, &column));
    MPI_OK(MPI_Type_create_resized(column, 0, sizeof(double), &col1));
    MPI_OK(MPI_Type_commit(&col1));
    MPI_OK(MPI_Scatter(m, 1, col1, col, n, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++)
        CHECK(col[i] == val(0, i * n + rank), "resized scatter: element %d is %g, expected %g", i, col[i],
              val(0, i * n + rank));
    MPI_OK(MPI_Type_free(&column));
    MPI_OK(MPI_Type_free(&col1));
    free(m);
    free(col);
}

/* MPI_Pack of a vector then a struct, sent as MPI_PACKED, unpacked. */
static void test_pack(void) {
    double m[6 * 4];
    for (int i = 0; i < 24; i++) m[i] = val(rank, i);
    int hdr[2] = {rank, 42};
    MPI_Datatype column;
    MPI_OK(MPI_Type_vector(6, 1, 4, MPI_DOUBLE, &column));
    MPI_OK(MPI_Type_commit(&column));
    int s1, s2, pos = 0;
    MPI_OK(MPI_Pack_size(2, MPI_INT, MPI_COMM_WORLD, &s1));
    MPI_OK(MPI_Pack_size(1, column, MPI_COMM_WORLD, &s2));
    char *buf = malloc((size_t)(s1 + s2)), *rbuf = malloc((size_t)(s1 + s2));
    MPI_OK(MPI_Pack(hdr, 2, MPI_INT, buf, s1 + s2, &pos, MPI_COMM_WORLD));
    MPI_OK(MPI_Pack(m + 1, 1, column, buf, s1 + s2, &pos, MPI_COMM_WORLD));
    MPI_Status st;
    MPI_OK(MPI_Sendrecv(buf, pos, MPI_PACKED, right, 6, rbuf, s1 + s2, MPI_PACKED, left, 6, MPI_COMM_WORLD, &st));
    int got, rpos = 0, rhdr[2];
    double rcol[6];
    MPI_OK(MPI_Get_count(&st, MPI_PACKED, &got));
    MPI_OK(MPI_Unpack(rbuf, got, &rpos, rhdr, 2, MPI_INT, MPI_COMM_WORLD));
    MPI_OK(MPI_Unpack(rbuf, got, &rpos, rcol, 6, MPI_DOUBLE, MPI_COMM_WORLD));
    CHECK(rhdr[0] == left && rhdr[1] == 42, "pack: header {%d, %d}", rhdr[0], rhdr[1]);
    for (int i = 0; i < 6; i++) CHECK(rcol[i] == val(left, i * 4 + 1), "pack: element %d is %g", i, rcol[i]);
    MPI_OK(MPI_Type_free(&column));
    free(buf);
    free(rbuf);
}

int main(int argc, char **argv) {
    check_init(&argc, &argv, &rank, &size);
    CHECK(size >= 2, "needs at least 2 ranks, got %d", size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    test_vector(5, 3);
    test_vector(300000, 2); /* 2.4 MB of data in 300000 pieces */
    test_indexed(1);
    test_indexed(50000);
    test_struct(7);
    test_struct(100000);
    test_subarray();
    test_resized_scatter();
    test_pack();
    check_done("mpi_types", rank, size);
    return 0;
}
