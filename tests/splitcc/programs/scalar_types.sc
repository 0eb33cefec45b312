/* scalar_types.sc - every kind of scalar through spread arrays and global
 * pointers: a typedef'd array as the element (row_t R[PROCS]::), long
 * double (16 bytes, moved like a struct, also with := ), enums, long long,
 * unsigned char wrapping under +=, function pointers stored remotely and
 * called locally, a string walked through a char *global, conversions
 * int->double/float and double->long on =, := and :-, and the 1990s
 * spellings 'x = y ? 3 :-1' and 'case 1:-x'.  Exits non-zero on a
 * mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <split-c/split-c.h>
typedef double row_t[4];
row_t R[PROCS]::;
long double LD[PROCS]::;
enum color { RED, GREEN = 5, BLUE };
enum color E[PROCS]::;
long long LL[PROCS]::;
unsigned char UC[PROCS]::;
int (*FP[PROCS]::)(int);
char str[32];
int A[PROCS]::[6];
double D[PROCS]::[4];
float F[PROCS]::;
long L[PROCS]::;
char C[PROCS]::;
static int errors;
#define EXPECT(c) do { if (!(c)) { if (errors++ < 20) fprintf(stderr, "processor %d: line %d: %s\n", MYPROC, __LINE__, #c); } } while (0)
/* Conversions on =, := (put) and :- between the value's type and the target's. */
static void conversions(void)
{
    int r = (MYPROC + 1) % PROCS, i = 3;
    double *global dg = &D[r][0];
    double loc[4], *lp = loc;
    long lv = 5;
    float fv = 2.5f;
    barrier();
    dg[0] = 1;          /* int -> double */
    dg[1] := 2; sync();
    dg[2] = lv;
    dg[3] = fv;
    barrier();
    EXPECT(D[MYPROC][0] == 1.0 && D[MYPROC][1] == 2.0 && D[MYPROC][2] == 5.0 && D[MYPROC][3] == 2.5);
    barrier();
    dg[0] :- i;
    dg[1] :- fv;
    F[r] :- 7;
    L[r] :- 3.9;
    C[r] :- 300 + MYPROC;
    all_store_sync();
    EXPECT(D[MYPROC][0] == 3.0 && D[MYPROC][1] == 2.5 && F[MYPROC] == 7.0f && L[MYPROC] == 3 && C[MYPROC] == (char)(300 + (MYPROC + PROCS - 1) % PROCS));
    barrier();
    F[r] = i; L[r] = 2.5; C[r] = 65;
    barrier();
    EXPECT(F[MYPROC] == 3.0f && L[MYPROC] == 2 && C[MYPROC] == 'A');
    lp[1] := dg[2]; *lp := *dg; sync();
    EXPECT(loc[1] == 5.0 && loc[0] == 3.0);
    {
        float x; long k; char ll;
        x := F[r];  k := L[r]; ll := C[r]; sync();
        EXPECT(x == 3.0 && k == 2 && ll == 65);
        F[r] := x + 1; sync();
        EXPECT(F[r] == 4.0f);
    }
    barrier();
}

int twice(int x) { return 2 * x; }
splitc_main(int argc, char **argv)
{
    int r = (MYPROC + 1) % PROCS, i, j, x, y;
    char *global s;
    int *global g;
    for (i = 0; i < 4; i++) R[MYPROC][i] = MYPROC + i / 4.0;
    LD[MYPROC] = 1.0L / 3 + MYPROC;
    E[MYPROC] = BLUE;
    LL[MYPROC] = (1LL << 50) + MYPROC;
    UC[MYPROC] = 250;
    FP[MYPROC] = twice;
    sprintf(str, "proc%d", MYPROC);
    for (j = 0; j < 6; j++) A[MYPROC][j] = 0;
    barrier();
    EXPECT(sizeof R[0] == 4 * sizeof(double) && sizeof(A[0][0]) == sizeof(int));
    EXPECT(R[r][3] == r + 0.75);
    EXPECT(LD[r] == 1.0L / 3 + r);
    EXPECT(E[r] == BLUE && LL[r] == (1LL << 50) + r);
    EXPECT((*FP[r])(21) == 42 && FP[r](4) == 8);
    s = toglobal(r, str);
    x = 0;
    while (*s) { s++; x++; }
    EXPECT(x == (int)strlen("proc") + (r >= 10 ? 2 : 1));
    g = toglobal(r, &x);
    if (MYPROC == 0) x := A[r][1]; else x := A[r][2];
    sync();
    EXPECT(x == 0);
    barrier();
    i = 0;
    A[r][i++] :- 7;
    EXPECT(i == 1);
    for (j = 1; j < 6; j++) A[r][j] :- j, x = j;
    all_store_sync();
    for (j = 0; j < 6; j++) EXPECT(A[MYPROC][j] == (j ? j : 7));
    y = 1;
    x = y ? 3 :-1;
    EXPECT(x == 3);
    switch (y) { case 1:-x; break; default: errors++; }
    barrier();
    on_one { UC[r] += 10; }
    barrier();
    on_one EXPECT(UC[r] == (unsigned char)260);
    {
        long double ld;
        ld := LD[r]; sync();
        EXPECT(ld == 1.0L / 3 + r);
        LD[r] := ld * 2; sync();
        EXPECT(LD[r] == (1.0L / 3 + r) * 2);
    }
    barrier();
    conversions();
    errors = all_reduce_to_all_add(errors);
    on_one printf("scalar_types: %d errors\n", errors);
    barrier();
    if (errors) exit(1);
}
