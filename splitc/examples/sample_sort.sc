/*
 * sample_sort.sc -- sample sort of double keys, written in Split-C.
 *
 *   1. every processor sorts its keys and bulk_stores S evenly spaced samples
 *      into every processor's sample block; all_store_sync()
 *   2. every processor sorts the PROCS*S samples and picks the same PROCS-1
 *      splitters; the keys between two splitters form one bucket
 *   3. bucket sizes go to their destinations with the signalling store :-,
 *      the destinations store back where each source's keys land
 *   4. the buckets are bulk_stored straight out of the sorted key block (it
 *      is spread memory); all_store_sync(); each processor sorts what came
 *
 * The result is checked three ways: keys sorted on every processor and
 * across processors (processor p's largest <= the next one's smallest, read
 * through a global struct pointer), count and sums of the keys unchanged,
 * and a position-weighted checksum equal to the one processor 0 gets by
 * sorting all the keys itself.  That checksum does not depend on PROCS when
 * the number of keys is fixed with --total; it is printed as "result:".
 *
 * Usage (the same options as splitc/programs/sample_sort, so the two can be
 * timed against each other):
 *   sample_sort [--keys N] [--total T] [--oversample S] [--seed X] [--skewed]
 *               [--corrupt]
 *   --keys N     keys per processor (default 20000)
 *   --total T    T keys in all instead, spread as evenly as possible
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <split-c/split-c.h>
#include <split-c/control.h>

#define SCALE 2147483648.0	/* keys are k / 2^31 for integers k < 2^31 */

/* what a processor holds after the sort, read by the others */
struct bounds {
	double lo;		/* smallest key */
	double hi;		/* largest key */
	long n;			/* how many keys */
};

static unsigned long
mix(x)
unsigned long x;
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdUL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53UL;
	x ^= x >> 33;
	return x;
}

/* Key number g of the input.  It depends on g alone, not on who holds it. */
static double
make_key(seed, g, skewed)
unsigned long seed;
long g;
int skewed;
{
	unsigned long h;

	h = mix(seed * 0x9e3779b97f4a7c15UL + (unsigned long) g + 1);
	if (skewed)
		return (double) (h % 97) / 128.0;	/* many equal keys */
	return (double) (h >> 33) / SCALE;
}

/* the key as the integer it was made from (exact) */
static unsigned long
ikey(k)
double k;
{
	return (unsigned long) (k * SCALE);
}

static int
dcmp(a, b)
const void *a;
const void *b;
{
	double x = *(const double *) a;
	double y = *(const double *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* first i with v[i] >= x */
static long
lower_bound(v, n, x)
double *v;
long n;
double x;
{
	long lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* sum of (first+i+1) * key[i]: changes if any key moves or changes */
static unsigned long
weighted(v, n, first)
double *v;
long n, first;
{
	unsigned long s = 0;
	long i;

	for (i = 0; i < n; i++)
		s += (unsigned long) (first + i + 1) * ikey(v[i]);
	return s;
}

static void
usage()
{
	on_one {
		fprintf(stderr, "usage: sample_sort [--keys N] [--total T] [--oversample S] "
			"[--seed X] [--skewed] [--corrupt]\n");
	}
}

int
splitc_main(int argc, char **argv)
{
	long n_per_proc = 20000, total = 0, n, first, nmax, nin, room, i, prefix;
	long S = 16, bad = 0, count0, count1, maxload;
	unsigned long seed = 42, sum0, sum1, mix0, mix1, w, wref;
	int skewed = 0, corrupt = 0, q, p;
	double *spread keys;		/* block p: processor p's input keys */
	double *spread samples;		/* block p: every processor's samples */
	double *spread sorted;		/* block p: processor p's output */
	long *spread counts;		/* counts[q][p]: keys p sends to q */
	long *spread offsets;		/* offsets[p][q]: where they go on q */
	struct bounds *spread ends;
	struct bounds *my;
	double *mine, *my_samples, *all_samples, *out;
	long *cut, *incoming, *where;
	double t0, t;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--keys") && i + 1 < argc)
			n_per_proc = atol(argv[++i]);
		else if (!strcmp(argv[i], "--total") && i + 1 < argc)
			total = atol(argv[++i]);
		else if (!strcmp(argv[i], "--oversample") && i + 1 < argc)
			S = atol(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoul(argv[++i], (char **) 0, 0);
		else if (!strcmp(argv[i], "--skewed"))
			skewed = 1;
		else if (!strcmp(argv[i], "--corrupt"))
			corrupt = 1;
		else {
			usage();
			return 2;
		}
	}
	if (n_per_proc < 1 || S < 1 || (total != 0 && total < PROCS)) {
		on_one {
			fprintf(stderr, "sample_sort: need --keys >= 1, --oversample >= 1 "
				"and --total >= PROCS\n");
		}
		return 2;
	}

	/* my share of the input: keys first .. first+n-1 */
	if (total > 0) {
		n = total / PROCS + (MYPROC < total % PROCS);
		first = MYPROC * (total / PROCS) + (MYPROC < total % PROCS ? MYPROC : total % PROCS);
	} else {
		n = n_per_proc;
		first = MYPROC * n;
		total = n * PROCS;
	}
	nmax = all_reduce_to_all_max_l(n);
	keys = (double *spread) all_spread_malloc(PROCS, nmax * sizeof(double));
	mine = (double *) (keys + MYPROC);
	for (i = 0; i < n; i++)
		mine[i] = make_key(seed, first + i, skewed);

	sum0 = mix0 = 0;
	for (i = 0; i < n; i++) {
		sum0 += ikey(mine[i]);
		mix0 += mix(ikey(mine[i]));
	}
	count0 = all_reduce_to_all_add_l(n);
	sum0 = all_reduce_to_all_add_ul(sum0);
	mix0 = all_reduce_to_all_add_ul(mix0);

	barrier();
	t0 = get_seconds();

	/* 1. samples to everyone: mine go to slot MYPROC of each sample block */
	qsort(mine, n, sizeof(double), dcmp);
	samples = (double *spread) all_spread_malloc(PROCS, PROCS * S * sizeof(double));
	my_samples = (double *) malloc(S * sizeof(double));
	for (i = 0; i < S; i++)
		my_samples[i] = mine[(i * n) / S];
	for (q = 0; q < PROCS; q++)
		bulk_store((double *global) (samples + q) + MYPROC * S, my_samples,
			   S * sizeof(double));
	all_store_sync();

	/* 2. the same splitters everywhere; bucket q is mine[cut[q] .. cut[q+1]-1] */
	all_samples = (double *) (samples + MYPROC);
	qsort(all_samples, PROCS * S, sizeof(double), dcmp);
	cut = (long *) malloc((PROCS + 1) * sizeof(long));
	cut[0] = 0;
	cut[PROCS] = n;
	for (q = 1; q < PROCS; q++)
		cut[q] = lower_bound(mine, n, all_samples[q * S]);

	/* 3. sizes out, places back, both with signalling stores */
	counts = (long *spread) all_spread_malloc(PROCS, PROCS * sizeof(long));
	offsets = (long *spread) all_spread_malloc(PROCS, PROCS * sizeof(long));
	for (q = 0; q < PROCS; q++) {
		long *global c = (long *global) (counts + q);

		c[MYPROC] :- cut[q + 1] - cut[q];
	}
	all_store_sync();
	incoming = (long *) (counts + MYPROC);
	nin = 0;
	for (p = 0; p < PROCS; p++) {
		long *global o = (long *global) (offsets + p);

		o[MYPROC] :- nin;
		nin += incoming[p];
	}
	all_store_sync();
	room = all_reduce_to_all_max_l(nin);
	sorted = (double *spread) all_spread_malloc(PROCS, (room > 0 ? room : 1) * sizeof(double));

	/* 4. the buckets, straight out of spread memory */
	where = (long *) (offsets + MYPROC);
	for (q = 0; q < PROCS; q++)
		if (cut[q + 1] > cut[q])
			bulk_store((double *global) (sorted + q) + where[q], mine + cut[q],
				   (cut[q + 1] - cut[q]) * sizeof(double));
	all_store_sync();
	out = (double *) (sorted + MYPROC);
	qsort(out, nin, sizeof(double), dcmp);
	t = all_reduce_to_all_dmax(get_seconds() - t0);

	if (corrupt && MYPROC == PROCS - 1 && nin > 0)
		out[nin - 1] += 1.0 / SCALE;

	/* checks */
	for (i = 1; i < nin; i++)
		if (out[i - 1] > out[i]) {
			fprintf(stderr, "sample_sort: processor %d: keys %ld and %ld out of order\n",
				MYPROC, i - 1, i);
			bad++;
			break;
		}
	ends = (struct bounds *spread) all_spread_malloc(PROCS, sizeof(struct bounds));
	my = (struct bounds *) (ends + MYPROC);
	my->lo = nin ? out[0] : 0;
	my->hi = nin ? out[nin - 1] : 0;
	my->n = nin;
	barrier();
	prefix = 0;				/* keys on processors before me */
	for (p = 0; p < MYPROC; p++) {
		struct bounds *global b = (struct bounds *global) (ends + p);

		prefix += b->n;
	}
	for (p = MYPROC + 1; p < PROCS && nin > 0; p++) {
		struct bounds *global b = (struct bounds *global) (ends + p);

		if (b->n == 0)
			continue;
		if (b->lo < my->hi) {
			fprintf(stderr, "sample_sort: processor %d ends above processor %d's first key\n",
				MYPROC, p);
			bad++;
		}
		break;
	}
	sum1 = mix1 = 0;
	for (i = 0; i < nin; i++) {
		sum1 += ikey(out[i]);
		mix1 += mix(ikey(out[i]));
	}
	count1 = all_reduce_to_all_add_l(nin);
	sum1 = all_reduce_to_all_add_ul(sum1);
	mix1 = all_reduce_to_all_add_ul(mix1);
	w = all_reduce_to_all_add_ul(weighted(out, nin, prefix));
	on_one {
		double *all;

		if (count1 != count0 || sum1 != sum0 || mix1 != mix0) {
			fprintf(stderr, "sample_sort: keys lost or changed (count %ld -> %ld)\n",
				count0, count1);
			bad++;
		}
		/* the sequential reference: sort everything here */
		all = (double *) malloc(total * sizeof(double));
		for (i = 0; i < total; i++)
			all[i] = make_key(seed, i, skewed);
		qsort(all, total, sizeof(double), dcmp);
		wref = weighted(all, total, 0L);
		free(all);
		if (w != wref) {
			fprintf(stderr, "sample_sort: checksum %016lx, sequential sort gives %016lx\n",
				w, wref);
			bad++;
		}
	}
	bad = all_reduce_to_all_add_l(bad);
	maxload = all_reduce_to_all_max_l(nin);
	on_one {
		printf("sample_sort: PROCS=%d keys=%ld %s max bucket=%ld  %.3f ms  check %s\n",
		       PROCS, count1, skewed ? "skewed" : "uniform", maxload, t * 1e3,
		       bad ? "FAILED" : "OK");
		printf("result: %016lx\n", w);
		fflush(stdout);
	}
	barrier();
	all_spread_free(ends);
	all_spread_free(sorted);
	all_spread_free(offsets);
	all_spread_free(counts);
	all_spread_free(samples);
	all_spread_free(keys);
	free(cut);
	free(my_samples);
	return bad ? 1 : 0;
}
