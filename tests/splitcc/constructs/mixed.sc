/* A mix of C that real programs contain around Split-C: enums, unions, tables of
 * function pointers, a function pointer returning a global pointer, arrays of
 * global pointers with initializers, register variables, goto, switch on a
 * remote value, member arrays of remote structs, a struct get. */
#include <stdio.h>
#include <string.h>
#include <split-c/split-c.h>
#include <split-c/control.h>
enum color { RED, GREEN = 5, BLUE };
typedef union { int i; float f; } num_t;
typedef int (*binop_t)(int, int);
struct pt { int x, y; };
struct shape { enum color c; struct pt pts[3]; num_t n; struct pt *global remote_pt; };
static int add(int a, int b) { return a + b; }
static int mul(int a, int b) { return a * b; }
binop_t ops[2] = { add, mul };
struct shape shapes[2];
struct pt spots[4];
struct pt *global spot_ptrs[2];
int *global (*pick)(int *global, int) = 0;
int *global pick_impl(int *global p, int i) { return p + i; }
long lens[PROCS]::;
static double avg(register int n, double *global v)
{
    double s = 0; register int i;
    for (i = 0; i < n; i++) s += v[i];
    return n ? s / n : 0;
}
double vals[8];
splitc_main(int argc, char **argv)
{
    int nb = (MYPROC + 1) % PROCS, i;
    struct shape *global sh = toglobal(nb, &shapes[1]);
    struct pt tmp = { 1, 2 };
    struct pt *global gp_arr[2] = { 0, 0 };
    num_t u;
    char buf[64];
    shapes[1].c = BLUE;
    for (i = 0; i < 3; i++) { shapes[1].pts[i].x = i; shapes[1].pts[i].y = -i; }
    shapes[1].n.f = 2.5f;
    shapes[1].remote_pt = toglobal(MYPROC, &spots[2]);
    spots[2] = tmp;
    spots[2].x += MYPROC;
    for (i = 0; i < 8; i++) vals[i] = i + MYPROC;
    lens[MYPROC] = strlen("abc" "def") + MYPROC;
    pick = pick_impl;
    barrier();
    if (sh->c != BLUE || sh->pts[2].y != -2 || sh->n.f != 2.5f) { printf("bad shape\n"); return 1; }
    if (sh->remote_pt->x != 1 + nb || (*sh).remote_pt->y != 2) { printf("bad remote_pt\n"); return 1; }
    sh->pts[1] = tmp;
    u = sh->n;
    gp_arr[1] = &sh->pts[0];
    if (gp_arr[1]->x != 0) { printf("bad gp_arr\n"); return 1; }
    if (ops[1](3, 4) != 12 || ops[0](3, 4) != 7) return 1;
    if (avg(8, toglobal(nb, vals)) != 3.5 + nb) { printf("bad avg\n"); return 1; }
    if (pick(toglobal(nb, &i), 0) == 0 || toproc(pick(toglobal(nb, &i), 2)) != nb) return 1;
    sprintf(buf, "%ld", lens[nb]);
    if (atoi(buf) != 6 + nb) { printf("bad lens %s\n", buf); return 1; }
    switch (sh->c) { case RED: return 1; case BLUE: break; default: return 1; }
    i = 0;
again:
    if (++i < 3) goto again;
    {
        struct pt *global q = (struct pt *global) &sh->pts[1];
        struct pt r;
        r := *q;
        sync();
        if (r.x != 1 || r.y != 2) { printf("bad get\n"); return 1; }
    }
    barrier();
    on_one printf("torture ok %d %g\n", PROCS, (double)u.f);
    return 0;
}
