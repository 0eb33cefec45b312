#!/usr/bin/env bash
# translate_bench.sh - how long splitcc takes to translate a large Split-C
# program.  Generates a program of about --lines lines (distinct functions that
# use global and spread pointers, spread arrays, split-phase assignment and
# stores), then runs `splitcc --emit-c -v` --runs times and prints, per run,
# the translation time splitcc reports (lexing, parsing with types, emitting)
# and the wall time of the whole command (which adds the C preprocessor), and
# the medians.
# With --compile the translated C is also compiled (-O0), to show it is valid.
#   translate_bench.sh [--splitcc PATH] [--lines N] [--runs R] [--work DIR] [--compile]
set -euo pipefail
splitcc=build/splitcc/splitcc
lines=30000
runs=5
compile=0
work=$(mktemp -d)
while [ $# -gt 0 ]; do
  case "$1" in
    --splitcc) splitcc=$2; shift 2 ;;
    --lines) lines=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --compile) compile=1; shift ;;
    *) echo "translate_bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$work"
src=$work/large.sc
{
  echo '#include <stdio.h>'
  echo '#include <split-c/split-c.h>'
  echo 'struct particle { double x, y, vx, vy; int owner; };'
  echo 'double field[PROCS]::[64];'
  n=0
  i=0
  while [ "$n" -lt "$lines" ]; do
    block=$(cat <<SC
/* block $i */
static double relax_$i(double *global g, int n, struct particle *global p)
{
    double sum = 0.0, t;
    int k;
    for (k = 0; k < n; k++) {
        t := g[k];
        sync();
        sum += t * 0.5 + field[(MYPROC + k) % PROCS][k % 64];
        if (k & 1)
            g[k] :- sum;
        else
            g[k] = sum / (k + 1);
    }
    p->x += p->vx;
    p->y = p->y + p->vy;
    all_store_sync();
    return sum;
}
int step_$i(int iters)
{
    int it, hits = 0;
    double *spread s = &field[0][0];
    struct particle *global me;
    for (it = 0; it < iters; it++) {
        double v = *(s + it);
        if (v > 0.5) hits++;
    }
    me = (struct particle *global) 0;
    return me ? hits : hits + 1;
}
SC
)
    printf '%s\n' "$block"
    n=$((n + $(printf '%s\n' "$block" | wc -l)))
    i=$((i + 1))
  done
  echo 'splitc_main(int argc, char **argv) { return 0; }'
} > "$src"
echo "translate_bench: $(wc -l < "$src") lines in $src"
trans=()
walls=()
for r in $(seq 1 "$runs"); do
  t0=$(date +%s%N)
  msg=$("$splitcc" --emit-c -v -o "$work/large.c" "$src" 2>&1 >/dev/null | grep 'translated' || true)
  t1=$(date +%s%N)
  ms=$(echo "$msg" | sed -n 's/.* in \([0-9.]*\) ms/\1/p')
  [ -n "$ms" ] || { echo "translate_bench: splitcc failed"; "$splitcc" --emit-c -o "$work/large.c" "$src"; exit 1; }
  wall=$(( (t1 - t0) / 1000000 ))
  echo "run $r: translation ${ms} ms, whole command ${wall} ms"
  trans+=("$ms")
  walls+=("$wall")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "translate_bench: median translation $(median "${trans[@]}") ms, median whole command $(median "${walls[@]}") ms over $runs run(s)"
if [ "$compile" = 1 ]; then
  "$splitcc" -c -O0 -w -o "$work/large.o" "$src"
  echo "translate_bench: the translated program compiles ($(stat -c %s "$work/large.o") bytes of object code)"
fi
