/* "void splitc_main(argc, argv)" with an early "return;": the job must still
 * exit 0 (the runtime calls an int splitc_main; splitcc wraps this one). */
#include <split-c/split-c.h>
#include <stdio.h>

int seen;

void splitc_main(argc, argv)
int argc;
char **argv;
{
    int *global g = toglobal((MYPROC + 1) % PROCS, &seen);
    *g = 1;
    barrier();
    if (!seen) {
        printf("processor %d: the neighbour's write did not arrive\n", MYPROC);
        exit(1);
    }
    if (argc > 0)
        return;
    printf("never reached\n");
}
