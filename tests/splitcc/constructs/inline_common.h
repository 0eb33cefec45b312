/* inline_common.h - the data inline_fns.sc and inline_other.sc share. */
#include <split-c/split-c.h>
struct rec { int a; double b; char tag[6]; };
extern int cell[8];
extern double dcell[8];
extern double dcell2[8];
extern struct rec recs[4];
