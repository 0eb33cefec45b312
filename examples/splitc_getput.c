/*
 * splitc_getput.c - the Split-C runtime from plain C (splitc_rt.h, the ABI
 * splitcc's output calls): global pointers, split-phase get/put and sync.
 *
 *   vipl-run -n 4 ./splitc_getput
 *
 * Each processor owns one block of a spread array; it puts its rank into its
 * right neighbour's block (put ... sync), then gets its left neighbour's value
 * back (get ... sync).  main() is our own here: splitc_run starts the
 * runtime, runs the function on every processor and shuts down.
 */
#include <stdint.h>
#include <stdio.h>

#include <splitc_rt.h>

static int body(int argc, char **argv) {
    (void)argc;
    (void)argv;
    int me = splitc_myproc(), n = splitc_procs();
    /* PROCS blocks of 8 bytes, block b on processor b */
    splitc_sptr_t blocks = splitc_all_spread_malloc((size_t)n, sizeof(uint64_t));
    splitc_gptr_t right = splitc_sptr_to_gptr(splitc_sptr_add(blocks, (me + 1) % n, sizeof(uint64_t)));
    splitc_gptr_t mine = splitc_sptr_to_gptr(splitc_sptr_add(blocks, me, sizeof(uint64_t)));

    splitc_put_8(right, 100 + (uint64_t)me); /* *right := 100 + me, done at sync */
    splitc_sync();
    splitc_barrier();

    uint64_t got = 0;
    splitc_get_8(&got, mine); /* local here, but the same call works for any processor */
    splitc_sync();
    int left = (me + n - 1) % n;
    long bad = splitc_all_reduce_to_all_add(got != 100 + (uint64_t)left);
    if (me == 0)
        printf("splitc_getput: %d processors, every block holds its left neighbour's rank: %s\n", n,
               bad ? "NO" : "yes");
    splitc_barrier();
    splitc_all_spread_free(blocks);
    return bad ? 1 : 0;
}

int main(int argc, char **argv) { return splitc_run(argc, argv, body); }
