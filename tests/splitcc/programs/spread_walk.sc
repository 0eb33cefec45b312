/* spread_walk.sc - spread arrays and spread pointers used the way the Split-C
 * manual shows them: a loop over `double *spread' from &A[MYPROC] to &A[N]
 * stepping by PROCS, spread pointer comparison and difference, split-phase
 * and signalling assignments on spread elements (A[i] := x, x := A[i],
 * A[i] :- x), compound assignment to remote spread elements, a spread array
 * of structs accessed field by field, all_spread_malloc'd spread memory
 * indexed like an array, bulk_store with store_sync, and on_proc.  Each
 * result is compared with a serial computation.  Exits non-zero on a
 * mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <split-c/split-c.h>
#include <split-c/control.h>

#define N 103                   /* not a multiple of PROCS */

struct cell { int id; double mass; };

double A[N]::;
long B[N]::;
struct cell S[N]::;
int ring[PROCS]::[8];
static int errors;

#define EXPECT(c) do { if (!(c)) { if (errors++ < 10) fprintf(stderr, "processor %d: line %d: %s\n", \
                                   MYPROC, __LINE__, #c); } } while (0)

splitc_main(int argc, char **argv)
{
    double *spread sp;
    long *spread h;
    int i, mine = 0;
    double got[N];

    /* the manual's owner-computes loop over a spread pointer */
    for (sp = &A[MYPROC]; sp < &A[N]; sp += PROCS) {
        EXPECT(toproc((double *global)sp) == MYPROC);
        *(double *)sp = (sp - &A[0]) * 2.0;         /* local through a cast */
        mine++;
    }
    EXPECT(mine == (N - MYPROC + PROCS - 1) / PROCS);
    EXPECT(&A[N - 1] - &A[0] == N - 1 && &A[3] > &A[2] && &A[PROCS - 1] + 1 == &A[PROCS]);
    for_my_1d(i, N) {
        S[i].id = i;
        S[i].mass = i * 0.25;
        B[i] = 0;
    }
    barrier();

    /* split-phase reads of every element, most remote */
    for (i = 0; i < N; i++)
        got[i] := A[i];
    sync();
    for (i = 0; i < N; i++)
        EXPECT(got[i] == i * 2.0);
    barrier();

    /* every processor adds into every element of B: remote read-modify-write
     * is not atomic, so processors take turns */
    {
        int p;
        for (p = 0; p < PROCS; p++) {
            on_proc(p) {
                for (i = 0; i < N; i++)
                    B[i] += i + p;
                B[0]++;
            }
            barrier();
        }
    }
    for_my_1d(i, N)
        EXPECT(B[i] == (long)PROCS * i + (long)PROCS * (PROCS - 1) / 2 + (i == 0 ? PROCS : 0));
    barrier();

    /* split-phase puts and signalling stores into spread elements */
    for_my_1d(i, N)
        A[(i + 1) % N] := -1.0 * i;
    sync();
    barrier();
    for_my_1d(i, N)
        EXPECT(A[i] == -1.0 * ((i + N - 1) % N));
    barrier();
    {
        int expect = 0;
        for_my_1d(i, N)
            expect++;                 /* stores into my elements below */
        for (i = MYPROC; i < N; i += PROCS)
            S[(i + PROCS) % N].mass :- 1.0 + i;
        /* element j is mine iff j % PROCS == MYPROC; stores come from everywhere */
        expect = 0;
        for (i = 0; i < N; i++)
            if ((i + PROCS) % N % PROCS == MYPROC)
                expect++;
        store_sync(expect * sizeof(double));
        for_my_1d(i, N)
            EXPECT(S[i].id == i);
    }
    barrier();
    on_one {
        for (i = 0; i < N; i++) {
            struct cell c = S[(i + PROCS) % N];
            EXPECT(c.mass == 1.0 + i && c.id == (i + PROCS) % N);
        }
    }
    barrier();

    /* all_spread_malloc: N longs cyclically, indexed like an array */
    h = all_spread_malloc(N, sizeof(long));
    for_my_1d(i, N)
        h[i] = 7L * i;
    barrier();
    {
        long s = 0;
        for (i = 0; i < N; i++)
            s += h[i];
        EXPECT(s == 7L * N * (N - 1) / 2);
    }
    barrier();
    all_spread_free(h);

    /* bulk_store a block to the right neighbour, counted with store_sync */
    {
        int blk[8], right = (MYPROC + 1) % PROCS, left = (MYPROC + PROCS - 1) % PROCS;
        for (i = 0; i < 8; i++)
            blk[i] = MYPROC * 100 + i;
        bulk_store(&ring[right][0], blk, sizeof(blk));
        store_sync(sizeof(blk));
        for (i = 0; i < 8; i++)
            EXPECT(ring[MYPROC][i] == left * 100 + i);
    }

    errors = all_reduce_to_all_add(errors);
    on_one printf("spread_walk: %d elements, %d errors\n", N, errors);
    barrier();
    if (errors)
        exit(1);
}
