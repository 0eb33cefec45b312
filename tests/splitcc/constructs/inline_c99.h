/* inline_c99.h - plain `inline` functions without a non-inline declaration:
 * in gnu89 an external definition in inline_fns.sc; in gnu99/gnu11 a C99
 * inline definition there, whose external definition inline_other.sc makes
 * (it declares them `extern` before including this). */
inline int c99_read_spread(int *spread s, int k) { return s[k]; }
inline void c99_put_d(int p, int k, double v)
{
    *(double *global)toglobal(p, &dcell2[k]) := v;
    sync();
}
