/* inline_fns.sc - a program's own inline functions (plain `inline` with and without a
 * non-inline declaration, GNU/C99 `extern inline`, `static inline`) doing every kind of global access: read,
 * write, get (:=), put (:=), store (:-), the bulk variants, struct copies,
 * spread pointers.  Built with -Wall -Werror as -std=gnu89, gnu99 and gnu11
 * (tests/splitcc/CMakeLists.txt): the runtime header's own inline functions
 * must not draw "static but used in inline function which is not static".
 * Some functions are also called through pointers, so their out-of-line
 * copies run too.  Self-checking on any number of processors. */
#include <string.h>
#include "inline_common.h"
#include "check.h"

int cell[8];
double dcell[8];
double dcell2[8];
struct rec recs[4];
int S[PROCS]::;

#include "inline_ext.h"
#include "inline_c99.h"

/* Plain `inline` with a prototype that is not inline: an external definition
 * in gnu89 and in C99 alike. */
int plain_write(int p, int i, int v);
inline int plain_write(int p, int i, int v) { *(int *global)toglobal(p, &cell[i]) = v; return v; }
int plain_get(int p, int i);
inline int plain_get(int p, int i)
{
    int t;
    t := *(int *global)toglobal(p, &cell[i]);
    sync();
    return t;
}
void plain_bulk(int p);
inline void plain_bulk(int p)
{
    double tmp[8];
    bulk_get(tmp, (double *global)toglobal(p, dcell), sizeof tmp);
    sync();
    bulk_put((double *global)toglobal(p, dcell2), tmp, sizeof tmp);
    sync();
}

static inline void st_put(int p, int i, int v)
{
    *(int *global)toglobal(p, &cell[i]) := v;
    sync();
}
static inline void st_add(int p, int i, int v) { *(int *global)toglobal(p, &cell[i]) += v; }
static inline void st_bulk_write(int p, const double *src) { bulk_write((double *global)toglobal(p, dcell2), src, 4 * sizeof(double)); }
static inline void st_bulk_store(int p, const double *src) { bulk_store((double *global)toglobal(p, dcell2 + 4), src, 4 * sizeof(double)); }
static inline struct rec st_rec_read(int p) { struct rec *global r = (struct rec *global)toglobal(p, recs); return r[0]; }
static inline void st_rec_write(int p, struct rec v) { ((struct rec *global)toglobal(p, recs))[1] = v; }
static inline int st_sum_spread(int *spread s, int n)
{
    int k, t = 0;
    for (k = 0; k < n; k++)
        t += s[k];
    return t;
}

int splitc_main(int argc, char **argv)
{
    int me = MYPROC, nb = (MYPROC + 1) % PROCS, pv = (MYPROC + PROCS - 1) % PROCS, k;
    int (*read_fn)(int, int) = ext_read;
    int (*write_fn)(int, int, int) = plain_write;
    int (*spread_fn)(int *spread, int) = c99_read_spread;
    double buf[8], src[4];
    struct rec r;

    (void)argc; (void)argv;
    for (k = 0; k < 8; k++) { cell[k] = me * 100 + k; dcell[k] = me + k * 0.5; dcell2[k] = -1; }
    recs[0].a = me; recs[0].b = me * 2.5; strcpy(recs[0].tag, "rec");
    barrier();

    CHECK(ext_read(nb, 3) == nb * 100 + 3 && read_fn(pv, 4) == pv * 100 + 4);
    CHECK(plain_get(nb, 2) == nb * 100 + 2);
    CHECK(ext_read_d(nb, 3) == nb + 1.5);
    ext_bulk_read(nb, buf);
    for (k = 0; k < 8; k++) CHECK(buf[k] == nb + k * 0.5);
    r = st_rec_read(nb);
    CHECK(r.a == nb && r.b == nb * 2.5 && strcmp(r.tag, "rec") == 0);
    barrier();

    plain_write(nb, 5, 500 + me);
    write_fn(nb, 0, 1000 + me);
    st_put(nb, 6, 600 + me);
    ext_store(nb, 7, 700 + me);
    all_store_sync();
    st_add(nb, 1, 10);
    r.a = -me; st_rec_write(nb, r);
    barrier();
    CHECK(cell[5] == 500 + pv && cell[0] == 1000 + pv && cell[6] == 600 + pv && cell[7] == 700 + pv);
    CHECK(cell[1] == me * 100 + 1 + 10 && recs[1].a == -pv && recs[1].b == me * 2.5);
    barrier();

    plain_bulk(nb);               /* nb's dcell into nb's dcell2 */
    barrier();
    for (k = 0; k < 8; k++) CHECK(dcell2[k] == me + k * 0.5);
    barrier();
    for (k = 0; k < 4; k++) src[k] = me * 10 + k;
    st_bulk_write(nb, src);
    st_bulk_store(nb, src);
    all_store_sync();
    barrier();
    for (k = 0; k < 4; k++) CHECK(dcell2[k] == pv * 10 + k && dcell2[4 + k] == pv * 10 + k);
    barrier();

    ext_spread_set(&S[0], me, me * 7);
    barrier();
    CHECK(st_sum_spread(&S[0], PROCS) == 7 * PROCS * (PROCS - 1) / 2);
    CHECK(c99_read_spread(&S[0], pv) == pv * 7 && spread_fn(&S[0], nb) == nb * 7);
    c99_put_d(nb, 0, 0.25 + me);
    barrier();
    CHECK(dcell2[0] == 0.25 + pv);
    barrier();
    on_one { printf("inline_fns: %d processors, checks passed\n", PROCS); }
    return 0;
}
