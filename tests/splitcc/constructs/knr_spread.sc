/* Spread array parameters in K&R definitions (double X[n]::; declared after
 * the identifier list), 1-D with and without the first extent and 4-D with
 * run-time extents, and a file-scope spread array declared `extern T A[]::'
 * in another file (knr_spread_other.sc).  Regression: splitcc emitted K&R
 * spread parameters as `char *X' (the C compiler then rejected every index)
 * and refused a missing first extent where C allows it. */
#include <split-c/split-c.h>
#include <split-c/control.h>
#include "check.h"

#define N 37
double A[N]::;
int T[3][PROCS]::[2][5];

void scale_all();               /* knr_spread_other.sc, through extern A[]:: */

void scale(X, n, f)
    double X[N]::;
    int n;
    double f;
{
    int i;
    for_my_1d(i, n) X[i] *= f;
}

void scale_open(X, n, f)
    int n;
    double X[]::;
    double f;
{
    int i;
    for_my_1d(i, n) X[i] *= f;
}

static long tile_sum(v, w, q, r, X, a, b)
    int v, w, q, r;
    int X[v][w]::[q][r];
    int a, b;
{
    long s = 0;
    int i, j;
    for (i = 0; i < q; i++)
        for (j = 0; j < r; j++)
            s += X[a][b][i][j];
    return s;
}

splitc_main(int argc, char **argv)
{
    int i, a, b, j, k;
    for_my_1d(i, N) A[i] = i;
    for_my_2d(a, b, 3, PROCS)
        for (j = 0; j < 2; j++)
            for (k = 0; k < 5; k++)
                T[a][b][j][k] = a * 100 + b * 10 + j * 5 + k;
    barrier();
    scale(A, N, 2.0);
    barrier();
    scale_open(A, N, 3.0);
    barrier();
    scale_all();
    barrier();
    for (i = 0; i < N; i++) CHECK(A[i] == 3.0 * i);
    for (a = 0; a < 3; a++)
        for (b = 0; b < PROCS; b++)
            CHECK(tile_sum(3, PROCS, 2, 5, T, a, b) == 10L * (a * 100 + b * 10) + 45);
    barrier();
}
