/* histo.sc - parallel sum and histogram, written as in "Parallel Programming
 * in Split-C": data in a cyclic spread array walked with for_my_1d, partial
 * counts sent to each bucket's owner with signalling stores (:-) and
 * all_store_sync(), reductions to processor 0, checked there against a
 * serial computation.  Exits non-zero on a mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <split-c/split-c.h>
#include <split-c/control.h>

#define N 5000
#define NB 17

int data[N]::;                  /* cyclic: data[i] on processor i % PROCS */
int part[NB]::[PROCS];          /* part[b][p]: processor p's count of bucket b */
int histo[NB]::;                /* the histogram, bucket b on processor b % PROCS */

static value(i)
     int i;
{
    return (int)((i * 7919L + 13) % 1000);
}

splitc_main(argc, argv)
     int argc;
     char **argv;
{
    int i, b, p, errors = 0;
    int count[NB];
    long lsum = 0, total;
    double dsum = 0.0, dtotal, mx;

    for_my_1d(i, N)
        data[i] = value(i);
    barrier();

    for (b = 0; b < NB; b++)
        count[b] = 0;
    for_my_1d(i, N) {
        int v = data[i];        /* local: i is mine */
        lsum += v;
        dsum += v * 0.5;
        count[v % NB]++;
    }
    for (b = 0; b < NB; b++)
        part[b][MYPROC] :- count[b];
    all_store_sync();

    for_my_1d(b, NB) {
        int s = 0;
        for (p = 0; p < PROCS; p++)
            s += part[b][p];
        histo[b] = s;
    }
    barrier();

    total = all_reduce_to_one_add_l(lsum);
    dtotal = all_reduce_to_all_dadd(dsum);
    mx = all_reduce_to_all_max_d(dsum);
    if (all_reduce_to_all_add(1) != PROCS) {
        fprintf(stderr, "processor %d: all_reduce_to_all_add(1) != PROCS\n", MYPROC);
        exit(1);
    }

    on_one {
        long ssum = 0;
        int shist[NB];
        for (b = 0; b < NB; b++)
            shist[b] = 0;
        for (i = 0; i < N; i++) {
            ssum += value(i);
            shist[value(i) % NB]++;
            if (data[i] != value(i))     /* remote reads of the spread array */
                errors++;
        }
        if (ssum != total) {
            fprintf(stderr, "sum %ld, serial %ld\n", total, ssum);
            errors++;
        }
        for (b = 0; b < NB; b++)
            if (histo[b] != shist[b]) {
                fprintf(stderr, "bucket %d: %d, serial %d\n", b, histo[b], shist[b]);
                errors++;
            }
        printf("histo: sum %ld, %d buckets, %d errors\n", total, NB, errors);
    }
    if (dtotal != all_reduce_to_all_add_l(lsum) * 0.5 || mx > dtotal || mx <= 0) {
        fprintf(stderr, "processor %d: dsum %g max %g\n", MYPROC, dtotal, mx);
        errors++;
    }
    barrier();
    if (errors)
        exit(1);
}
