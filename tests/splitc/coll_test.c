/* coll_test.c - every typed collective of the C ABI (reductions to one and to
 * all for each operation and type suffix, broadcasts, scans) against the same
 * fold computed locally in C with the type's own arithmetic, in rank order.
 * The list of (operation, suffix, type) comes from splitc_rt.h, so a function
 * added there is tested here without another line. */
#include <stdio.h>
#include <string.h>

#include "splitc_rt.h"

static int failures;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "proc %d: %s:%d: ", splitc_myproc(), __FILE__, __LINE__);                                  \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
            ++failures;                                                                                                \
        }                                                                                                              \
    } while (0)

/* Processor p's contribution to OP, chosen so that every case matters: float
 * and double parts that round (order), negative values (signed vs unsigned
 * comparison, sign extension of int through the 64-bit wire), bit patterns
 * that differ per processor. */
#define VAL_add(T, p) ((T)((p)*3 + 1) + (T)1 / (T)((p) + 3))
#define VAL_mul(T, p) ((T)((p) % 3 + 1) + (T)1 / (T)((p) + 3))
#define VAL_max(T, p) ((T)((p)*7 % 5 - 2) + (T)1 / (T)((p) + 3))
#define VAL_min(T, p) VAL_max(T, p)
#define VAL_and(T, p) ((T)(~(1L << (p)) ^ ((p)&1 ? 0 : 0x3000)))
#define VAL_or(T, p) ((T)((1L << (p)) | ((p) == 2 ? -8L : 0L)))
#define VAL_xor(T, p) ((T)((0x5A5AL >> (p)) ^ -((long)(p)&1)))
#define FOLD_add(a, b) ((a) + (b))
#define FOLD_mul(a, b) ((a) * (b))
#define FOLD_max(a, b) ((a) > (b) ? (a) : (b))
#define FOLD_min(a, b) ((a) < (b) ? (a) : (b))
#define FOLD_and(a, b) ((a) & (b))
#define FOLD_or(a, b) ((a) | (b))
#define FOLD_xor(a, b) ((a) ^ (b))

/* Compared as bytes: float results must be bit-identical, not just close. */
#define TEST_REDUCTION(OP, S, T)                                                                                       \
    {                                                                                                                  \
        T want = VAL_##OP(T, 0), all, one;                                                                             \
        int p;                                                                                                         \
        for (p = 1; p < PROCS; ++p) want = FOLD_##OP(want, VAL_##OP(T, p));                                            \
        all = splitc_all_reduce_to_all_##OP##_##S(VAL_##OP(T, MYPROC));                                                \
        one = splitc_all_reduce_to_one_##OP##_##S(VAL_##OP(T, MYPROC));                                                \
        CHECK(memcmp(&all, &want, sizeof want) == 0, "all_reduce_to_all_" #OP "_" #S ": got %.17g want %.17g",         \
              (double)all, (double)want);                                                                              \
        if (MYPROC == 0)                                                                                               \
            CHECK(memcmp(&one, &want, sizeof want) == 0, "all_reduce_to_one_" #OP "_" #S ": got %.17g want %.17g",     \
                  (double)one, (double)want);                                                                          \
        ++ntested;                                                                                                     \
    }

#define TEST_BCAST(A, S, T)                                                                                            \
    {                                                                                                                  \
        T want = VAL_add(T, 7), got = splitc_all_bcast_##S(MYPROC == 0 ? want : (T)MYPROC);                            \
        CHECK(memcmp(&got, &want, sizeof want) == 0, "all_bcast_" #S);                                                 \
        ++ntested;                                                                                                     \
    }

#define PROCS splitc_procs()
#define MYPROC splitc_myproc()

static char anchor[64];

/* A returning error handler: keeps the message. */
static void record(splitc_error_t code, const char *msg, void *ctx) {
    (void)code;
    strncpy((char *)ctx, msg, 767);
}

int splitc_main(int argc, char **argv) {
    int ntested = 0, p, bad;
    (void)argc;
    (void)argv;
    SPLITC_FOR_REDUCTIONS_(TEST_REDUCTION)
    SPLITC_FOR_ALL_TYPES_(TEST_BCAST, _)
    /* add mul max min on 6 types, and or xor on 4, broadcasts on 6. */
    CHECK(ntested == 4 * 6 + 3 * 4 + 6, "tested %d collectives", ntested);

    /* The old names still work and agree with the suffixed ones. */
    CHECK(splitc_all_reduce_to_all_add(MYPROC + 1L) == (long)PROCS * (PROCS + 1) / 2, "old add");
    CHECK(splitc_all_reduce_to_one_dadd(0.5) == 0.5 * PROCS || MYPROC != 0, "old dadd");
    CHECK(splitc_all_bcast(MYPROC == 0 ? -5L : 3L) == -5L, "old bcast");
    CHECK(splitc_all_bcast_d(MYPROC == 0 ? 0.125 : 1.0) == 0.125, "old bcast_d");

    /* Pointers: processor 0's values. */
    {
        void *want = (void *)splitc_all_bcast_ul((unsigned long)(uintptr_t)&anchor[MYPROC % 64]);
        void *got = splitc_all_bcast_p(&anchor[MYPROC % 64]);
        splitc_gptr_t g = splitc_all_bcast_gptr(splitc_toglobal(MYPROC, &anchor[MYPROC % 64]));
        CHECK(got == want, "all_bcast_p");
        CHECK(splitc_toproc(g) == 0 && splitc_tolocal(g) == want, "all_bcast_gptr");
    }

    /* Inclusive scans in rank order. */
    {
        int wi = 0;
        long wl = 0;
        double wd = 0;
        for (p = 0; p <= MYPROC; ++p) {
            wi += VAL_add(int, p) - 2 * p;
            wl += VAL_add(long, p) * 1000000007L;
            wd += VAL_add(double, p);
        }
        CHECK(splitc_all_scan_add_i(VAL_add(int, MYPROC) - 2 * MYPROC) == wi, "scan_add_i");
        CHECK(splitc_all_scan_add_l(VAL_add(long, MYPROC) * 1000000007L) == wl, "scan_add_l");
        {
            double got = splitc_all_scan_add_d(VAL_add(double, MYPROC));
            CHECK(memcmp(&got, &wd, sizeof wd) == 0, "scan_add_d: got %.17g want %.17g", got, wd);
        }
    }

    /* Processors calling different typed collectives at one point are told. */
    if (PROCS > 1) {
        static int seen;
        static char last[768];
        splitc_error_handler_t old;
        old = splitc_set_error_handler(record, last);
        seen = 0;
        if (MYPROC == 0) splitc_all_reduce_to_all_add_i(1);
        else splitc_all_reduce_to_all_add_d(1.0);
        seen = splitc_take_last_error();
        splitc_set_error_handler(old, NULL);
        CHECK(seen == SPLITC_ERR_COLLECTIVE_MISMATCH, "add_i against add_d not reported");
        CHECK(strstr(last, "add_i") && strstr(last, "add_d"), "mismatch message: %s", last);
    }

    bad = (int)splitc_all_reduce_to_all_add_i(failures);
    if (MYPROC == 0) printf("coll_test: PROCS=%d, %d collectives: %s\n", PROCS, ntested, bad ? "FAILED" : "OK");
    return bad ? 1 : 0;
}
