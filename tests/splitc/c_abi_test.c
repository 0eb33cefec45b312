/* c_abi_test.c - the compiler-rt ABI used from plain C, the way translated
 * Split-C code uses it (the header must compile as C11 with -Wall -Wextra
 * -pedantic).  A ring of processors exchanges values through every operation
 * family; exits non-zero on the first mismatch. */
#define SPLITC_LANGUAGE_NAMES
#include <stdio.h>
#include <string.h>

#include "splitc_rt.h"

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

struct cell {
    double d;
    float f;
    short s;
    char c;
    long l;
    splitc_gptr_t next; /* a global pointer stored in global memory */
    char tail[5000];    /* a struct larger than one message */
};

/* Static spread data, registered the way a translator would. */
static struct cell *cells;
__attribute__((constructor)) static void register_cells(void) {
    splitc_register_static((void **)&cells, 2 * sizeof(struct cell), 64);
}

int splitc_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    int right = (MYPROC + 1) % PROCS, left = (MYPROC + PROCS - 1) % PROCS;
    CHECK(cells != NULL, "static spread object not placed");
    cells[0].d = 1.5 * MYPROC;
    cells[0].f = 0.25f + (float)MYPROC;
    cells[0].s = (short)(-MYPROC);
    cells[0].c = (char)('a' + MYPROC % 26);
    cells[0].l = 1000L * MYPROC;
    cells[0].next = splitc_toglobal(MYPROC, &cells[1]);
    memset(cells[0].tail, MYPROC, sizeof cells[0].tail);
    splitc_barrier();

    splitc_gptr_t r = splitc_toglobal(right, &cells[0]);
    CHECK(splitc_read_d(splitc_gptr_add(r, offsetof(struct cell, d))) == 1.5 * right, "read_d");
    CHECK(splitc_read_f(splitc_gptr_add(r, offsetof(struct cell, f))) == 0.25f + (float)right, "read_f");
    CHECK((short)splitc_read_2(splitc_gptr_add(r, offsetof(struct cell, s))) == -right, "read_2");
    CHECK((char)splitc_read_1(splitc_gptr_add(r, offsetof(struct cell, c))) == 'a' + right % 26, "read_1");
    splitc_gptr_t nx = splitc_read_gptr(splitc_gptr_add(r, offsetof(struct cell, next)));
    CHECK(splitc_toproc(nx) == right && splitc_tolocal(nx) == &cells[1], "read_gptr");

    long l = 0;
    splitc_get_8(&l, splitc_gptr_add(r, offsetof(struct cell, l)));
    static struct cell copy;
    splitc_bulk_get(&copy, r, sizeof copy);
    splitc_sync();
    CHECK(l == 1000L * right, "get_8 gave %ld", l);
    CHECK(copy.tail[0] == (char)right && copy.tail[4999] == (char)right, "bulk_get of a struct");

    /* Into the right neighbour's second cell: put, write, store. */
    splitc_gptr_t r1 = splitc_toglobal(right, &cells[1]);
    splitc_put_d(splitc_gptr_add(r1, offsetof(struct cell, d)), 2.5 * MYPROC);
    splitc_write_struct(splitc_gptr_add(r1, offsetof(struct cell, tail)), cells[0].tail, sizeof cells[0].tail);
    splitc_sync();
    splitc_store_8(splitc_gptr_add(r1, offsetof(struct cell, l)), (uint64_t)(7 * MYPROC + 1));
    splitc_store_sync(8);
    CHECK(cells[1].l == 7 * left + 1, "store_8 gave %ld", cells[1].l);
    splitc_barrier();
    CHECK(cells[1].d == 2.5 * left, "put_d");
    CHECK(cells[1].tail[123] == (char)left, "write_struct");

    /* Spread arithmetic over a spread allocation of doubles. */
    splitc_sptr_t a = splitc_all_spread_malloc((size_t)(3 * PROCS), sizeof(double));
    if (splitc_on_one()) {
        for (int i = 0; i < 3 * PROCS; ++i)
            splitc_write_d(splitc_sptr_to_gptr(splitc_sptr_add(a, i, sizeof(double))), (double)i);
    }
    splitc_barrier();
    double *mine = (double *)splitc_sptr_addr(a);
    for (int k = 0; k < 3; ++k) CHECK(mine[k] == (double)(k * PROCS + MYPROC), "spread element %d", k);
    splitc_all_spread_free(a);

    CHECK(splitc_all_reduce_to_all_add(1) == PROCS, "reduce add");
    CHECK(splitc_all_reduce_to_all_dmax((double)MYPROC) == (double)(PROCS - 1), "reduce dmax");
    CHECK(splitc_all_bcast(MYPROC == 0 ? 99 : 0) == 99, "bcast");
    long bad = splitc_all_reduce_to_all_add(failures);
    if (MYPROC == 0) printf("c_abi_test: PROCS=%d %s\n", PROCS, bad ? "FAILED" : "OK");
    return bad ? 1 : 0;
}
