/* check.h - CHECK(cond) for the translator's construct tests: on failure it
 * names the processor, file and line and exits non-zero (vipl-run then
 * reports the job as failed). */
#include <stdio.h>
#include <stdlib.h>
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "processor %d: %s:%d: CHECK failed: %s\n", \
        MYPROC, __FILE__, __LINE__, #c); exit(1); } } while (0)
