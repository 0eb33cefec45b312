/*
 * em3d_graph.sc -- building the EM3D graph, and the sequential reference.
 *
 * The graph is a function of the parameters alone: edge j of node i (kind k)
 * of virtual processor vp is drawn from a hash of (seed, k, vp, i, j).  With
 * probability remote_frac it comes from another virtual processor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <split-c/split-c.h>
#include <split-c/control.h>
#include "em3d.h"

static unsigned long
mix(x)
unsigned long x;
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9UL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebUL;
	x ^= x >> 31;
	return x;
}

static unsigned long
hash(a, b, c, d)
unsigned long a, b, c, d;
{
	return mix(mix(mix(mix(a) + b) + c) + d);
}

/* [0, 1) from 53 bits of h */
static double
unit(h)
unsigned long h;
{
	return (double) (h >> 11) / 9007199254740992.0;
}

/* edge j into node i (kind k) of virtual processor vp: from node *qi of
 * the other kind on virtual processor *qp, with weight *coeff */
static void
edge(k, vp, i, j, qp, qi, coeff)
int k, vp, i, j;
int *qp, *qi;
double *coeff;
{
	unsigned long h;

	h = hash(graph_seed, (unsigned long) k, (unsigned long) vp * 1000003UL + i, (unsigned long) j);
	*qp = vp;
	if (n_vprocs > 1 && unit(mix(h ^ 1)) < remote_frac)
		*qp = (vp + 1 + (int) (mix(h ^ 2) % (unsigned long) (n_vprocs - 1))) % n_vprocs;
	*qi = (int) (mix(h ^ 3) % (unsigned long) n_nodes);
	*coeff = 0.5 * unit(mix(h ^ 4)) / n_degree;
}

double
initial_value(k, vp, i)
int k, vp, i;
{
	return unit(hash(graph_seed ^ 0x5eed, (unsigned long) k, (unsigned long) vp, (unsigned long) i));
}

/*
 * Node i of virtual processor vp in the node array `nodes' (a spread array
 * of V blocks of n_nodes nodes).  The address is the same on every
 * processor, so it is also the local half of the node's global address on
 * processor vp % PROCS.
 */
node_t *
my_node(nodes, vp, i)
node_t *spread nodes;
int vp, i;
{
	node_t *base = (node_t *) (nodes + MYPROC);

	return base + (vp / PROCS) * n_nodes + i;
}

/*
 * Fill in my nodes of kind k (in `nodes'); their neighbours are nodes of the
 * other kind, in `other'.
 */
void
build_nodes(k, nodes, other)
int k;
node_t *spread nodes;
node_t *spread other;
{
	int vp, i, j, qp, qi;
	node_t *np;

	for (vp = MYPROC; vp < n_vprocs; vp += PROCS)
		for (i = 0; i < n_nodes; i++) {
			np = my_node(nodes, vp, i);
			np->value = initial_value(k, vp, i);
			np->degree = n_degree;
			np->coeffs = (double *) malloc(n_degree * sizeof(double));
			np->from = (double *global *) malloc(n_degree * sizeof(double *global));
			for (j = 0; j < n_degree; j++) {
				edge(k, vp, i, j, &qp, &qi, &np->coeffs[j]);
				np->from[j] = (double *global) toglobal(qp % PROCS,
									&my_node(other, qp, qi)->value);
			}
		}
}

/*
 * The whole computation on this processor: e[vp * n_nodes + i] and
 * h[vp * n_nodes + i] are the values after `iters' iterations.
 */
void
sequential(iters, e, h)
int iters;
double *e, *h;
{
	int it, k, vp, i, j, qp, qi;
	double s, c, *val[2];

	val[0] = e;
	val[1] = h;
	for (k = 0; k < 2; k++)
		for (vp = 0; vp < n_vprocs; vp++)
			for (i = 0; i < n_nodes; i++)
				val[k][vp * n_nodes + i] = initial_value(k, vp, i);
	for (it = 0; it < iters; it++)
		for (k = 0; k < 2; k++)
			for (vp = 0; vp < n_vprocs; vp++)
				for (i = 0; i < n_nodes; i++) {
					s = 0;
					for (j = 0; j < n_degree; j++) {
						edge(k, vp, i, j, &qp, &qi, &c);
						s += c * val[1 - k][qp * n_nodes + qi];
					}
					val[k][vp * n_nodes + i] -= s;
				}
}
