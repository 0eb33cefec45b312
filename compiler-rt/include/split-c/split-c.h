/*
 * <split-c/split-c.h> - the Split-C library under its Split-C names.
 *
 * Split-C programs start with #include <split-c/split-c.h>.  splitcc reads this
 * file after the C preprocessor, and its output is compiled as C, so it is
 * plain C (GNU C) made only of macros over the compiler-rt ABI in splitc_rt.h.
 * splitcc reads splitc_gptr_t as `void *global` and splitc_sptr_t as
 * `void *spread`, so the functions taking those accept any global or spread
 * pointer.  The names are object-like macros naming the functions (so a
 * program may also take their addresses); only on_one and on_proc are
 * statement prefixes.
 *
 *   PROCS, MYPROC, PROCSLOG       int rvalues; PROCSLOG is log2(PROCS), or -1
 *                                 when PROCS is not a power of two
 *   on_one { ... }                runs on processor 0 only; on_proc(p) { ... }
 *   barrier(), sync(), store_sync(n), reset_store_sync(), all_store_sync()
 *   bulk_read/write/get/put/store(dst, src, nbytes)
 *   all_spread_malloc(nblocks, blocksize), all_spread_free(p)
 *   toglobal(proc, addr), tolocal(gp), toproc(gp), is_local(gp)
 *   get_seconds(), splitc_poll()
 *   all_reduce_to_{one,all}_OP[_S](v), all_bcast[_S](v), all_scan_add_S(v):
 *     unsuffixed = int (Split-C's spelling), d-prefixed = double
 *     (all_reduce_to_one_dadd ...), _i _l _u _ul _f _d as in splitc_rt.h.
 *
 * `sync' is Split-C's splitc_sync whatever the order of this file and
 * <unistd.h>: included after this file, unistd's `extern void sync(void)'
 * becomes a compatible redeclaration of splitc_sync (glibc adds nothrow and
 * leaf: splitc_sync neither throws nor calls back into the program unless a
 * program-supplied error handler runs, which only reports); included before,
 * its declaration keeps the name sync and later uses mean splitc_sync.
 */
#ifndef SPLIT_C_SPLIT_C_H
#define SPLIT_C_SPLIT_C_H

#include "../splitc_rt.h"

/* ---- processors (same token sequences as splitc_rt.h's SPLITC_LANGUAGE_NAMES) */
#ifndef PROCS
#define PROCS ((int)splitc_rt_procs)
#define MYPROC ((int)splitc_rt_myproc)
#define PROCSLOG ((int)splitc_rt_procslog)
#define on_one if (MYPROC == 0)
#endif
#ifndef on_proc
#define on_proc(p) if (MYPROC == (p))
#endif

/* ---- synchronisation and completion ------------------------------------------ */
#define barrier splitc_barrier
#define sync splitc_sync
#define store_sync splitc_store_sync
#define reset_store_sync splitc_reset_store_sync
#define all_store_sync splitc_all_store_sync
#define bulk_read splitc_bulk_read
#define bulk_write splitc_bulk_write
#define bulk_get splitc_bulk_get
#define bulk_put splitc_bulk_put
#define bulk_store splitc_bulk_store

/* ---- memory and pointers ---------------------------------------------------- */
#define all_spread_malloc splitc_all_spread_malloc
#define all_spread_free splitc_all_spread_free
#define toglobal splitc_toglobal
#define tolocal splitc_tolocal
#define toproc splitc_toproc
#define is_local splitc_gptr_is_local
#define get_seconds splitc_get_seconds

/* ---- collectives ----------------------------------------------------------- */
/* all_reduce_to_{one,all}_OP_S -> splitc_all_reduce_to_{one,all}_OP_S, one line
 * per name (a macro cannot define macros); tests/splitc/header_test.c checks
 * the list against splitc_rt.h's SPLITC_FOR_REDUCTIONS_. */
#define all_reduce_to_one_add_i splitc_all_reduce_to_one_add_i
#define all_reduce_to_one_add_l splitc_all_reduce_to_one_add_l
#define all_reduce_to_one_add_u splitc_all_reduce_to_one_add_u
#define all_reduce_to_one_add_ul splitc_all_reduce_to_one_add_ul
#define all_reduce_to_one_add_f splitc_all_reduce_to_one_add_f
#define all_reduce_to_one_add_d splitc_all_reduce_to_one_add_d
#define all_reduce_to_one_mul_i splitc_all_reduce_to_one_mul_i
#define all_reduce_to_one_mul_l splitc_all_reduce_to_one_mul_l
#define all_reduce_to_one_mul_u splitc_all_reduce_to_one_mul_u
#define all_reduce_to_one_mul_ul splitc_all_reduce_to_one_mul_ul
#define all_reduce_to_one_mul_f splitc_all_reduce_to_one_mul_f
#define all_reduce_to_one_mul_d splitc_all_reduce_to_one_mul_d
#define all_reduce_to_one_max_i splitc_all_reduce_to_one_max_i
#define all_reduce_to_one_max_l splitc_all_reduce_to_one_max_l
#define all_reduce_to_one_max_u splitc_all_reduce_to_one_max_u
#define all_reduce_to_one_max_ul splitc_all_reduce_to_one_max_ul
#define all_reduce_to_one_max_f splitc_all_reduce_to_one_max_f
#define all_reduce_to_one_max_d splitc_all_reduce_to_one_max_d
#define all_reduce_to_one_min_i splitc_all_reduce_to_one_min_i
#define all_reduce_to_one_min_l splitc_all_reduce_to_one_min_l
#define all_reduce_to_one_min_u splitc_all_reduce_to_one_min_u
#define all_reduce_to_one_min_ul splitc_all_reduce_to_one_min_ul
#define all_reduce_to_one_min_f splitc_all_reduce_to_one_min_f
#define all_reduce_to_one_min_d splitc_all_reduce_to_one_min_d
#define all_reduce_to_one_and_i splitc_all_reduce_to_one_and_i
#define all_reduce_to_one_and_l splitc_all_reduce_to_one_and_l
#define all_reduce_to_one_and_u splitc_all_reduce_to_one_and_u
#define all_reduce_to_one_and_ul splitc_all_reduce_to_one_and_ul
#define all_reduce_to_one_or_i splitc_all_reduce_to_one_or_i
#define all_reduce_to_one_or_l splitc_all_reduce_to_one_or_l
#define all_reduce_to_one_or_u splitc_all_reduce_to_one_or_u
#define all_reduce_to_one_or_ul splitc_all_reduce_to_one_or_ul
#define all_reduce_to_one_xor_i splitc_all_reduce_to_one_xor_i
#define all_reduce_to_one_xor_l splitc_all_reduce_to_one_xor_l
#define all_reduce_to_one_xor_u splitc_all_reduce_to_one_xor_u
#define all_reduce_to_one_xor_ul splitc_all_reduce_to_one_xor_ul
#define all_reduce_to_all_add_i splitc_all_reduce_to_all_add_i
#define all_reduce_to_all_add_l splitc_all_reduce_to_all_add_l
#define all_reduce_to_all_add_u splitc_all_reduce_to_all_add_u
#define all_reduce_to_all_add_ul splitc_all_reduce_to_all_add_ul
#define all_reduce_to_all_add_f splitc_all_reduce_to_all_add_f
#define all_reduce_to_all_add_d splitc_all_reduce_to_all_add_d
#define all_reduce_to_all_mul_i splitc_all_reduce_to_all_mul_i
#define all_reduce_to_all_mul_l splitc_all_reduce_to_all_mul_l
#define all_reduce_to_all_mul_u splitc_all_reduce_to_all_mul_u
#define all_reduce_to_all_mul_ul splitc_all_reduce_to_all_mul_ul
#define all_reduce_to_all_mul_f splitc_all_reduce_to_all_mul_f
#define all_reduce_to_all_mul_d splitc_all_reduce_to_all_mul_d
#define all_reduce_to_all_max_i splitc_all_reduce_to_all_max_i
#define all_reduce_to_all_max_l splitc_all_reduce_to_all_max_l
#define all_reduce_to_all_max_u splitc_all_reduce_to_all_max_u
#define all_reduce_to_all_max_ul splitc_all_reduce_to_all_max_ul
#define all_reduce_to_all_max_f splitc_all_reduce_to_all_max_f
#define all_reduce_to_all_max_d splitc_all_reduce_to_all_max_d
#define all_reduce_to_all_min_i splitc_all_reduce_to_all_min_i
#define all_reduce_to_all_min_l splitc_all_reduce_to_all_min_l
#define all_reduce_to_all_min_u splitc_all_reduce_to_all_min_u
#define all_reduce_to_all_min_ul splitc_all_reduce_to_all_min_ul
#define all_reduce_to_all_min_f splitc_all_reduce_to_all_min_f
#define all_reduce_to_all_min_d splitc_all_reduce_to_all_min_d
#define all_reduce_to_all_and_i splitc_all_reduce_to_all_and_i
#define all_reduce_to_all_and_l splitc_all_reduce_to_all_and_l
#define all_reduce_to_all_and_u splitc_all_reduce_to_all_and_u
#define all_reduce_to_all_and_ul splitc_all_reduce_to_all_and_ul
#define all_reduce_to_all_or_i splitc_all_reduce_to_all_or_i
#define all_reduce_to_all_or_l splitc_all_reduce_to_all_or_l
#define all_reduce_to_all_or_u splitc_all_reduce_to_all_or_u
#define all_reduce_to_all_or_ul splitc_all_reduce_to_all_or_ul
#define all_reduce_to_all_xor_i splitc_all_reduce_to_all_xor_i
#define all_reduce_to_all_xor_l splitc_all_reduce_to_all_xor_l
#define all_reduce_to_all_xor_u splitc_all_reduce_to_all_xor_u
#define all_reduce_to_all_xor_ul splitc_all_reduce_to_all_xor_ul

/* Split-C's spellings: unsuffixed = int, d-prefixed = double. */
#define all_reduce_to_one_add splitc_all_reduce_to_one_add_i
#define all_reduce_to_one_mul splitc_all_reduce_to_one_mul_i
#define all_reduce_to_one_max splitc_all_reduce_to_one_max_i
#define all_reduce_to_one_min splitc_all_reduce_to_one_min_i
#define all_reduce_to_one_and splitc_all_reduce_to_one_and_i
#define all_reduce_to_one_or splitc_all_reduce_to_one_or_i
#define all_reduce_to_one_xor splitc_all_reduce_to_one_xor_i
#define all_reduce_to_all_add splitc_all_reduce_to_all_add_i
#define all_reduce_to_all_mul splitc_all_reduce_to_all_mul_i
#define all_reduce_to_all_max splitc_all_reduce_to_all_max_i
#define all_reduce_to_all_min splitc_all_reduce_to_all_min_i
#define all_reduce_to_all_and splitc_all_reduce_to_all_and_i
#define all_reduce_to_all_or splitc_all_reduce_to_all_or_i
#define all_reduce_to_all_xor splitc_all_reduce_to_all_xor_i
#define all_reduce_to_one_dadd splitc_all_reduce_to_one_add_d
#define all_reduce_to_one_dmul splitc_all_reduce_to_one_mul_d
#define all_reduce_to_one_dmax splitc_all_reduce_to_one_max_d
#define all_reduce_to_one_dmin splitc_all_reduce_to_one_min_d
#define all_reduce_to_all_dadd splitc_all_reduce_to_all_add_d
#define all_reduce_to_all_dmul splitc_all_reduce_to_all_mul_d
#define all_reduce_to_all_dmax splitc_all_reduce_to_all_max_d
#define all_reduce_to_all_dmin splitc_all_reduce_to_all_min_d

#define all_bcast splitc_all_bcast_i
#define all_bcast_i splitc_all_bcast_i
#define all_bcast_l splitc_all_bcast_l
#define all_bcast_u splitc_all_bcast_u
#define all_bcast_ul splitc_all_bcast_ul
#define all_bcast_f splitc_all_bcast_f
#define all_bcast_d splitc_all_bcast_d
#define all_bcast_p splitc_all_bcast_p
#define all_bcast_gptr splitc_all_bcast_gptr
#define all_scan_add splitc_all_scan_add_i
#define all_scan_add_i splitc_all_scan_add_i
#define all_scan_add_l splitc_all_scan_add_l
#define all_scan_add_d splitc_all_scan_add_d

#endif /* SPLIT_C_SPLIT_C_H */
