/*
 * em3d.h -- declarations shared by em3d.sc and em3d_graph.sc.
 *
 * EM3D (after Culler, Dusseau, Goldstein, Krishnamurthy, Lumetta, von Eicken
 * and Yelick, "Parallel Programming in Split-C", Supercomputing '93): a
 * bipartite graph of E nodes and H nodes; each node is updated from nodes of
 * the other kind through global pointers,
 *
 *	value -= sum over j of coeffs[j] * *from[j]
 *
 * The graph is laid out for V "virtual processors" of n nodes of each kind;
 * virtual processor vp lives on processor vp % PROCS.  With V = PROCS (the
 * default) this is the graph of splitc/programs/em3d; a fixed V (--vprocs)
 * gives the same graph, and the same answer, for any PROCS.
 */

typedef struct node {
    double value;
    int degree;
    double *coeffs;       /* local: coeffs[j] */
    double *global *from; /* local array of global pointers */
} node_t;

/*
 * The parameters.  Defined here, not declared extern: both .sc files
 * include this header, and the linker merges the two (common symbols,
 * as in 1990s C).
 */
int n_nodes;        /* nodes of each kind per virtual processor */
int n_degree;       /* in-degree of every node */
int n_vprocs;       /* virtual processors */
double remote_frac; /* fraction of edges from another virtual processor */
unsigned long graph_seed;

/* em3d_graph.sc */
node_t *my_node();
void build_nodes();
void sequential();
double initial_value();
