/* matmul.sc - blocked matrix multiply C = A x B after the example of
 * "Parallel Programming in Split-C": the matrices are spread arrays of b x b
 * blocks, X[n][m]::[b][b], passed to a function with run-time extents; each
 * processor computes the blocks of C it owns (for_my_2d), fetching the
 * blocks of A and B it needs with bulk_get and sync().  Checked against a
 * serial product on every processor.  Exits non-zero on a mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <split-c/split-c.h>
#include <split-c/control.h>

double aval(int r, int c) { return ((r * 3 + c * 5) % 7) - 3.0; }
double bval(int r, int c) { return ((r * 2 + c) % 5) * 0.25; }

void matrix_mult(int n, int r, int m, int b,
                 double C[n][m]::[b][b], double A[n][r]::[b][b], double B[r][m]::[b][b])
{
    int i, j, k, i2, j2, k2;
    double *la = malloc(b * b * sizeof(double)), *lb = malloc(b * b * sizeof(double));

    for_my_2d(i, j, n, m) {
        double *lc = (double *)&C[i][j][0][0];      /* my block: local */
        for (i2 = 0; i2 < b * b; i2++)
            lc[i2] = 0.0;
        for (k = 0; k < r; k++) {
            bulk_get(la, &A[i][k][0][0], b * b * sizeof(double));
            bulk_get(lb, &B[k][j][0][0], b * b * sizeof(double));
            sync();
            for (i2 = 0; i2 < b; i2++)
                for (j2 = 0; j2 < b; j2++)
                    for (k2 = 0; k2 < b; k2++)
                        lc[i2 * b + j2] += la[i2 * b + k2] * lb[k2 * b + j2];
        }
    }
    free(la);
    free(lb);
    barrier();
}

void fill(int n, int m, int b, double X[n][m]::[b][b], double (*f)(int, int))
{
    int i, j, i2, j2;
    for_my_2d(i, j, n, m)
        for (i2 = 0; i2 < b; i2++)
            for (j2 = 0; j2 < b; j2++)
                X[i][j][i2][j2] = f(i * b + i2, j * b + j2);
    barrier();
}

int check(int n, int r, int m, int b, double C[n][m]::[b][b])
{
    int i, j, k, errors = 0;
    /* every processor reads all of C, most of it remote, element by element */
    for (i = 0; i < n * b; i++)
        for (j = 0; j < m * b; j++) {
            double s = 0.0, c = C[i / b][j / b][i % b][j % b];
            for (k = 0; k < r * b; k++)
                s += aval(i, k) * bval(k, j);
            if (fabs(s - c) > 1e-9 && errors++ < 5)
                fprintf(stderr, "processor %d: C[%d][%d] = %g, serial %g\n", MYPROC, i, j, c, s);
        }
    return errors;
}

splitc_main(int argc, char **argv)
{
    int n = 3, r = 4, m = 5, b = 4, errors;
    double A[n][r]::[b][b];
    double B[r][m]::[b][b];
    double C[n][m]::[b][b];

    fill(n, r, b, A, aval);
    fill(r, m, b, B, bval);
    matrix_mult(n, r, m, b, C, A, B);
    errors = check(n, r, m, b, C);
    errors = all_reduce_to_all_add(errors);
    on_one printf("matmul: %dx%d times %dx%d in %dx%d blocks, C[0][0] = %g, %d errors\n",
                  n * b, r * b, r * b, m * b, b, b, C[0][0][0][0], errors);
    barrier();
    if (errors)
        exit(1);
}
