/* Global pointers: remote reads and writes of every scalar type, struct
 * members, structs copies, arithmetic, comparisons, conversions, compound
 * assignment and increments, all aimed at the next processor's static data. */
#include <split-c/split-c.h>
#include "check.h"

struct rec {
    char c;
    short s;
    int i;
    long l;
    float f;
    double d;
    int arr[4];
    int *global link;
    struct { int inner; } nested;
};
typedef struct rec rec_t;
typedef int *global gint;

char c_val; short s_val; int i_val; long l_val; long long ll_val; unsigned u_val;
float f_val; double d_val; char *p_val; int *global g_val;
int ints[16];
rec_t recs[3];

static int next() { return (MYPROC + 1) % PROCS; }

/* A function taking and returning global pointers; locals convert. */
int *global advance(int *global p, int n) { return p + n; }
int *global mine(int *p) { return p; }
int sum_remote(gint p, int n) { int s = 0; while (n-- > 0) s += *p++; return s; }

splitc_main(int argc, char **argv)
{
    int k, me = MYPROC, nb = next();
    int *global gi = toglobal(nb, &i_val);
    rec_t *global gr = toglobal(nb, &recs[1]);
    rec_t local_rec;

    c_val = 'a' + me; s_val = 1000 + me; i_val = 100000 + me; l_val = 10000000000L + me;
    ll_val = 20000000000LL + me; u_val = 3000000000u + me; f_val = 0.5f + me; d_val = 0.25 + me;
    p_val = (char *)0x1234 + me;
    for (k = 0; k < 16; k++) ints[k] = me * 100 + k;
    recs[1].c = 'x'; recs[1].s = 7; recs[1].i = me; recs[1].l = -5; recs[1].f = 1.5f; recs[1].d = 2.5;
    for (k = 0; k < 4; k++) recs[1].arr[k] = k * me;
    recs[1].link = toglobal(me, &ints[3]);
    recs[1].nested.inner = 42 + me;
    g_val = toglobal(me, &ints[5]);
    barrier();

    /* reads of every size and kind */
    CHECK(*(char *global)toglobal(nb, &c_val) == 'a' + nb);
    CHECK(*(short *global)toglobal(nb, &s_val) == 1000 + nb);
    CHECK(*gi == 100000 + nb);
    CHECK(*(long *global)toglobal(nb, &l_val) == 10000000000L + nb);
    CHECK(*(long long *global)toglobal(nb, &ll_val) == 20000000000LL + nb);
    CHECK(*(unsigned *global)toglobal(nb, &u_val) == 3000000000u + nb);
    CHECK(*(float *global)toglobal(nb, &f_val) == 0.5f + nb);
    CHECK(*(double *global)toglobal(nb, &d_val) == 0.25 + nb);
    CHECK(*(char **global)toglobal(nb, &p_val) == (char *)0x1234 + nb);
    CHECK(toproc(*(int *global *global)toglobal(nb, &g_val)) == nb);

    /* indexing and arithmetic */
    {
        int *global a = toglobal(nb, ints);
        int *global b = a + 10;
        CHECK(a[7] == nb * 100 + 7);
        CHECK(*(a + 2) == nb * 100 + 2);
        CHECK(3[a] == nb * 100 + 3);
        CHECK(b - a == 10);
        CHECK(b > a && a < b && a != b && !(a == b) && a <= a && b >= a);
        CHECK(advance(a, 4)[1] == nb * 100 + 5);
        CHECK(toproc(b) == nb && tolocal(b) == (void *)&ints[10]);
        b -= 3;
        CHECK(*b == nb * 100 + 7);
        b++;
        ++b;
        CHECK(*b-- == nb * 100 + 9);
        CHECK(*--b == nb * 100 + 7);
        CHECK(sum_remote(a, 4) == 4 * nb * 100 + 6);
    }
    /* null pointers and conditions */
    {
        int *global z = 0;
        int *global y = NULL;
        CHECK(!z && z == 0 && y == NULL && z == y);
        CHECK(gi && gi != 0);
        z = gi ? gi : z;
        CHECK(z == gi);
        z = (int *global)0;
        CHECK(!z);
        CHECK((me & 1 ? gi : (int *global)0) == (me & 1 ? gi : 0));
    }
    /* local -> global conversions, global -> local casts */
    {
        int *global m = mine(&ints[2]);
        int *global n2 = &ints[4];
        CHECK(toproc(m) == me && *m == me * 100 + 2 && *n2 == me * 100 + 4);
        CHECK((int *)m == &ints[2]);
        CHECK(is_local(m) && (PROCS == 1 || !is_local(gi)));
    }
    /* struct members through global pointers */
    CHECK(gr->c == 'x' && gr->s == 7 && gr->i == nb && gr->l == -5 && gr->f == 1.5f && gr->d == 2.5);
    CHECK(gr->arr[3] == 3 * nb && (*gr).arr[2] == 2 * nb);
    CHECK(gr->nested.inner == 42 + nb);
    CHECK(*gr->link == nb * 100 + 3);
    CHECK(gr->link[1] == nb * 100 + 4);
    /* struct copies */
    local_rec = *gr;
    CHECK(local_rec.i == nb && local_rec.arr[1] == nb && local_rec.nested.inner == 42 + nb);
    barrier();
    /* writes: plain, compound, increments; each processor writes its neighbour */
    *gi = 5;
    *gi += 10;
    *gi *= 3;
    *gi -= 1;
    (*gi)++;
    ++*gi;
    gr->arr[0] = 9;
    gr->arr[0] <<= 2;
    gr->arr[1] |= 0x100;
    gr->d /= 2;
    gr->nested.inner--;
    {
        int v = (*gi = 77) + 1;
        CHECK(v == 78);
        *gi = 46;
    }
    local_rec.i = 123;
    *(gr + 1) = local_rec;
    barrier();
    CHECK(i_val == 46);
    CHECK(recs[1].arr[0] == 36 && recs[1].arr[1] == (me | 0x100) && recs[1].d == 1.25 && recs[1].nested.inner == 41 + me);
    CHECK(recs[2].i == 123 && recs[2].nested.inner == 42 + me);
    barrier();
    on_one printf("global_ptr: ok on %d processors\n", PROCS);
}
