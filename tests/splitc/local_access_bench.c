/* local_access_bench.c - cost of a local scalar access through the C ABI:
 * the inline fast path (splitc_read_4 ...) against the out-of-line function
 * (splitc_read_4_slow ..., the only path before the fast paths existed and
 * still the one that serves remote and bad pointers).  store_4 has no inline
 * path (see splitc_rt.h) and is timed as a reference.  Each processor
 * accesses its own block of a spread array, as a translated program touching
 * its part of a spread array does.  Prints ns per access (median of 7 runs).
 * Usage: local_access_bench [ITERS] */
#include <stdio.h>
#include <stdlib.h>

#include "splitc_rt.h"

#define NRUNS 7

static double now(void) { return splitc_get_seconds(); }

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median ns per iteration of BODY over iters iterations. */
#define TIME(result, BODY)                                                                                             \
    do {                                                                                                               \
        double t[NRUNS];                                                                                               \
        int run_;                                                                                                      \
        for (run_ = 0; run_ < NRUNS; ++run_) {                                                                         \
            double t0 = now();                                                                                         \
            for (i = 0; i < iters; ++i) { BODY; }                                                                      \
            t[run_] = (now() - t0) / (double)iters * 1e9;                                                              \
        }                                                                                                              \
        qsort(t, NRUNS, sizeof t[0], cmp);                                                                             \
        result = t[NRUNS / 2];                                                                                         \
    } while (0)

int splitc_main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 2000000, i;
    splitc_sptr_t s = splitc_all_spread_malloc((size_t)splitc_procs(), 64 * sizeof(uint32_t));
    uint32_t *mine = (uint32_t *)splitc_sptr_addr(s), sink = 0, v = 0;
    splitc_gptr_t base = splitc_toglobal(splitc_myproc(), mine);
    double r[2][5]; /* [inline, out-of-line][op] */
    /* Walk 64 words so the address is not loop-invariant. */
#define G splitc_gptr_add(base, (int64_t)(i & 63) * 4)
    if (iters < 1) iters = 1;
    TIME(r[0][0], sink += splitc_read_4(G));
    TIME(r[1][0], sink += splitc_read_4_slow(G));
    TIME(r[0][1], splitc_write_4(G, (uint32_t)i));
    TIME(r[1][1], splitc_write_4_slow(G, (uint32_t)i));
    TIME(r[0][2], splitc_get_4(&v, G); sink += v);
    TIME(r[1][2], splitc_get_4_slow(&v, G); sink += v);
    splitc_sync();
    TIME(r[0][3], splitc_put_4(G, (uint32_t)i));
    TIME(r[1][3], splitc_put_4_slow(G, (uint32_t)i));
    splitc_sync();
    /* store_4 has no inline path: both columns time the call. */
    TIME(r[0][4], splitc_store_4(G, (uint32_t)i));
    TIME(r[1][4], splitc_store_4(G, (uint32_t)i));
    splitc_all_store_sync();
    if (splitc_myproc() == 0) {
        static const char *ops[] = {"read_4", "write_4", "get_4", "put_4", "store_4"};
        int k;
        printf("local scalar access, PROCS=%d, %ld iterations, ns per access (median of %d)\n", splitc_procs(), iters,
               NRUNS);
        printf("  %-8s %8s %10s\n", "op", "inline", "out-of-line");
        for (k = 0; k < 5; ++k) printf("  %-8s %8.2f %10.2f\n", ops[k], r[0][k], r[1][k]);
    }
    if (sink == 0xdeadbeef) printf(" ");
    splitc_barrier();
    splitc_all_spread_free(s);
    return 0;
}
