/* scope_test.c - automatic spread arrays and PROCS-sized static spread data
 * the way splitcc emits them: splitc_scope_enter/alloc with the release by
 * __attribute__((cleanup(splitc_scope_leave))), so it runs on every return
 * path, and a constructor calling splitc_register_static_fn.  Checks layout,
 * nesting, release on early return, exhaustion (error names SPLITC_HEAP_SIZE),
 * coexistence with all_spread_malloc and static spread data. */
#include <stdio.h>
#include <string.h>

#include "splitc_rt.h"

#define PROCS splitc_procs()
#define MYPROC splitc_myproc()

static int failures;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "proc %d: %s:%d: ", MYPROC, __FILE__, __LINE__);                                           \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
            ++failures;                                                                                                \
        }                                                                                                              \
    } while (0)

/* What a translator emits for a block declaring automatic spread arrays. */
#define SCOPE splitc_scope_t scope_ __attribute__((cleanup(splitc_scope_leave))) = splitc_scope_enter()

/* file-scope `double u[PROCS*4]::[8];` */
static double *u;
static int u_sized_with_procs;
static size_t u_bytes(void) {
    u_sized_with_procs = splitc_procs();
    /* PROCS*4 blocks of 8 doubles: 4 blocks per processor. */
    return (size_t)(splitc_procs() * 4 + splitc_procs() - 1) / (size_t)splitc_procs() * 8 * sizeof(double);
}
/* and a fixed-size one registered between, to check the order */
static long *w;
__attribute__((constructor)) static void register_statics(void) {
    splitc_register_static_fn((void **)&u, u_bytes, 64);
    splitc_register_static((void **)&w, 3 * sizeof(long), 8);
}

static splitc_error_t last_code;
static char last_msg[768];
static void record(splitc_error_t code, const char *msg, void *ctx) {
    (void)ctx;
    last_code = code;
    strncpy(last_msg, msg, sizeof last_msg - 1);
}

/* Same address everywhere (agreed by a max and a min reduction). */
static int same_everywhere(const void *p) {
    unsigned long a = (unsigned long)(uintptr_t)p;
    return splitc_all_reduce_to_all_max_ul(a) == a && splitc_all_reduce_to_all_min_ul(a) == a;
}

/* `int histo[PROCS]::[k]`, filled by everyone through global pointers:
 * processor q adds q+1 to element q of every block. */
static int histo_round(int k) {
    SCOPE;
    int *histo = splitc_scope_alloc((size_t)PROCS, (size_t)k * sizeof(int), sizeof(int));
    int q, i, ok = 1;
    if (!histo) return 0;
    CHECK(same_everywhere(histo), "scope array at different addresses");
    for (i = 0; i < k; ++i) histo[i] = -1;
    splitc_barrier();
    for (q = 0; q < PROCS; ++q) {
        splitc_sptr_t s = splitc_sptr_add(splitc_sptr_from_gptr(splitc_toglobal(0, histo)), q, (size_t)k * sizeof(int));
        splitc_gptr_t g = splitc_gptr_add(splitc_sptr_to_gptr(s), (int64_t)(MYPROC % k) * (int64_t)sizeof(int));
        CHECK(splitc_toproc(g) == q, "block %d not on processor %d", q, q);
        splitc_store_4(g, (uint32_t)(MYPROC + 1));
    }
    splitc_all_store_sync();
    /* Element i holds p+1 of some writer p with p mod k == i, or -1 if none. */
    for (i = 0; i < k; ++i) {
        if (histo[i] == -1) ok &= i >= PROCS;
        else ok &= histo[i] >= 1 && histo[i] <= PROCS && (histo[i] - 1) % k == i;
    }
    CHECK(ok, "histo contents");
    splitc_barrier(); /* peers are done with this processor's block before it is released */
    return 1;
}

/* Early returns release too. */
static size_t early_return(int depth) {
    SCOPE;
    char *a = splitc_scope_alloc((size_t)PROCS * 3, 100, 0);
    if (!a) return 0;
    a[0] = (char)depth;
    if (depth == 0) return splitc_heap_available();
    if (depth % 2) return early_return(depth - 1);
    {
        SCOPE;
        double *b = splitc_scope_alloc(1, 4096, 4096);
        CHECK(b && ((uintptr_t)b & 4095) == 0, "4096-byte alignment");
        if (depth == 4) return early_return(depth - 1);
    }
    return early_return(depth - 1);
}

int splitc_main(int argc, char **argv) {
    size_t before, deepest;
    int i, bad;
    splitc_sptr_t big;
    (void)argc;
    (void)argv;

    /* PROCSLOG */
    {
        int log = 0;
        while ((1 << log) < PROCS) ++log;
        CHECK(splitc_procslog() == ((1 << log) == PROCS ? log : -1), "PROCSLOG %d for PROCS %d", splitc_procslog(),
              PROCS);
    }

    /* Static spread data sized by PROCS, placed in registration order. */
    CHECK(u != NULL && w != NULL, "static spread objects not placed");
    CHECK(u_sized_with_procs == PROCS, "bytes_per_proc ran before PROCS was known (%d)", u_sized_with_procs);
    CHECK((uintptr_t)u < (uintptr_t)w && ((uintptr_t)u & 63) == 0, "placement order or alignment");
    CHECK(same_everywhere(u) && same_everywhere(w), "static spread objects at different addresses");
    for (i = 0; i < 32; ++i) CHECK(u[i] == 0.0, "static spread data not zeroed");
    for (i = 0; i < 32; ++i) u[i] = MYPROC * 100 + i;
    splitc_barrier();
    {
        int q = (MYPROC + 1) % PROCS;
        /* element (block b, j) of u[PROCS*4]::[8]: b = row*PROCS + q */
        double v = splitc_read_d(splitc_toglobal(q, &u[3 * 8 + 5]));
        CHECK(v == q * 100 + 29, "remote static spread element: %g", v);
    }
    splitc_barrier();

    /* Registering after start-up allocates at once (collective). */
    {
        static int *late;
        static double *late_fn;
        splitc_register_static((void **)&late, 16, 16);
        CHECK(late != NULL && same_everywhere(late), "late static registration");
        u_sized_with_procs = 0;
        splitc_register_static_fn((void **)&late_fn, u_bytes, 128);
        CHECK(late_fn != NULL && same_everywhere(late_fn) && ((uintptr_t)late_fn & 127) == 0 &&
                  u_sized_with_procs == PROCS && late_fn[31] == 0.0,
              "late register_static_fn");
    }

    before = splitc_heap_available();
    CHECK(histo_round(PROCS > 1 ? PROCS - 1 : 1), "histo_round 1");
    CHECK(histo_round(7), "histo_round 2");
    CHECK(splitc_heap_available() == before, "scope memory not released: %zu -> %zu", before, splitc_heap_available());

    /* Nested scopes, released on every early return. */
    deepest = early_return(6);
    CHECK(deepest > 0 && deepest < before, "nested scopes took no memory");
    CHECK(splitc_heap_available() == before, "early return leaked: %zu -> %zu", before, splitc_heap_available());

    /* all_spread_malloc inside a scope, freed after it; and scope arrays do not
     * overlap spread allocations. */
    {
        splitc_sptr_t s1;
        char *a;
        {
            SCOPE;
            a = splitc_scope_alloc((size_t)PROCS, 1000, 0);
            s1 = splitc_all_spread_malloc((size_t)PROCS, 1000);
            CHECK((uintptr_t)splitc_sptr_addr(s1) + 1000 <= (uintptr_t)a ||
                      (uintptr_t)a + 1000 <= (uintptr_t)splitc_sptr_addr(s1),
                  "scope array overlaps a spread allocation");
            memset(a, 0x5a, 1000);
            CHECK(((char *)splitc_sptr_addr(s1))[999] == 0, "spread allocation overwritten");
            splitc_barrier();
        }
        {
            SCOPE;
            char *b = splitc_scope_alloc((size_t)PROCS, 1000, 0);
            CHECK(b == a, "scope stack not reused: %p then %p", (void *)a, (void *)b);
            splitc_barrier();
        }
        splitc_all_spread_free(s1);
    }
    CHECK(splitc_heap_available() == before, "heap not whole again: %zu -> %zu", before, splitc_heap_available());

    /* Exhaustion: a clear error naming SPLITC_HEAP_SIZE and the size, then the
     * heap still works. */
    {
        splitc_error_handler_t old = splitc_set_error_handler(record, NULL);
        size_t want = splitc_heap_size() + 4096;
        char need[32];
        {
            SCOPE;
            void *p = splitc_scope_alloc((size_t)PROCS, want, 0);
            CHECK(p == NULL && last_code == SPLITC_ERR_NO_MEMORY, "exhaustion not reported");
        }
        snprintf(need, sizeof need, "%zu", want);
        CHECK(strstr(last_msg, "SPLITC_HEAP_SIZE") && strstr(last_msg, need), "message: %s", last_msg);
        last_code = SPLITC_OK;
        {
            SCOPE;
            void *p = splitc_scope_alloc((size_t)PROCS, 1, 3);
            CHECK(p == NULL && last_code == SPLITC_ERR_BAD_ARGUMENT, "alignment 3 accepted");
        }
        /* A spread allocation filling all but a little of the heap, then a
         * scope array that does not fit below the stack.  all_spread_malloc
         * zeroes what it hands out, so only with a small heap (ctest runs this
         * with SPLITC_HEAP_SIZE=8M). */
        if (splitc_heap_size() <= ((size_t)64 << 20)) {
            big = splitc_all_spread_malloc((size_t)PROCS, splitc_heap_available() - 8192);
            CHECK(!splitc_gptr_is_null(splitc_sptr_to_gptr(big)), "big spread allocation");
            last_code = SPLITC_OK;
            {
                SCOPE;
                void *p = splitc_scope_alloc((size_t)PROCS, 16384, 0);
                CHECK(p == NULL && last_code == SPLITC_ERR_NO_MEMORY, "scope array over a spread allocation");
                p = splitc_scope_alloc((size_t)PROCS, 4096, 0);
                CHECK(p != NULL, "small scope array next to a big spread allocation");
                splitc_barrier();
            }
            splitc_all_spread_free(big);
        }
        splitc_set_error_handler(old, NULL);
        CHECK(splitc_heap_available() == before, "heap not whole after exhaustion");
    }

    bad = splitc_all_reduce_to_all_add_i(failures);
    if (MYPROC == 0)
        printf("scope_test: PROCS=%d heap %zu bytes: %s\n", PROCS, splitc_heap_size(), bad ? "FAILED" : "OK");
    return bad ? 1 : 0;
}
