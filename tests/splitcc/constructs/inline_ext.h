/* inline_ext.h - GNU `extern inline` functions for inline_fns.sc, each doing a
 * kind of global access.  inline_fns.sc includes it with EXT = extern inline;
 * in gnu89 that definition is for inlining only, so inline_other.sc includes
 * it again with EXT empty for the one out-of-line copy (the 1990s layout: the
 * header for inlining, a library file for the rest).  In gnu99/gnu11 the
 * `extern inline` definition is itself the external one. */
#ifndef EXT
#define EXT extern inline
#endif
EXT int ext_read(int p, int i) { return *(int *global)toglobal(p, &cell[i]); }
EXT void ext_store(int p, int i, int v) { *(int *global)toglobal(p, &cell[i]) :- v; }
EXT void ext_bulk_read(int p, double *dst) { bulk_read(dst, (double *global)toglobal(p, dcell), sizeof dcell); }
EXT void ext_spread_set(int *spread s, int k, int v) { s[k] = v; }
EXT double ext_read_d(int p, int k) { double *global g = (double *global)toglobal(p, dcell); return g[k]; }
