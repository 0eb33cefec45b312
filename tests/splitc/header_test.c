/* header_test.c - <split-c/split-c.h> and <split-c/control.h> as a Split-C
 * program sees them: compiled as gnu89 C with -Wall -Werror by gcc and clang,
 * with the two headers and <stdio.h>, <stdlib.h>, <string.h>, <unistd.h>,
 * <math.h> in the order SPLITC_HEADER_ORDER picks (0..3), then run: sync must
 * be Split-C's, every library name must reach its splitc_* function, and the
 * for_my_* loops must give every index to exactly one processor. */
#if SPLITC_HEADER_ORDER == 0
#include <split-c/split-c.h>
#include <split-c/control.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <math.h>
#elif SPLITC_HEADER_ORDER == 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <math.h>
#include <split-c/split-c.h>
#include <split-c/control.h>
#elif SPLITC_HEADER_ORDER == 2
#include <split-c/control.h>
#include <unistd.h>
#include <math.h>
#include <split-c/split-c.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#elif SPLITC_HEADER_ORDER == 3
#include <math.h>
#include <split-c/split-c.h>
#include <stdio.h>
#include <unistd.h>
#include <split-c/control.h>
#include <stdlib.h>
#include <string.h>
#else
#error "define SPLITC_HEADER_ORDER to 0..3"
#endif

static int failures;

#define CHECK(cond, what)                                                                                              \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "proc %d: %s:%d: %s\n", MYPROC, __FILE__, __LINE__, what);                                 \
            ++failures;                                                                                                \
        }                                                                                                              \
    } while (0)

/* Every suffixed reduction name is a macro for the function of the same
 * (OP, S, T) in splitc_rt.h's list. */
#define CHECK_REDUCTION_NAME(OP, S, T)                                                                                 \
    CHECK(all_reduce_to_one_##OP##_##S == splitc_all_reduce_to_one_##OP##_##S, "name");                                \
    CHECK(all_reduce_to_all_##OP##_##S == splitc_all_reduce_to_all_##OP##_##S, "name");
#define CHECK_BCAST_NAME(A, S, T) CHECK(all_bcast_##S == splitc_all_bcast_##S, "bcast name");

static int names(void) {
    void (*s)(void) = sync;
    SPLITC_FOR_REDUCTIONS_(CHECK_REDUCTION_NAME)
    SPLITC_FOR_ALL_TYPES_(CHECK_BCAST_NAME, _)
    CHECK(s == splitc_sync, "sync is not Split-C's sync");
    CHECK(all_reduce_to_all_add == splitc_all_reduce_to_all_add_i, "unsuffixed means int");
    CHECK(all_reduce_to_one_dadd == splitc_all_reduce_to_one_add_d, "dadd means double");
    CHECK(all_reduce_to_all_dmax == splitc_all_reduce_to_all_max_d, "dmax means double");
    CHECK(all_bcast == splitc_all_bcast_i, "all_bcast means int");
    CHECK(all_bcast_p == splitc_all_bcast_p && all_bcast_gptr == splitc_all_bcast_gptr, "bcast p/gptr");
    CHECK(all_scan_add_d == splitc_all_scan_add_d, "scan");
    CHECK(barrier == splitc_barrier && store_sync == splitc_store_sync, "barrier/store_sync");
    CHECK(bulk_read == splitc_bulk_read && bulk_store == splitc_bulk_store, "bulk");
    CHECK(get_seconds == splitc_get_seconds, "get_seconds");
    return 0;
}

int splitc_main(int argc, char **argv) {
    int i, j, k, n, mine, total, log;
    long sum;
    double *cells;
    splitc_sptr_t s;
    (void)argc;
    (void)argv;
    names();

    /* PROCSLOG: exact log2 for powers of two, else negative. */
    for (log = 0; (1 << log) < PROCS; ++log) {}
    CHECK(PROCSLOG == ((1 << log) == PROCS ? log : -1), "PROCSLOG");
    CHECK((PROCSLOG < 0) == ((PROCS & (PROCS - 1)) != 0), "PROCSLOG < 0 iff PROCS is not a power of two");

    /* Statement prefixes. */
    mine = 0;
    on_one { mine += 1; }
    on_proc(PROCS - 1) { mine += 2; }
    total = all_reduce_to_all_add(mine);
    CHECK(total == 3, "on_one / on_proc ran the wrong number of times");

    /* for_my_1d: each of n indices on its owner, each once. */
    for (n = 0; n <= 2 * PROCS + 3; n += PROCS + 1) {
        sum = 0;
        for_my_1d(i, n) {
            CHECK(i % PROCS == MYPROC, "for_my_1d gave a foreign index");
            sum += i + 1;
        }
        CHECK(all_reduce_to_all_add_l(sum) == (long)n * (n + 1) / 2, "for_my_1d coverage");
    }
    /* for_my_2d over 5 x 3 (and an empty 4 x 0). */
    sum = 0;
    for_my_2d(i, j, 5, 3) {
        CHECK((i * 3 + j) % PROCS == MYPROC && j < 3, "for_my_2d gave a foreign index");
        sum += i * 3 + j + 1;
    }
    CHECK(all_reduce_to_all_add_l(sum) == 15 * 16 / 2, "for_my_2d coverage");
    n = argc > 1000; /* 0, but not a constant the compiler would warn about dividing by */
    for_my_2d(i, j, 4, n) CHECK(0, "for_my_2d over an empty dimension ran");
    for_my_3d(i, j, k, 4, 2, n) CHECK(0, "for_my_3d over an empty dimension ran");
    /* for_my_3d over 3 x 4 x 2. */
    sum = 0;
    for_my_3d(i, j, k, 3, 4, 2) {
        CHECK(((i * 4 + j) * 2 + k) % PROCS == MYPROC && j < 4 && k < 2, "for_my_3d gave a foreign index");
        sum += (i * 4 + j) * 2 + k + 1;
    }
    CHECK(all_reduce_to_all_add_l(sum) == 24 * 25 / 2, "for_my_3d coverage");

    /* The library through its Split-C names, with the layout for_my_1d assumes. */
    n = 4 * PROCS + 1;
    s = all_spread_malloc(n, sizeof(double));
    cells = (double *)splitc_sptr_addr(s);
    for_my_1d(i, n) cells[i / PROCS] = sqrt((double)i);
    barrier();
    on_one {
        for (i = 0; i < n; ++i) {
            double v = 0;
            splitc_gptr_t g = splitc_sptr_to_gptr(splitc_sptr_add(s, i, sizeof(double)));
            CHECK(toproc(g) == i % PROCS, "spread layout");
            bulk_read(&v, g, sizeof v);
            CHECK(v == sqrt((double)i), "bulk_read through the Split-C name");
        }
    }
    sync();
    barrier();
    all_spread_free(s);
    CHECK(is_local(toglobal(MYPROC, &mine)) && tolocal(toglobal(MYPROC, &mine)) == &mine, "toglobal/tolocal");
    CHECK(all_bcast(MYPROC == 0 ? 41 : -1) == 41, "all_bcast");
    CHECK(all_reduce_to_all_dmax(get_seconds()) > 0, "get_seconds");

    total = all_reduce_to_all_add(failures);
    on_one printf("header_test (order %d): PROCS=%d PROCSLOG=%d %s\n", SPLITC_HEADER_ORDER, PROCS, PROCSLOG,
                  total ? "FAILED" : "OK");
    return total ? 1 : 0;
}
