/* ga_check - a Global Arrays program written from GA's documented C API,
 * checked against the same computation done locally: a 2-D global array of
 * doubles, patches put by one rank into another's part, gets across every
 * rank's part, accumulates from every rank into one overlapping patch, a dot
 * product (GA_Ddot) and a matrix product (GA_Dgemm).  All values are small
 * integers, so every result is exact.  Any rank count >= 1. */
#include "mpi_check.h"

#include <ga.h>
#include <macdecls.h>
#include <math.h>

enum { R = 90, C = 70, K = 45 }; /* A is R x C; the product is (R x K)(K x C) */

static double a_val(int i, int j) { return i * 1000.0 + j; }
static double l_val(int i, int k) { return (double)((i + 2 * k) % 7 - 3); }
static double r_val(int k, int j) { return (double)((k * j + 1) % 5 - 2); }

static int me, np;

/* Fills a global array with f(i, j): each rank writes the row band of the
 * next rank, so the puts are remote. */
static void put_all(int g, int rows, int cols, double (*f)(int, int)) {
    int band = (rows + np - 1) / np, owner = (me + 1) % np;
    int lo[2] = {owner * band, 0}, hi[2] = {(owner + 1) * band - 1, cols - 1};
    if (hi[0] >= rows) hi[0] = rows - 1;
    if (lo[0] <= hi[0]) {
        int n = hi[0] - lo[0] + 1, ld[1] = {cols};
        double *buf = malloc(sizeof(double) * (size_t)n * cols);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < cols; j++) buf[i * cols + j] = f(lo[0] + i, j);
        NGA_Put(g, lo, hi, buf, ld);
        free(buf);
    }
    GA_Sync();
}

/* Gets rows [r0, r1] x cols [c0, c1] and compares with want(i, j). */
static void check_patch(int g, int r0, int r1, int c0, int c1, double (*want)(int, int), const char *what) {
    int lo[2] = {r0, c0}, hi[2] = {r1, c1}, w = c1 - c0 + 1, ld[1] = {w};
    double *buf = malloc(sizeof(double) * (size_t)(r1 - r0 + 1) * w);
    NGA_Get(g, lo, hi, buf, ld);
    for (int i = r0; i <= r1; i++)
        for (int j = c0; j <= c1; j++)
            CHECK(buf[(i - r0) * w + (j - c0)] == want(i, j), "%s: (%d,%d) is %g, expected %g", what, i, j,
                  buf[(i - r0) * w + (j - c0)], want(i, j));
    free(buf);
}

/* After every rank p added (p + 1) * 1.0 to the patch [10, 60] x [7, 30]. */
static double acc_val(int i, int j) {
    int in = i >= 10 && i <= 60 && j >= 7 && j <= 30;
    return a_val(i, j) + (in ? np * (np + 1) / 2.0 : 0);
}

static double product(int i, int j) {
    double s = 0;
    for (int k = 0; k < K; k++) s += l_val(i, k) * r_val(k, j);
    return s;
}
static double product3(int i, int j) { return 3 * product(i, j); }

int main(int argc, char **argv) {
    int rank, size;
    check_init(&argc, &argv, &rank, &size);
    GA_Initialize();
    CHECK(MA_init(C_DBL, 1 << 20, 1 << 20), "MA_init failed");
    me = GA_Nodeid();
    np = GA_Nnodes();
    CHECK(me == rank && np == size, "GA says node %d of %d, MPI says rank %d of %d", me, np, rank, size);

    int dims[2] = {R, C};
    int g_a = NGA_Create(C_DBL, 2, dims, "A", NULL);
    CHECK(g_a != 0, "NGA_Create failed");
    GA_Zero(g_a);
    put_all(g_a, R, C, a_val);
    check_patch(g_a, 0, R - 1, 0, C - 1, a_val, "put, whole array");
    check_patch(g_a, 3, R - 4, 5, C - 2, a_val, "put, inner patch");
    GA_Sync(); /* everyone has read A before anyone adds to it */

    /* Accumulate: alpha scales the patch; all ranks add to the same cells. */
    int lo[2] = {10, 7}, hi[2] = {60, 30}, w = 24, ld[1] = {w};
    double *ones = malloc(sizeof(double) * 51 * (size_t)w), alpha = me + 1;
    for (int i = 0; i < 51 * w; i++) ones[i] = 1.0;
    NGA_Acc(g_a, lo, hi, ones, ld, &alpha);
    GA_Sync();
    check_patch(g_a, 0, R - 1, 0, C - 1, acc_val, "accumulate");
    free(ones);

    /* Dot product with a copy of the same shape filled with 2. */
    int g_b = GA_Duplicate(g_a, "B");
    CHECK(g_b != 0, "GA_Duplicate failed");
    double two = 2.0;
    GA_Fill(g_b, &two);
    double dot = GA_Ddot(g_a, g_b), want = 0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) want += 2.0 * acc_val(i, j);
    CHECK(dot == want, "GA_Ddot: %.17g, expected %.17g", dot, want);

    /* Matrix product: P = L * Rm, then P = 2 L Rm + P = 3 L Rm. */
    int dl[2] = {R, K}, dr[2] = {K, C};
    int g_l = NGA_Create(C_DBL, 2, dl, "L", NULL), g_r = NGA_Create(C_DBL, 2, dr, "Rm", NULL);
    int g_p = NGA_Create(C_DBL, 2, dims, "P", NULL);
    CHECK(g_l && g_r && g_p, "NGA_Create failed");
    put_all(g_l, R, K, l_val);
    put_all(g_r, K, C, r_val);
    GA_Zero(g_p);
    GA_Dgemm('N', 'N', R, C, K, 1.0, g_l, g_r, 0.0, g_p);
    check_patch(g_p, 0, R - 1, 0, C - 1, product, "GA_Dgemm");
    GA_Sync(); /* everyone has read P before it is overwritten */
    GA_Dgemm('N', 'N', R, C, K, 2.0, g_l, g_r, 1.0, g_p);
    check_patch(g_p, 0, R - 1, 0, C - 1, product3, "GA_Dgemm with beta 1");

    GA_Destroy(g_p);
    GA_Destroy(g_r);
    GA_Destroy(g_l);
    GA_Destroy(g_b);
    GA_Destroy(g_a);
    GA_Terminate();
    check_done("ga_check", rank, size);
    return 0;
}
