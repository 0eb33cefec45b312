/*
 * radix_sort.sc -- LSD radix sort of integer keys, in Split-C.
 *
 * The keys are spread in blocks over the processors (processor p holds the
 * keys start_of(p) .. start_of(p) + count_of(p) - 1 of the sorted order at
 * the end, too).  Each pass sorts stably by one digit of B bits:
 *
 *   1. every processor counts its digits into its block of the local spread
 *      array  int histo[PROCS]::[nb]  (nb = 2^B, a run-time extent)
 *   2. a hypercube scan over log2(PROCS) rounds, each partner's running sums
 *      fetched with bulk_get, gives every processor the totals of each digit
 *      and the counts of the processors before it, hence where its keys go
 *   3. the keys, grouped by digit locally, are moved with bulk_put; sync()
 *      and a barrier end the pass
 *
 * The hypercube needs a power-of-two number of processors (PROCSLOG >= 0).
 * Processor 0 sorts all the keys itself and compares position-weighted
 * checksums; every processor checks its order and its last key against the
 * next processor's first.  "result:" is the same for any PROCS.
 *
 * Usage: radix_sort [--total T] [--bits B] [--seed S] [--corrupt]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <split-c/split-c.h>
#include <split-c/control.h>

#define KEY_BITS	32

static long total;		/* keys in all */

/* the blocked layout: the first total % PROCS processors hold one more */
static long
count_of(p)
int p;
{
	return total / PROCS + (p < total % PROCS);
}

static long
start_of(p)
int p;
{
	long base = total / PROCS, extra = total % PROCS;

	return p * base + (p < extra ? p : extra);
}

static int
owner_of(g)
long g;
{
	long base = total / PROCS, extra = total % PROCS;

	if (g < extra * (base + 1))
		return (int) (g / (base + 1));
	return (int) (extra + (g - extra * (base + 1)) / base);
}

static int
ucmp(a, b)
const void *a;
const void *b;
{
	unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

static unsigned long
weighted(v, n, first)
unsigned *v;
long n, first;
{
	unsigned long s = 0;
	long i;

	for (i = 0; i < n; i++)
		s += (unsigned long) (first + i + 1) * (v[i] + 1UL);
	return s;
}

/*
 * One pass: my keys in src go, stably sorted by the digit
 * (key >> shift) & (nb - 1), to their places in dst.  tmp holds
 * count_of(MYPROC) keys.
 */
static void
radix_pass(src, dst, shift, nb, tmp)
unsigned *spread src;
unsigned *spread dst;
int shift, nb;
unsigned *tmp;
{
	int histo[PROCS]::[nb];		/* block p: processor p's counts, then sums */
	int *sums = (int *) &histo[MYPROC][0];
	int *cnt, *below, *in, *at;
	unsigned *keys = (unsigned *) (src + MYPROC);
	long n = count_of(MYPROC), i, g, len, piece, at_p;
	int d, x, partner, p;

	cnt = (int *) malloc(nb * sizeof(int));
	below = (int *) malloc(nb * sizeof(int));
	in = (int *) malloc(nb * sizeof(int));
	at = (int *) malloc(nb * sizeof(int));

	/* 1. my histogram */
	for (x = 0; x < nb; x++)
		sums[x] = 0;
	for (i = 0; i < n; i++)
		histo[MYPROC][(keys[i] >> shift) & (nb - 1)]++;
	bcopy(sums, cnt, nb * sizeof(int));

	/* 2. hypercube scan: sums[] becomes the totals, below[] what the
	 *    processors before me have of each digit */
	for (x = 0; x < nb; x++)
		below[x] = 0;
	for (d = 0; d < PROCSLOG; d++) {
		partner = MYPROC ^ (1 << d);
		barrier();			/* partner's sums are ready */
		bulk_get(in, &histo[partner][0], nb * sizeof(int));
		sync();
		barrier();			/* and read: now change mine */
		for (x = 0; x < nb; x++) {
			if (partner < MYPROC)
				below[x] += in[x];
			sums[x] += in[x];
		}
	}

	/* 3. group my keys by digit (stable), then move each group */
	g = 0;
	for (x = 0; x < nb; x++) {
		at[x] = (int) g;
		g += cnt[x];
	}
	for (i = 0; i < n; i++)
		tmp[at[(keys[i] >> shift) & (nb - 1)]++] = keys[i];
	g = 0;				/* global place of the first key of digit x */
	i = 0;				/* its local place in tmp */
	for (x = 0; x < nb; x++) {
		long gx = g + below[x];

		len = cnt[x];
		while (len > 0) {
			p = owner_of(gx);
			at_p = start_of(p);
			piece = at_p + count_of(p) - gx;
			if (piece > len)
				piece = len;
			bulk_put((unsigned *global) (dst + p) + (gx - at_p), tmp + i,
				 piece * sizeof(unsigned));
			gx += piece;
			i += piece;
			len -= piece;
		}
		g += sums[x];
	}
	sync();
	barrier();
	free(at);
	free(in);
	free(below);
	free(cnt);
}

int
splitc_main(argc, argv)
int argc;
char **argv;
{
	int bits = 8, seed = 1996, corrupt = 0, shift, i;
	long n, first, j, bad = 0;
	unsigned *spread keys;
	unsigned *spread other;
	unsigned *spread t;
	unsigned *all, *tmp, *out;
	unsigned long w, wref;
	double t0, secs;

	total = 40000;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--total") && i + 1 < argc)
			total = atol(argv[++i]);
		else if (!strcmp(argv[i], "--bits") && i + 1 < argc)
			bits = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--corrupt"))
			corrupt = 1;
		else {
			on_one {
				fprintf(stderr, "usage: radix_sort [--total T] [--bits B] [--seed S] [--corrupt]\n");
			}
			return 2;
		}
	}
	if (PROCSLOG < 0 || (1 << PROCSLOG) != PROCS) {
		on_one {
			fprintf(stderr, "radix_sort: needs a power-of-two number of processors, not %d\n",
				PROCS);
		}
		return 2;
	}
	if (total < PROCS || bits < 1 || bits > 16) {
		on_one {
			fprintf(stderr, "radix_sort: need --total >= PROCS and 1 <= --bits <= 16\n");
		}
		return 2;
	}

	/* the same keys everywhere; mine are first .. first+n-1 */
	all = (unsigned *) malloc(total * sizeof(unsigned));
	srandom(seed);
	for (j = 0; j < total; j++)
		all[j] = (unsigned) random();
	n = count_of(MYPROC);
	first = start_of(MYPROC);
	keys = (unsigned *spread) all_spread_malloc(PROCS, count_of(0) * sizeof(unsigned));
	other = (unsigned *spread) all_spread_malloc(PROCS, count_of(0) * sizeof(unsigned));
	bcopy(all + first, (unsigned *) (keys + MYPROC), n * sizeof(unsigned));
	tmp = (unsigned *) malloc(n * sizeof(unsigned));
	barrier();

	t0 = get_seconds();
	for (shift = 0; shift < KEY_BITS; shift += bits) {
		radix_pass(keys, other, shift, 1 << bits, tmp);
		t = keys;
		keys = other;
		other = t;
	}
	secs = all_reduce_to_all_dmax(get_seconds() - t0);

	out = (unsigned *) (keys + MYPROC);
	if (corrupt && MYPROC == PROCS - 1)
		out[n - 1] ^= 1;

	/* checks: my order, my last key against the next processor's first */
	for (j = 1; j < n; j++)
		if (out[j - 1] > out[j]) {
			fprintf(stderr, "radix_sort: processor %d: keys %ld and %ld out of order\n",
				MYPROC, j - 1, j);
			bad++;
			break;
		}
	barrier();
	if (MYPROC < PROCS - 1) {
		unsigned *global next = (unsigned *global) (keys + MYPROC + 1);

		if (*next < out[n - 1]) {
			fprintf(stderr, "radix_sort: processor %d ends above processor %d's first key\n",
				MYPROC, MYPROC + 1);
			bad++;
		}
	}
	w = all_reduce_to_all_add_ul(weighted(out, n, first));
	on_one {
		qsort(all, total, sizeof(unsigned), ucmp);
		wref = weighted(all, total, 0L);
		if (w != wref) {
			fprintf(stderr, "radix_sort: checksum %016lx, sequential sort gives %016lx\n",
				w, wref);
			bad++;
		}
	}
	bad = all_reduce_to_all_add_l(bad);
	on_one {
		printf("radix_sort: PROCS=%d keys=%ld bits=%d  %.3f ms  check %s\n",
		       PROCS, total, bits, secs * 1e3, bad ? "FAILED" : "OK");
		printf("result: %016lx\n", w);
		fflush(stdout);
	}
	barrier();
	all_spread_free(other);
	all_spread_free(keys);
	free(tmp);
	free(all);
	return bad ? 1 : 0;
}
