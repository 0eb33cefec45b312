/*
 * heat.sc -- heat diffusion along a rod (1-D Jacobi), in Split-C.
 *
 * The rod is n cells plus an insulating end cell on each side, held in the
 * automatic spread array  double u[n+2]::  , so cell i lives on processor
 * i mod PROCS and each cell's neighbours are on other processors.  Each step:
 *
 *	every processor computes the new value of its cells from u[i-1], u[i],
 *	u[i+1] (plain reads, remote ones included);  barrier();
 *	writes them back; the owners of cells 1 and n also write the end cells
 *	u[0] and u[n+1] (remote writes);  barrier();
 *	processor 0 pours some heat into cell `src' through a global pointer;
 *	barrier();
 *
 * Processor 0 then walks the rod with a spread pointer, compares every cell
 * with its own sequential run and prints "result:" (the sum of the cells),
 * which does not depend on PROCS.
 *
 * Usage: heat [-n CELLS] [-t STEPS] [-s SOURCE] [--corrupt]
 *
 * Written the old way: no <stdlib.h>, so atoi and exit are used undeclared.
 */
#include <stdio.h>
#include <stdlib.h>
#include <split-c/split-c.h>
#include <split-c/control.h>

#define MAXN	4096
#define ALPHA	0.25
#define HEAT	1.0

static double ref[MAXN + 2], ref_new[MAXN + 2];
static double mine[MAXN];

/* the value of option `name' (e.g. "-n"), or dflt */
int
param(argc, argv, name, dflt)
int argc;
char **argv;
char *name;
int dflt;
{
	int i;

	for (i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return atoi(argv[i + 1]);
	return dflt;
}

int
flag(argc, argv, name)
int argc;
char **argv;
char *name;
{
	int i;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return 0;
}

/* starting temperature of cell i (1..n): a sawtooth */
double
start(i)
int i;
{
	return (double) ((i * 37) % 101) / 100.0;
}

/* the same computation on one processor, into ref[] */
void
sequential(n, steps, src)
int n, steps, src;
{
	int i, t;
	double x;

	ref[0] = ref[n + 1] = 0.0;
	for (i = 1; i <= n; i++)
		ref[i] = start(i);
	for (t = 0; t < steps; t++) {
		for (i = 1; i <= n; i++) {
			x = ref[i];
			ref_new[i] = x + ALPHA * (ref[i - 1] - 2 * x + ref[i + 1]);
		}
		for (i = 1; i <= n; i++)
			ref[i] = ref_new[i];
		ref[0] = ref_new[1];
		ref[n + 1] = ref_new[n];
		ref[src] += HEAT;
	}
}

splitc_main(argc, argv)
int argc;
char **argv;
{
	int n = param(argc, argv, "-n", 256);
	double u[n + 2]::;		/* cell i on processor i % PROCS */
	int steps = param(argc, argv, "-t", 40);
	int src = param(argc, argv, "-s", n / 3);
	int i, k, t, bad;
	double x, sum, t0, secs;

	if (n < 2 || n > MAXN || steps < 0 || src < 1 || src > n) {
		on_one {
			fprintf(stderr, "usage: heat [-n CELLS (2..%d)] [-t STEPS] \
[-s SOURCE (1..CELLS)] [--corrupt]\n", MAXN);
		}
		exit(2);
	}

	for_my_1d(i, n + 2)
		u[i] = (i == 0 || i == n + 1) ? 0.0 : start(i);
	barrier();
	t0 = get_seconds();

	for (t = 0; t < steps; t++) {
		k = 0;
		for_my_1d(i, n + 2) {
			if (i == 0 || i == n + 1)
				continue;
			x = u[i];
			mine[k++] = x + ALPHA * (u[i - 1] - 2 * x + u[i + 1]);
		}
		barrier();
		k = 0;
		for_my_1d(i, n + 2) {
			if (i == 0 || i == n + 1)
				continue;
			u[i] = mine[k];
			if (i == 1)
				u[0] = mine[k];		/* insulated ends */
			if (i == n)
				u[n + 1] = mine[k];
			k++;
		}
		barrier();
		on_one {
			double *global hot = (double *global) &u[src];

			*hot += HEAT;
		}
		barrier();
	}
	secs = all_reduce_to_all_dmax(get_seconds() - t0);

	on_one {
		if (flag(argc, argv, "--corrupt"))
			u[n / 2] += 1e-9;
	}

	bad = 0;
	on_one {
		double *spread p = &u[0];

		sequential(n, steps, src);
		sum = 0.0;
		for (i = 0; i < n + 2; i++, p++) {
			x = *p;
			sum += x;
			if (x != ref[i]) {
				if (bad < 5)
					fprintf(stderr, "heat: cell %d is %.17g, sequential %.17g\n",
						i, x, ref[i]);
				bad++;
			}
		}
		printf("heat: PROCS=%d cells=%d steps=%d source=%d  %.3f ms  check %s\n",
		       PROCS, n, steps, src, secs * 1e3, bad ? "FAILED" : "OK");
		printf("result: %.17g\n", sum);
		fflush(stdout);
	}
	bad = all_bcast(bad);
	if (bad)
		exit(1);
}
