/* The other file of knr_spread.sc: its spread array through an extern
 * declaration without the first extent. */
#include <split-c/split-c.h>
#include <split-c/control.h>

extern double A[]::;

void scale_all()
{
    int i;
    for_my_1d(i, 37) A[i] *= 0.5;
}
