/* Split-phase assignment (:=, completed by sync()), signalling stores (:-,
 * counted by store_sync and all_store_sync) and the bulk operations, for
 * every scalar size, pointers and structs. */
#include <split-c/split-c.h>
#include <string.h>
#include "check.h"

struct pair { int a; double b; char tag[5]; };

char cs[4]; short ss[4]; int is[4]; long ls[4]; float fs[4]; double ds[4];
int *global gs[4];
struct pair ps[4];
int inbox[64];
double big[1000];
long double lds[3];

splitc_main(int argc, char **argv)
{
    int me = MYPROC, nb = (MYPROC + 1) % PROCS, pv = (MYPROC + PROCS - 1) % PROCS, k;
    char c; short s; int i; long l; float f; double d; int *global g; struct pair p;

    cs[0] = 'A' + me; ss[0] = -300 - me; is[0] = 70000 + me; ls[0] = 1L << 40 | me; fs[0] = 0.75f * me;
    ds[0] = 1.0 / (me + 3); gs[0] = toglobal(me, &is[0]);
    ps[0].a = me; ps[0].b = me * 2.0; strcpy(ps[0].tag, "ok");
    for (k = 0; k < 1000; k++) big[k] = me * 1000 + k;
    barrier();

    /* gets: l := *g */
    c := *(char *global)toglobal(nb, &cs[0]);
    s := *(short *global)toglobal(nb, &ss[0]);
    i := *(int *global)toglobal(nb, &is[0]);
    l := *(long *global)toglobal(nb, &ls[0]);
    f := *(float *global)toglobal(nb, &fs[0]);
    d := *(double *global)toglobal(nb, &ds[0]);
    g := *(int *global *global)toglobal(nb, &gs[0]);
    p := *(struct pair *global)toglobal(nb, &ps[0]);
    sync();
    CHECK(c == 'A' + nb && s == -300 - nb && i == 70000 + nb && l == (1L << 40 | nb));
    CHECK(f == 0.75f * nb && d == 1.0 / (nb + 3) && toproc(g) == nb && *g == 70000 + nb);
    CHECK(p.a == nb && p.b == nb * 2.0 && strcmp(p.tag, "ok") == 0);
    barrier();

    /* puts: *g := v, into the next processor's slot 1 */
    *(char *global)toglobal(nb, &cs[1]) := c + 1;
    *(short *global)toglobal(nb, &ss[1]) := s;
    *(int *global)toglobal(nb, &is[1]) := i * 2;
    *(long *global)toglobal(nb, &ls[1]) := l;
    *(float *global)toglobal(nb, &fs[1]) := f;
    *(double *global)toglobal(nb, &ds[1]) := d;
    *(int *global *global)toglobal(nb, &gs[1]) := g;
    ((struct pair *global)toglobal(nb, ps))[1] := p;
    sync();
    barrier();
    CHECK(cs[1] == 'A' + me + 1 && ss[1] == -300 - me && is[1] == 2 * (70000 + me) && ls[1] == (1L << 40 | me));
    CHECK(fs[1] == 0.75f * me && ds[1] == 1.0 / (me + 3) && toproc(gs[1]) == me && ps[1].a == me && ps[1].tag[1] == 'k');
    barrier();

    /* signalling stores: each processor stores 8 ints and a double into the next one */
    for (k = 0; k < 8; k++) *(int *global)toglobal(nb, &inbox[me * 8 % 64 + k]) :- me * 10 + k;
    ((double *global)toglobal(nb, ds))[2] :- 6.5;
    store_sync(8 * sizeof(int) + sizeof(double));
    for (k = 0; k < 8; k++) CHECK(inbox[pv * 8 % 64 + k] == pv * 10 + k);
    CHECK(ds[2] == 6.5);
    barrier();
    for (k = 0; k < 4; k++) ((short *global)toglobal(nb, ss))[2] :- (short)k;
    all_store_sync();
    CHECK(ss[2] == 3);
    barrier();

    /* long double (16 bytes, no scalar transfer): get, put and store move it
     * like a struct.  Regression: splitcc refused 'x := *g' for it with
     * "get of a 'long double' into a 'long double': ... must have the same type". */
    {
        long double x;
        lds[0] = 1.0L / 3 + me;
        barrier();
        x := *(long double *global)toglobal(nb, &lds[0]);
        sync();
        CHECK(x == 1.0L / 3 + nb);
        *(long double *global)toglobal(nb, &lds[1]) := x * 2;
        sync();
        ((long double *global)toglobal(nb, lds))[2] :- x + 1;
        all_store_sync();
        CHECK(lds[1] == (1.0L / 3 + me) * 2 && lds[2] == 1.0L / 3 + me + 1);
    }

    /* bulk operations */
    {
        double tmp[1000];
        double *global far = toglobal(nb, big);
        bulk_read(tmp, far, sizeof tmp);
        for (k = 0; k < 1000; k++) CHECK(tmp[k] == nb * 1000 + k);
        bulk_get(tmp, far + 10, 5 * sizeof(double));
        sync();
        CHECK(tmp[0] == nb * 1000 + 10 && tmp[4] == nb * 1000 + 14);
        barrier();
        for (k = 0; k < 20; k++) tmp[k] = -k - me;
        bulk_put(far + 100, tmp, 20 * sizeof(double));
        sync();
        barrier();
        CHECK(big[119] == -19 - pv && big[100] == -pv);
        barrier();
        bulk_store(far + 200, tmp, 10 * sizeof(double));
        all_store_sync();
        CHECK(big[209] == -9 - pv);
        bulk_write(far + 300, tmp, sizeof(double));
        barrier();
        CHECK(big[300] == -pv);
    }
    barrier();
    on_one printf("splitphase: ok on %d processors\n", PROCS);
}
