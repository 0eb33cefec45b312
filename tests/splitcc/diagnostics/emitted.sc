/* What remote accesses become: one call of the runtime's size-specific entry
 * point (an inline fast path when the data is local), with no allocation and
 * no lookup on the way.  Each "emits:" text must appear in the C output. */
#include <split-c/split-c.h>

int sum(int *global p, int n)
{
    int s = 0, i;
    for (i = 0; i < n; i++) s += p[i];   /* emits: s += ((int)splitc_read_4(splitc_gptr_add(p, (int64_t)(i) * (int64_t)sizeof(int)))) */
    return s;
}
void put(double *global d, double v) { *d := v; }      /* emits: splitc_put_d(d, v) */
void store(int *global d, int v) { *d :- v; }          /* emits: splitc_store_4(d, (uint32_t)(v)) */
void get(int *global d, int *v) { *v := *d; }          /* emits: splitc_get_4(&((*v)), d) */
void bump(long *global d) { *d += 2; }                 /* emits: splitc_write_8(__sc_g1, (uint64_t)(__sc_v2)) */
int spread_elem(int *spread s, int i) { return s[i]; } /* emits: splitc_sptr_add(s, (int64_t)(i), sizeof(int)) */
/* no-emits: malloc( */
/* no-emits: calloc( */
