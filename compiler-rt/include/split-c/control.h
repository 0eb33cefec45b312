/*
 * <split-c/control.h> - Split-C's control macros: iteration over the part of
 * an index space this processor owns, and statements run on one processor.
 * Plain C, read by splitcc after the C preprocessor like <split-c/split-c.h>
 * (which it includes, for PROCS and MYPROC).
 *
 * Ownership follows spread arrays: the linear spread index s of an element
 * lives on processor s mod PROCS (splitc_all_spread_malloc's layout), where
 * for an l x m index space s = i*m + j and for l x m x n s = (i*m + j)*n + k.
 *
 *   for_my_1d(i, n)                    i = MYPROC, MYPROC + PROCS, ... < n
 *   for_my_2d(i, j, l, m)              every (i, j) in [0,l) x [0,m) with
 *                                      (i*m + j) mod PROCS == MYPROC, in
 *                                      increasing order of i*m + j
 *   for_my_3d(i, j, k, l, m, n)        the same over [0,l) x [0,m) x [0,n)
 *   on_one { ... }                     processor 0 only
 *   on_proc(p) { ... }                 processor p only
 *
 * The loop variables must be assignable ints (or wider); the bounds are
 * evaluated on every iteration, as in a hand-written for loop, so they should
 * not have side effects.  An empty dimension (m or n == 0) runs no iteration.
 */
#ifndef SPLIT_C_CONTROL_H
#define SPLIT_C_CONTROL_H

#include "split-c.h"

#define for_my_1d(i, n) for ((i) = MYPROC; (i) < (n); (i) += PROCS)

/* Walks s = MYPROC, MYPROC + PROCS, ... by carrying j's overflow into i. */
#define for_my_2d(i, j, l, m)                                                                                          \
    for ((i) = (m) > 0 ? MYPROC / (m) : (l), (j) = (m) > 0 ? MYPROC % (m) : 0; (i) < (l);                              \
         (j) += PROCS, (i) += (j) / (m), (j) %= (m))

#define for_my_3d(i, j, k, l, m, n)                                                                                    \
    for ((i) = (m) > 0 && (n) > 0 ? MYPROC / ((m) * (n)) : (l), (j) = (m) > 0 && (n) > 0 ? MYPROC / (n) % (m) : 0,     \
        (k) = (n) > 0 ? MYPROC % (n) : 0;                                                                              \
         (i) < (l); (k) += PROCS, (j) += (k) / (n), (k) %= (n), (i) += (j) / (m), (j) %= (m))

#ifndef on_one
#define on_one if (MYPROC == 0)
#endif
#ifndef on_proc
#define on_proc(p) if (MYPROC == (p))
#endif

#endif /* SPLIT_C_CONTROL_H */
