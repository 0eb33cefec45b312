/* bucket_sort.sc - one radix step of a parallel sort with signalling stores,
 * in the style of the Split-C sorting papers: each processor counts its keys
 * per destination processor (the key's top bits), the counts go to every
 * processor with :- into a spread array of blocks and all_store_sync(); each
 * processor then knows where in every destination its keys go and sends them
 * there with :- through global pointers, and the receiver waits with
 * store_sync(bytes expected) alone, not a collective.  Each processor sorts
 * its bucket; processor 0 checks order and content against a serial sort.
 * Exits non-zero on a mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <split-c/split-c.h>

#define NPER 700
#define MAXKEYS (NPER * 16)     /* room per processor for any bucket */
#define KEYBITS 20

int counts[PROCS]::[PROCS];    /* counts[d][s]: keys processor s sends to d */
unsigned inbox[PROCS]::[MAXKEYS];
int nmine[PROCS]::;

unsigned key(int i)
{
    unsigned x = (unsigned)i * 2654435761u;
    return (x ^ (x >> 13)) & ((1u << KEYBITS) - 1);
}

int dest(unsigned k)
{
    return (int)(((unsigned long)k * PROCS) >> KEYBITS);
}

int cmp(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

splitc_main(int argc, char **argv)
{
    unsigned mykeys[NPER];
    int cnt[64], off[64], i, d, s, n, errors = 0;
    unsigned *box = (unsigned *)&inbox[MYPROC][0];

    if (PROCS > 64 || NPER * PROCS > MAXKEYS * PROCS) {
        fprintf(stderr, "too many processors\n");
        exit(2);
    }
    for (i = 0; i < NPER; i++)
        mykeys[i] = key(MYPROC * NPER + i);
    for (d = 0; d < PROCS; d++)
        cnt[d] = 0;
    for (i = 0; i < NPER; i++)
        cnt[dest(mykeys[i])]++;

    /* counts to every destination */
    for (d = 0; d < PROCS; d++)
        counts[d][MYPROC] :- cnt[d];
    all_store_sync();

    /* my offset in d's inbox: keys of lower processors come first */
    for (d = 0; d < PROCS; d++) {
        int o = 0;
        for (s = 0; s < MYPROC; s++)
            o += counts[d][s];      /* remote reads */
        off[d] = o;
    }
    n = 0;
    for (s = 0; s < PROCS; s++)
        n += counts[MYPROC][s];     /* local */
    if (n > MAXKEYS) {
        fprintf(stderr, "processor %d: bucket of %d keys overflows\n", MYPROC, n);
        exit(2);
    }

    /* the keys, each with a signalling store; count only what arrives here */
    for (i = 0; i < NPER; i++) {
        unsigned k = mykeys[i];
        unsigned *global slot;
        d = dest(k);
        slot = &inbox[d][off[d]++];
        *slot :- k;
    }
    store_sync(n * sizeof(unsigned));
    qsort(box, n, sizeof(unsigned), cmp);
    nmine[MYPROC] = n;
    barrier();

    on_one {
        int total = NPER * PROCS, at = 0;
        unsigned *all = malloc(total * sizeof(unsigned)), *ser = malloc(total * sizeof(unsigned));
        for (d = 0; d < PROCS; d++) {
            int nd = nmine[d];
            if (at + nd > total) {
                fprintf(stderr, "bucket sizes exceed %d\n", total);
                exit(1);
            }
            bulk_read(all + at, &inbox[d][0], nd * sizeof(unsigned));
            at += nd;
        }
        for (i = 0; i < total; i++)
            ser[i] = key(i);
        qsort(ser, total, sizeof(unsigned), cmp);
        if (at != total) {
            fprintf(stderr, "%d keys arrived, %d sent\n", at, total);
            errors++;
        }
        for (i = 0; i < total && i < at; i++)
            if (all[i] != ser[i] && errors++ < 5)
                fprintf(stderr, "key %d: %u, serial %u\n", i, all[i], ser[i]);
        printf("bucket_sort: %d keys, %d errors\n", total, errors);
        free(all);
        free(ser);
    }
    if (all_reduce_to_all_add(errors))
        exit(1);
}
