/* stencil.sc - 1-D three-point Jacobi relaxation on a blocked spread array
 * u[PROCS]::[M]: each processor owns one block of M points and fetches its
 * two ghost cells from the neighbours' blocks with split-phase reads
 * (:=, sync()) through global pointers, overlapping them with the interior
 * update.  At the end processor 0 gathers every block with bulk_read and
 * compares with a serial relaxation.  Exits non-zero on a mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <split-c/split-c.h>

#define M 64
#define STEPS 40

double u[PROCS]::[M];
double unew[PROCS]::[M];

double init(i)
     int i;
{
    return (i % 11) * 1.5 - (i % 3);
}

void relax(double *global g, double *mine, double *out, int n)
{
    double left = 0.0, right = 0.0;     /* fixed boundary 0 at both ends */
    double *global lg, *global rg;
    int j;

    if (MYPROC > 0) {
        lg = &u[MYPROC - 1][M - 1];
        left := *lg;
    }
    if (MYPROC < PROCS - 1) {
        rg = g + M;                 /* global pointer arithmetic keeps the processor */
        if (toproc(rg) != MYPROC || (double *)tolocal(rg) != mine + M) {
            fprintf(stderr, "processor %d: g + M moved to processor %d\n", MYPROC, toproc(rg));
            exit(1);
        }
        rg = toglobal(MYPROC + 1, tolocal(g));  /* same address on the right neighbour */
        right := *rg;
    }
    for (j = 1; j < n - 1; j++)     /* interior while the ghosts travel */
        out[j] = (mine[j - 1] + mine[j] + mine[j + 1]) / 3.0;
    sync();
    out[0] = (left + mine[0] + mine[1]) / 3.0;
    out[n - 1] = (mine[n - 2] + mine[n - 1] + right) / 3.0;
}

splitc_main(int argc, char **argv)
{
    double *mine = (double *)&u[MYPROC][0];
    double *out = (double *)&unew[MYPROC][0];
    double *global g = &u[MYPROC][0];
    int j, t, n = M * PROCS, errors = 0;

    if (toproc(g) != MYPROC || !is_local(g) || tolocal(g) != (void *)mine) {
        fprintf(stderr, "processor %d: &u[MYPROC][0] is not local\n", MYPROC);
        exit(1);
    }
    for (j = 0; j < M; j++)
        mine[j] = init(MYPROC * M + j);
    barrier();
    for (t = 0; t < STEPS; t++) {
        relax(g, mine, out, M);
        barrier();                  /* everyone has read my old values */
        for (j = 0; j < M; j++)
            mine[j] = out[j];
        barrier();
    }

    on_one {
        double *all = malloc(n * sizeof(double)), *a = malloc(n * sizeof(double)),
               *b = malloc(n * sizeof(double)), *tmp;
        int p;
        for (p = 0; p < PROCS; p++)
            bulk_read(all + p * M, &u[p][0], M * sizeof(double));
        for (j = 0; j < n; j++)
            a[j] = init(j);
        for (t = 0; t < STEPS; t++) {
            for (j = 0; j < n; j++)
                b[j] = ((j > 0 ? a[j - 1] : 0.0) + a[j] + (j < n - 1 ? a[j + 1] : 0.0)) / 3.0;
            tmp = a; a = b; b = tmp;
        }
        for (j = 0; j < n; j++)
            if (fabs(all[j] - a[j]) > 1e-12) {
                if (errors++ < 5)
                    fprintf(stderr, "u[%d] = %.17g, serial %.17g\n", j, all[j], a[j]);
            }
        printf("stencil: %d points, %d steps, u[%d] = %.6f, %d errors\n", n, STEPS, n / 2, all[n / 2], errors);
        free(all);
        free(a);
        free(b);
    }
    if (all_reduce_to_all_add(errors))
        exit(1);
}
