/* hello.sc - a tiny Split-C program, compiled with splitcc.
 *
 *   splitcc -o hello hello.sc && vipl-run -n 4 ./hello
 *
 * A spread array with one element per processor; each processor writes its
 * neighbour's element through a global pointer (`:=` would be the
 * split-phase put), then processor 0 sums the array with a reduction.
 */
#include <stdio.h>
#include <split-c/split-c.h>
#include <split-c/control.h>

int cells[PROCS]::;

int splitc_main(int argc, char **argv)
{
    int *global right = (int *global)&cells[(MYPROC + 1) % PROCS];
    int sum;
    *right = MYPROC + 1;
    barrier();
    sum = all_reduce_to_one_add(cells[MYPROC]);
    on_one {
        printf("hello.sc: %d processors, sum of the cells = %d (want %d)\n", PROCS, sum,
               PROCS * (PROCS + 1) / 2);
    }
    return sum == PROCS * (PROCS + 1) / 2 || MYPROC != 0 ? 0 : 1;
}
