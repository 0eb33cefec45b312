/* Malformed Split-C: each marked line must get exactly its error, at its
 * line, and nothing else may be reported. */
#include <split-c/split-c.h>

struct flags { int bits : 3; int v; };
struct { int a; } anonymous_one;

void split_phase(int *global g, int l, double d)
{
    l := 5;                      /* expect-error: needs a global reference on one side */
    l :- 3;                      /* expect-error: needs a global reference on its left */
    *g := *g;                    /* expect-error: both sides of ':=' are global references */
    d := *g;                     /* expect-error: both sides of ':=' must have the same type */
}

void conversions(int *global g, int *p)
{
    int *q = g;                  /* expect-error: does not convert to the local pointer */
    int *spread s = p;           /* expect-error: a local pointer cannot become a spread pointer */
    g = 5;                       /* expect-error: an integer cannot be converted */
    g = g * 2;                   /* expect-error: invalid operands to '*' */
    s = (int *spread)p;          /* expect-error: cannot cast a local pointer to a spread pointer */
}

void members(struct flags *global fp)
{
    int b = fp->bits;            /* expect-error: bit-field 'bits' cannot be accessed through a global pointer */
    int c = fp->nothere;         /* expect-error: has no member named 'nothere' */
    int *global ga = &anonymous_one.a;
    int d = ((__typeof__(anonymous_one) *global)ga)->a;   /* expect-error: give it a tag */
}

int Missing[]::;                 /* expect-error: needs the extent of its first dimension */
extern int Elsewhere[]::;               /* no error: an extern declaration makes no storage */

void spread_locals(int n)
{
    int A[PROCS]:: = {1};        /* expect-error: cannot have an initializer */
    static int B[PROCS]::;       /* expect-error: must be automatic */
    int y = undeclared_thing;    /* expect-error: 'undeclared_thing' undeclared */
    int z = sizeof(A);           /* expect-error: sizeof a spread array is not defined */
}

int misplaced(int)::;            /* expect-error: '::' must follow the spread dimensions */

int plain;
int *global too_early = &plain;  /* expect-error: has static storage */

/* Writes through a global reference to const data: the emitted C writes
 * through a runtime call, so only splitcc can refuse them. */
typedef const double cdouble;
void const_targets(const int *global cp, cdouble *global dp, const int *spread sp, int *global p)
{
    int v;
    *cp = 3;                     /* expect-error: assignment to read-only data through a global reference */
    (*cp)++;                     /* expect-error: '++' to read-only data */
    *cp += 2;                    /* expect-error: assignment to read-only data */
    *cp := 4;                    /* expect-error: split-phase put to read-only data */
    *cp :- 5;                    /* expect-error: signalling store to read-only data */
    *dp = 1.0;                   /* expect-error: its type 'cdouble' is const */
    sp[1] = 2;                   /* expect-error: assignment to read-only data */
    v := *cp;
    v = *cp + sp[0];
    *p = v;
    cp = p;
    cp++;
}

/* PROCS is known only at run time: no static array can be sized by it. */
int per_proc[PROCS];             /* expect-error: the extent of 'per_proc' uses PROCS */
extern int per_proc_x[2][PROCS]; /* expect-error: known only at run time */
int per_proc_ok[PROCS]::[PROCS];
void procs_sized(void)
{
    int automatic[PROCS];
    static int kept[PROCS];      /* expect-error: cannot have static storage */
    automatic[0] = kept[0];
}

/* ':=' needs the destination's address until sync(). */
void register_target(int *global g)
{
    register int r;
    int plain;
    r := *g;                     /* expect-error: split-phase get into the register variable 'r' */
    plain := *g;
    sync();
    *g :- r + plain;
}
