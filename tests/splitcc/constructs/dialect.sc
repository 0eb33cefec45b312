/* 1990s C as Split-C programs were written: implicit int, K&R definitions,
 * calls to undeclared functions, a string literal broken across lines,
 * bcopy/random/srandom without feature macros, unistd.h's sync() next to
 * Split-C's, gnu89 inline, VLA parameters, void * conversions, "? :-1". */
#include <unistd.h>
#include <split-c/split-c.h>
#include <split-c/control.h>
#include <strings.h>
#include "check.h"
#include "dialect_common.h"

static counter;                         /* implicit int */

add_remote(p, n)                        /* K&R, implicit int return */
int *global p;
int n;
{
    *p += n;
    return *p;
}

double scale(v, f) double v; float f; { return v * f; }

static int sum_vla(int n, int m, int a[n][m])
{
    int i, j, s = 0;
    for (i = 0; i < n; i++)
        for (j = 0; j < m; j++) s += a[i][j];
    return s;
}

inline int square(int x) { return x * x; }

splitc_main(argc, argv)
int argc;
char **argv;
{
    int i, grid[3][4];
    void *vp;
    char *cp;
    char msg[] = "a string broken
across lines";
    int *global mine = &counter;

    counter = MYPROC;
    shared_count = other_file(MYPROC);  /* defined in dialect_other.sc, never declared here */
    barrier();
    CHECK(add_remote(toglobal((MYPROC + 1) % PROCS, &counter), 0) == (MYPROC + 1) % PROCS);
    barrier();
    CHECK(add_remote(mine, 5) == MYPROC + 5);  /* a local pointer converts at the call */
    CHECK(scale(2.0, 1.5f) == 3.0);
    CHECK(msg[15] == '\n');
    for (i = 0; i < 12; i++) grid[i / 4][i % 4] = i;
    CHECK(sum_vla(3, 4, grid) == 66);
    CHECK(square(twice(3)) == 36);
    vp = malloc(16);                     /* implicitly declared: int, converted with a warning */
    cp = vp;
    bcopy("abc", cp, 4);
    CHECK(cp[1] == 'b');
    free(cp);
    srandom(7 + MYPROC);
    i = random() % 10;
    CHECK(i >= 0 && i < 10);
    i = MYPROC ? 1 :-1;
    CHECK(i == (MYPROC ? 1 : -1));
    switch (MYPROC) {
    case 0:-1;
    default:
        break;
    }
    {
        int x;
        x := *(int *global)toglobal((MYPROC + 1) % PROCS, &shared_count);
        sync();                          /* Split-C's sync, though <unistd.h> declares sync(2) */
        CHECK(x == 3 * ((MYPROC + 1) % PROCS));
    }
    CHECK(PROCSLOG < 0 || (1 << PROCSLOG) == PROCS);
    for_my_1d(i, 10) CHECK(i % PROCS == MYPROC);
    barrier();
    on_one printf("dialect: ok on %d processors\n", PROCS);
}
