/* rt_inline.c - the out-of-line definitions of splitc_rt.h's inline
 * functions (splitc_read_4, splitc_gptr_add, ...), for C call sites that do
 * not inline them (-O0, a function whose address is taken, a compiler that
 * chose not to): the header declares them GNU `extern inline`, which never
 * emits a copy of its own.  Compiling the header here with
 * SPLITC_RT_OUT_OF_LINE_ turns each into an ordinary external definition,
 * so the bodies have one home. */
#define SPLITC_RT_OUT_OF_LINE_ 1
#include "splitc_rt.h"
