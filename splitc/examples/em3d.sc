/*
 * em3d.sc -- EM3D in Split-C (the main program; the graph is built in
 * em3d_graph.sc, declarations are in em3d.h).
 *
 * Each iteration updates every E node from its H neighbours, then every H
 * node from its E neighbours.  Two versions of the update:
 *   read   each neighbour value is read through its global pointer
 *   get    all neighbour values of a half-step are fetched with  := , then
 *          one sync()
 * Processor 0 then recomputes the whole graph sequentially and compares
 * every node, reading it through a global pointer (gp->value).
 *
 * Usage (the options of splitc/programs/em3d, so the two can be timed
 * against each other, plus --vprocs):
 *   em3d [--nodes N] [--degree D] [--remote F] [--iters I] [--seed S]
 *        [--variant read|get|all] [--vprocs V] [--corrupt]
 * --nodes is per virtual processor; V defaults to PROCS.  With a fixed V the
 * graph and the printed "result:" are the same for any PROCS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <split-c/split-c.h>
#include <split-c/control.h>
#include "em3d.h"

/* one half-step, each neighbour read when it is needed */
static void
update_read(nodes)
node_t *spread nodes;
{
	int vp, i, j;
	node_t *np;
	double s;

	for (vp = MYPROC; vp < n_vprocs; vp += PROCS)
		for (i = 0; i < n_nodes; i++) {
			np = my_node(nodes, vp, i);
			s = 0;
			for (j = 0; j < np->degree; j++)
				s += np->coeffs[j] * *np->from[j];
			np->value -= s;
		}
	barrier();
}

/* one half-step, all neighbour values fetched first with split-phase gets */
static void
update_get(nodes, buf)
node_t *spread nodes;
double *buf;
{
	int vp, i, j;
	long k;
	node_t *np;
	double s;

	k = 0;
	for (vp = MYPROC; vp < n_vprocs; vp += PROCS)
		for (i = 0; i < n_nodes; i++) {
			np = my_node(nodes, vp, i);
			for (j = 0; j < np->degree; j++) {
				buf[k] := *np->from[j];
				k++;
			}
		}
	sync();
	k = 0;
	for (vp = MYPROC; vp < n_vprocs; vp += PROCS)
		for (i = 0; i < n_nodes; i++) {
			np = my_node(nodes, vp, i);
			s = 0;
			for (j = 0; j < np->degree; j++)
				s += np->coeffs[j] * buf[k++];
			np->value -= s;
		}
	barrier();
}

/* my nodes back to their starting values */
static void
reset(E, H)
node_t *spread E;
node_t *spread H;
{
	int vp, i;

	for (vp = MYPROC; vp < n_vprocs; vp += PROCS)
		for (i = 0; i < n_nodes; i++) {
			my_node(E, vp, i)->value = initial_value(0, vp, i);
			my_node(H, vp, i)->value = initial_value(1, vp, i);
		}
	barrier();
}

/*
 * On processor 0: every node against the sequential computation.  Returns
 * the number of wrong nodes; *sum gets the sum of all values, E nodes then
 * H nodes in order.
 */
static long
check(E, H, iters, sum)
node_t *spread E;
node_t *spread H;
int iters;
double *sum;
{
	long N = (long) n_vprocs * n_nodes, bad = 0;
	double *ref[2], x, want;
	node_t *spread nodes;
	node_t *global gp;
	int k, vp, i;

	ref[0] = (double *) malloc(N * sizeof(double));
	ref[1] = (double *) malloc(N * sizeof(double));
	sequential(iters, ref[0], ref[1]);
	*sum = 0;
	for (k = 0; k < 2; k++) {
		nodes = k == 0 ? E : H;
		for (vp = 0; vp < n_vprocs; vp++)
			for (i = 0; i < n_nodes; i++) {
				gp = (node_t *global) toglobal(vp % PROCS, my_node(nodes, vp, i));
				x = gp->value;
				want = ref[k][(long) vp * n_nodes + i];
				if (x != want) {
					if (bad < 5)
						fprintf(stderr, "em3d: %c node %d of vproc %d is %.17g, "
							"sequential %.17g\n", "EH"[k], i, vp, x, want);
					bad++;
				}
				*sum += x;
			}
	}
	free(ref[0]);
	free(ref[1]);
	return bad;
}

int
splitc_main(int argc, char **argv)
{
	int iters = 10, corrupt = 0, i, v, nv, vp;
	char *variant = "all";
	static char *variants[] = { "read", "get" };
	node_t *spread E;
	node_t *spread H;
	double *buf, t0, t, sum;
	long bad, failures = 0;

	n_nodes = 256;
	n_degree = 8;
	remote_frac = 0.2;
	graph_seed = 1993;
	n_vprocs = PROCS;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
			n_nodes = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--degree") && i + 1 < argc)
			n_degree = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--remote") && i + 1 < argc)
			remote_frac = atof(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			graph_seed = strtoul(argv[++i], (char **) 0, 0);
		else if (!strcmp(argv[i], "--variant") && i + 1 < argc)
			variant = argv[++i];
		else if (!strcmp(argv[i], "--vprocs") && i + 1 < argc)
			n_vprocs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--corrupt"))
			corrupt = 1;
		else
			break;
	}
	if (i < argc || n_nodes < 1 || n_degree < 1 || iters < 0 || n_vprocs < 1 ||
	    remote_frac < 0 || remote_frac > 1 ||
	    (strcmp(variant, "read") && strcmp(variant, "get") && strcmp(variant, "all"))) {
		on_one {
			fprintf(stderr, "usage: em3d [--nodes N] [--degree D] [--remote F] [--iters I] "
				"[--seed S] [--variant read|get|all] [--vprocs V] [--corrupt]\n");
		}
		return 2;
	}

	E = (node_t *spread) all_spread_malloc(n_vprocs, n_nodes * sizeof(node_t));
	H = (node_t *spread) all_spread_malloc(n_vprocs, n_nodes * sizeof(node_t));
	build_nodes(0, E, H);
	build_nodes(1, H, E);
	nv = 0;
	for (vp = MYPROC; vp < n_vprocs; vp += PROCS)
		nv++;
	buf = (double *) malloc((nv ? nv : 1) * (long) n_nodes * n_degree * sizeof(double));
	barrier();

	sum = 0;
	for (v = 0; v < 2; v++) {
		if (strcmp(variant, "all") && strcmp(variant, variants[v]))
			continue;
		reset(E, H);
		t0 = get_seconds();
		for (i = 0; i < iters; i++) {
			if (v == 0) {
				update_read(E);
				update_read(H);
			} else {
				update_get(E, buf);
				update_get(H, buf);
			}
		}
		t = all_reduce_to_all_dmax((get_seconds() - t0) / (iters ? iters : 1));
		if (corrupt && MYPROC == (n_vprocs - 1) % PROCS)
			my_node(H, n_vprocs - 1, n_nodes / 2)->value += 1e-6;
		barrier();
		bad = 0;
		on_one {
			bad = check(E, H, iters, &sum);
		}
		bad = all_bcast_l(bad);
		failures += bad;
		on_one {
			printf("em3d: PROCS=%d nodes/proc=%d degree=%d remote=%.2f iters=%d "
			       "variant=%-5s %10.1f us/iter  check %s\n",
			       PROCS, n_nodes * n_vprocs / PROCS, n_degree, remote_frac, iters,
			       variants[v], t * 1e6, bad ? "FAILED" : "OK");
		}
	}
	on_one {
		printf("result: %.17g\n", sum);
		fflush(stdout);
	}
	barrier();
	all_spread_free(H);
	all_spread_free(E);
	return failures ? 1 : 0;
}
