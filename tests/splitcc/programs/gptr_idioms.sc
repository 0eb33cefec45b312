/* gptr_idioms.sc - the C pointer idioms of 1990s Split-C code applied to
 * global pointers: *gp++ = v, x = *gp++, gp[-1], compound assignments of
 * every kind through a global pointer, chained assignment, truth tests,
 * fields and nested fields through struct pointers (rp->a[3],
 * rp->inner.c, rp->self->self->d, rp[1].d), global pointers to fields,
 * a global pointer to a global pointer, K&R functions returning global
 * pointers, and split-phase struct copies and field puts.  Exits non-zero
 * on a mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <split-c/split-c.h>
struct in { short s; char c; };
struct rec { int a[4]; struct in inner; double d; struct rec *global self; };
struct rec recs[3];
int vals[16];
int *global G[PROCS]::;
int M[PROCS]::[4];
static int errors;
#define EXPECT(c) do { if (!(c)) { if (errors++ < 20) fprintf(stderr, "processor %d: line %d: %s\n", MYPROC, __LINE__, #c); } } while (0)

int *global pick(q, k)
    int q, k;
{
    return toglobal(q, &vals[k]);
}

splitc_main(argc, argv)
    char **argv;
{
    int right = (MYPROC + 1) % PROCS, i, x;
    int *global gp, *global *global pp;
    struct rec *global rp;
    short *global sgp;
    char *global cgp;
    unsigned char *global ucp;
    for (i = 0; i < 16; i++) vals[i] = MYPROC * 16 + i;
    for (i = 0; i < 3; i++) { recs[i].a[0] = i; recs[i].a[3] = MYPROC; recs[i].inner.s = -i; recs[i].inner.c = 'a' + MYPROC; recs[i].d = 1.5; recs[i].self = toglobal(MYPROC, &recs[i]); }
    G[MYPROC] = toglobal(MYPROC, &vals[MYPROC % 16]);
    for (i = 0; i < 4; i++) M[MYPROC][i] = MYPROC * 10 + i;
    barrier();

    gp = pick(right, 0);
    x = *gp++;                      EXPECT(x == right * 16 && *gp == right * 16 + 1);
    *gp++ = 77;
    EXPECT(gp[-1] == 77 && *(gp - 1) == 77);
    gp = pick(right, 5);
    *gp |= 0x100;  *gp <<= 1; *gp -= 3; *gp %= 1000;
    EXPECT(*gp == (((right * 16 + 5) | 0x100) * 2 - 3) % 1000);
    x = *gp = 9;                    EXPECT(x == 9 && *gp == 9);
    if (gp) x = 1; else x = 0;      EXPECT(x == 1);
    EXPECT(gp && !(gp == 0) && gp != 0);
    rp = toglobal(right, &recs[1]);
    EXPECT(rp->a[0] == 1 && rp->a[3] == right && (*rp).inner.s == -1 && rp->inner.c == 'a' + right);
    EXPECT(rp->self == rp && rp->self->self->d == 1.5);
    EXPECT(sizeof(*rp) == sizeof(struct rec) && sizeof(int *global) == 8);
    rp[1].d = 2.5;                  EXPECT((rp + 1)->d == 2.5 && rp[1].inner.s == -2);
    sgp = &rp->inner.s;             EXPECT(*sgp == -1 && toproc(sgp) == right);
    ++*sgp; (*sgp)++;               EXPECT(rp->inner.s == 1);
    cgp = (char *global)rp + 1;     EXPECT(toproc(cgp) == right);
    ucp = (unsigned char *global)&rp->inner.c;
    EXPECT(*ucp == 'a' + right);
    {
        int *global la = &rp->a[0];
        la[1] = 5; la[2] = la[1] * 2;
        EXPECT(rp->a[2] == 10);
    }
    pp = (int *global *global)&G[right];
    EXPECT(**pp == *G[right]);
    EXPECT(toproc(*pp) == right);
    x := M[right][2]; sync();       EXPECT(x == right * 10 + 2);
    M[right][3] := 44; sync();
    EXPECT(M[right][3] == 44);
    {
        int *global q = &M[right][0];
        EXPECT(q[3] == 44 && *(q + 1) == right * 10 + 1 && toproc(q + 3) == right);
    }
    {
        struct rec r;
        r := *rp; sync();
        EXPECT(r.a[2] == 10 && r.inner.s == 1 && r.self == rp);
        rp->d := 8.0; sync();
        EXPECT(rp->d == 8.0);
    }
    barrier();
    errors = all_reduce_to_all_add(errors);
    on_one printf("gptr_idioms: %d errors\n", errors);
    barrier();
    if (errors) exit(1);
}
