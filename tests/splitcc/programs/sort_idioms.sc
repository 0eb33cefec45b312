/* sort_idioms.sc - idioms of the 1990s Split-C sorting and image codes:
 * an inline function with spread parameters int K[PROCS]::[q] whose blocks
 * it takes with tolocal(K[MYPROC]), an automatic spread array of structs
 * read with bulk_read(&C[p][1], ...), bulk_get of another processor's block,
 * all_spread_malloc'd blocks reached as (int *)(Keys + MYPROC) - 1 and
 * ((int *global)(Keys + p) + 3), a signalling store through a
 * post-incremented global pointer (*(gc++) :- v), and global pointer
 * differences.  Exits non-zero on a mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <split-c/split-c.h>
typedef struct { int a, b; } pair_t;
static int errors;
#define EXPECT(c) do { if (!(c)) { if (errors++ < 20) fprintf(stderr, "processor %d: line %d: %s\n", MYPROC, __LINE__, #c); } } while (0)

inline int route(int q, int K[PROCS]::[q], int R[PROCS]::[2*q])
{
    register int i, p;
    int *lK, *lR;
    pair_t C[PROCS]::[q + 3];
    pair_t *lC;
    lK = tolocal(K[MYPROC]);
    lR = tolocal(R[MYPROC]);
    lC = tolocal(C[MYPROC]);
    for (i = 0; i < q; i++) { lK[i] = MYPROC * 1000 + i; lC[i].a = i; lC[i].b = -MYPROC; }
    barrier();
    for (p = 0; p < PROCS; p++) {
        pair_t got[3];
        bulk_read(got, &(C[p][1]), 2 * sizeof(pair_t));
        EXPECT(got[0].a == 1 && got[1].a == 2 && got[0].b == -p);
        bulk_get(lR + 2, &K[p][0], 2 * sizeof(int));
        sync();
        EXPECT(lR[2] == p * 1000 && lR[3] == p * 1000 + 1);
    }
    barrier();
    return q;
}

splitc_main(int argc, char **argv)
{
    int q = 8, i, p;
    int *spread Keys = all_spread_malloc(PROCS, q * sizeof(int));
    int *spread Cnt = all_spread_malloc(PROCS, PROCS * sizeof(int));
    int *global gc;
    int *lk;
    int K[PROCS]::[q];
    int R[PROCS]::[2 * q];

    EXPECT(route(q, K, R) == q);
    lk = (int *)(Keys + MYPROC) - 1;
    for (i = 0; i < q; i++) *++lk = MYPROC * 10 + i;
    barrier();
    for (p = 0; p < PROCS; p++) {
        int *global g = (int *global)(Keys + p) + 3;
        EXPECT(*g == p * 10 + 3 && toproc(g) == p);
        EXPECT(*((int *global)(Keys + p) + q - 1) == p * 10 + q - 1);
    }
    /* every processor stores its id into slot MYPROC of every Cnt block,
     * walking a global pointer with a post-increment inside the :- target */
    for (p = 0; p < PROCS; p++) {
        gc = (int *global)(Cnt + p) + MYPROC;
        *(gc++) :- MYPROC + 1;
        EXPECT(gc == (int *global)(Cnt + p) + MYPROC + 1);
    }
    all_store_sync();
    for (i = 0; i < PROCS; i++) EXPECT(((int *)(Cnt + MYPROC))[i] == i + 1);
    barrier();
    gc = (int *global)(Cnt + (MYPROC + 1) % PROCS);
    for (i = 0; i < PROCS; i++) *gc++ = 0;
    EXPECT(gc - (int *global)(Cnt + (MYPROC + 1) % PROCS) == PROCS);
    barrier();
    all_spread_free(Cnt);
    all_spread_free(Keys);
    errors = all_reduce_to_all_add(errors);
    on_one printf("sort_idioms: %d errors\n", errors);
    barrier();
    if (errors) exit(1);
}
