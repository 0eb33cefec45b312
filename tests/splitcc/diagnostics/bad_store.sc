/* A signalling store needs a global left side, and arrays move in bulk. */
#include <split-c/split-c.h>

double buf[8];

splitc_main(int argc, char **argv)
{
    double local[8], *global g = toglobal(0, buf);
    local[0] :- 1.0;             /* expect-error: needs a global reference on its left */
    local := *(double (*global)[8])g;   /* expect-error: moves one scalar or struct */
}
