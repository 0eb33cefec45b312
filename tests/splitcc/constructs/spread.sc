/* Spread arrays and spread pointers: file-scope arrays with PROCS extents,
 * several spread and block dimensions, &A[i] (spread) and &A[i][j] (global),
 * spread-pointer arithmetic with wrap-around, all_spread_malloc, local
 * addresses of spread elements, parameters with run-time extents and
 * automatic spread arrays released on every path out of their block. */
#include <split-c/split-c.h>
#include "check.h"

int A[PROCS]::;
double B[2 * PROCS]::[3];
int C[4][PROCS]::[2][5];
struct cell { int id; double w; };
struct cell S[PROCS]::;

/* X is a v x w grid of q x r tiles: tile (a, b) on processor (a*w + b) mod PROCS. */
long tile_sum(int v, int w, int q, int r, int X[v][w]::[q][r])
{
    long s = 0;
    int a, b, i, j;
    for (a = 0; a < v; a++)
        for (b = 0; b < w; b++)
            for (i = 0; i < q; i++)
                for (j = 0; j < r; j++)
                    s += X[a][b][i][j];
    return s;
}

void fill_tiles(int v, int w, int q, int r, int X[v][w]::[q][r])
{
    int a, b, i, j;
    for (a = 0; a < v; a++)
        for (b = 0; b < w; b++)
            if ((a * w + b) % PROCS == MYPROC)
                for (i = 0; i < q; i++)
                    for (j = 0; j < r; j++)
                        X[a][b][i][j] = a * 1000 + b * 100 + i * 10 + j;
}

/* An automatic spread array with a run-time extent; returns early on odd k
 * (the release must happen on that path too). */
int histogram(int k)
{
    int h[PROCS]::[k];
    int i;
    for (i = 0; i < k; i++) h[MYPROC][i] = MYPROC + i;
    barrier();
    if (k & 1) {
        int v = h[(MYPROC + 1) % PROCS][k - 1];
        barrier();
        return v;
    }
    i = h[(MYPROC + 1) % PROCS][0];
    barrier();
    return i;
}

splitc_main(int argc, char **argv)
{
    int i, j, me = MYPROC, P = PROCS;
    int *spread s;
    size_t before;

    A[me] = 10 * me;
    for (i = 0; i < 3; i++) B[me][i] = me + i / 10.0, B[me + P][i] = -me - i / 10.0;
    for (i = 0; i < 4; i++)
        for (j = 0; j < 2; j++) {
            int k;
            for (k = 0; k < 5; k++) C[i][me][j][k] = i * 10000 + me * 100 + j * 10 + k;
        }
    S[me].id = me;
    S[me].w = me * 0.5;
    barrier();

    for (i = 0; i < P; i++) CHECK(A[i] == 10 * i);
    CHECK(B[(me + 1) % P][2] == (me + 1) % P + 0.2);
    CHECK(B[(me + 1) % P + P][1] == -((me + 1) % P) - 0.1);
    CHECK(C[3][(me + 1) % P][1][4] == 30000 + ((me + 1) % P) * 100 + 14);
    CHECK(S[(me + 1) % P].id == (me + 1) % P && S[(me + 1) % P].w == ((me + 1) % P) * 0.5);

    /* &A[i] is a spread pointer: +1 moves to the next processor. */
    s = &A[0];
    for (i = 0; i < P; i++) CHECK(*(s + i) == 10 * i);
    CHECK(toproc((int *global)(s + P - 1)) == P - 1);
    CHECK(&A[P - 1] - &A[0] == P - 1);
    CHECK(&A[1] > &A[0] || P == 1);
    {
        double *spread bs = &B[0][0];
        double *global g = &B[me][1];   /* a block element's address is global */
        CHECK(toproc(g) == me && *g == me + 0.1);
        bs = (double *spread)&B[P];    /* the second row of blocks: wrap-around */
        CHECK(toproc((double *global)bs) == 0);
    }
    {
        struct cell *spread cs = &S[0];
        CHECK((cs + me)->id == me);
        CHECK(cs[(me + 1) % P].w == ((me + 1) % P) * 0.5);
    }
    /* all_spread_malloc: one block of 4 doubles per processor. */
    {
        double *spread d = all_spread_malloc(P, 4 * sizeof(double));
        double *mine = (double *)(d + me);          /* the local address of my block */
        for (i = 0; i < 4; i++) mine[i] = me * 4 + i;
        barrier();
        CHECK(*(d + (me + 1) % P) == ((me + 1) % P) * 4);
        /* element-wise spread pointer over doubles: PROCS consecutive elements sit on
           consecutive processors, then the next local double */
        {
            double *spread e = d;
            CHECK(*(e + P) == 1.0);            /* processor 0, second double */
            CHECK(*(e + P + 1 - (P == 1)) == (P == 1 ? 1.0 : 5.0));
        }
        barrier();
        all_spread_free(d);
    }
    /* spread array parameters with run-time extents */
    {
        int v = 3, w = 2, q = 2, r = 3;
        long expect = 0;
        int a, b, ii, jj;
        int (*spread tiles)[2]::[2][3];
        int T[3][2]::[2][3];
        fill_tiles(v, w, q, r, T);
        barrier();
        for (a = 0; a < v; a++)
            for (b = 0; b < w; b++)
                for (ii = 0; ii < q; ii++)
                    for (jj = 0; jj < r; jj++) expect += a * 1000 + b * 100 + ii * 10 + jj;
        CHECK(tile_sum(v, w, q, r, T) == expect);
        tiles = T;
        CHECK(tiles[2][1][1][2] == 2112);
        barrier();
    }
    /* automatic spread arrays come and go without leaking the heap */
    before = splitc_heap_available();
    for (i = 1; i <= 6; i++) CHECK(histogram(i) == (me + 1) % P + (i & 1 ? i - 1 : 0));
    CHECK(splitc_heap_available() == before);
    barrier();
    on_one printf("spread: ok on %d processors\n", P);
}
