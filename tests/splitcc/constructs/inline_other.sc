/* inline_other.sc - the out-of-line copies of inline_ext.h's functions that
 * gnu89 `extern inline` leaves to another file (see inline_ext.h), and the
 * external definitions of inline_c99.h's functions in gnu99/gnu11. */
#include "inline_common.h"
#ifdef __GNUC_GNU_INLINE__
#define EXT
#include "inline_ext.h"
#endif
#ifdef __GNUC_STDC_INLINE__
extern int c99_read_spread(int *spread s, int k);
extern void c99_put_d(int p, int k, double v);
#include "inline_c99.h"
#endif
int inline_other_present;
