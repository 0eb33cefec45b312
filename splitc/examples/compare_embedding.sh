#!/bin/bash
# compare_embedding.sh -- times the Split-C 1.0 programs compiled by splitcc
# against the same programs written with the C++ embedding:
#   sample_sort.sc  vs  splitc/programs/sample_sort
#   em3d.sc         vs  splitc/programs/em3d   (variants read and get)
# Same options, 2 and 4 processes, runs interleaved (ours, C++, ours, C++,
# ...) so a change in machine load hits both sides alike.  Prints the median
# wall time of each side and the ratio, and the same for the time each
# program reports for its kernel (the sort; the EM3D iterations), which
# leaves out start-up and the self-checks.
#
# usage: splitc/examples/compare_embedding.sh [BUILD_DIR [ROUNDS]]
#        (BUILD_DIR default build, ROUNDS default 5)
set -eu
B=${1:-build}
ROUNDS=${2:-5}
RUN=$B/vipl/launcher/vipl-run
OURS_SS=$B/splitc/examples/sc_sample_sort
CPP_SS=$B/splitc/sample_sort
OURS_EM=$B/splitc/examples/sc_em3d
CPP_EM=$B/splitc/em3d
for f in "$RUN" "$OURS_SS" "$CPP_SS" "$OURS_EM" "$CPP_EM"; do
    [ -x "$f" ] || { echo "compare_embedding: $f not built" >&2; exit 2; }
done
SS_ARGS="--keys 20000 --oversample 16"
EM_ARGS="--nodes 256 --degree 8 --remote 0.2 --iters 10"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# run NAME SIDE P KERNEL_UNIT PROGRAM ARGS...: one timed run, appended to
# $TMP/NAME.SIDE.P.{wall,kernel}
run() {
    local name=$1 side=$2 p=$3 unit=$4
    shift 4
    local t0 t1 out
    t0=$(date +%s%N)
    out=$("$RUN" -n "$p" --timeout 300 "$@" 2>&1) || {
        echo "compare_embedding: failed: $RUN -n $p $*" >&2
        echo "$out" >&2
        exit 1
    }
    t1=$(date +%s%N)
    echo "$(( (t1 - t0) / 1000 ))" >>"$TMP/$name.$side.$p.wall"   # microseconds
    echo "$out" | sed -n "s|.* \([0-9.]*\) $unit.*|\1|p" | head -1 >>"$TMP/$name.$side.$p.kernel"
}

median() {
    sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

for r in $(seq 1 "$ROUNDS"); do
    for p in 2 4; do
        run sample_sort ours "$p" ms "$OURS_SS" $SS_ARGS
        run sample_sort cpp "$p" ms "$CPP_SS" $SS_ARGS
        for v in read get; do
            run "em3d-$v" ours "$p" us/iter "$OURS_EM" $EM_ARGS --variant "$v"
            run "em3d-$v" cpp "$p" us/iter "$CPP_EM" $EM_ARGS --variant "$v"
        done
    done
    echo "round $r of $ROUNDS done" >&2
done

echo "medians of $ROUNDS interleaved runs (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "sample_sort $SS_ARGS; em3d $EM_ARGS"
printf '%-12s %2s  %12s %12s %7s   %14s %14s %7s\n' program P "splitcc wall" "C++ wall" ratio \
    "splitcc kernel" "C++ kernel" ratio
for name in sample_sort em3d-read em3d-get; do
    unit=ms
    [ "$name" = sample_sort ] || unit=us/iter
    for p in 2 4; do
        ow=$(median "$TMP/$name.ours.$p.wall")
        cw=$(median "$TMP/$name.cpp.$p.wall")
        ok=$(median "$TMP/$name.ours.$p.kernel")
        ck=$(median "$TMP/$name.cpp.$p.kernel")
        awk -v n="$name" -v p="$p" -v ow="$ow" -v cw="$cw" -v ok="$ok" -v ck="$ck" -v u="$unit" 'BEGIN {
            printf "%-12s %2d  %9.1f ms %9.1f ms %7.2f   %9.1f %-4s %9.1f %-4s %7.2f\n",
                   n, p, ow / 1000, cw / 1000, ow / cw, ok, (u == "ms" ? "ms" : "us/i"), ck,
                   (u == "ms" ? "ms" : "us/i"), (ck > 0 ? ok / ck : 0) }'
    done
done
