#!/usr/bin/env bash
# run_netpipe.sh sweep|integrity UPPER [--repeats N] LAUNCHER... NPMPI
# Runs NetPIPE's MPI module (Debian's netpipe-openmpi, NPmpi/NPopenmpi),
# unchanged, on 2 ranks through LAUNCHER (an mpirun command line), from
# 1 byte up to UPPER bytes with N repeats per size (default 10 for the
# sweep, 3 for the integrity run; NetPIPE adds sizes 3 bytes either side of
# each step), and checks the run:
#   sweep      the bandwidth sweep: every size up to UPPER was measured (the
#              np.out table has every power of two up to UPPER, each at a
#              positive rate) and the job exited 0;
#   integrity  NetPIPE's -i mode, which checks the received data instead of
#              timing it: every size reports "Integrity check passed", none
#              fails, and the sizes reach at least UPPER/2.
set -u
mode=$1 upper=$2; shift 2
repeats=
if [ "${1:-}" = --repeats ]; then
    repeats=${2:-}; shift 2
    case $repeats in ''|*[!0-9]*|0) echo "run_netpipe: --repeats takes a positive integer, not '$repeats'" >&2; exit 2 ;; esac
fi
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fail() { echo "run_netpipe: FAIL ($mode): $*" >&2; echo "--- NetPIPE output:" >&2; tail -40 "$dir/log" >&2; exit 1; }

case $mode in
    sweep)     opts=(-u "$upper" -n "${repeats:-10}" -o "$dir/np.out") ;;
    integrity) opts=(-u "$upper" -n "${repeats:-3}" -i -o "$dir/np.out") ;;
    *) echo "run_netpipe: mode must be sweep or integrity, not '$mode'" >&2; exit 2 ;;
esac
"$@" "${opts[@]}" >"$dir/log" 2>&1
status=$?
[ $status -eq 0 ] || fail "the job exited with status $status"
grep -q -i -E 'fail|error|abort' "$dir/log" && fail "NetPIPE reported an error"
# np.out, written by rank 0 alone, has one row per size: "SIZE MBPS SECONDS"
# for the sweep, "SIZE REPEATS" for the integrity run.  (The progress lines on
# stdout can be interleaved with the other rank's start-up messages.)
[ -s "$dir/np.out" ] || fail "no np.out table"
rows=$(wc -l <"$dir/np.out")
last=$(tail -1 "$dir/np.out" | awk '{print $1}')
awk 'NR > 1 && $1 <= prev {exit 1} {prev = $1}' "$dir/np.out" || fail "np.out sizes do not increase"

if [ "$mode" = sweep ]; then
    # Complete: every power of two from 1 to UPPER was measured, at a positive rate.
    awk -v u="$upper" '$2 + 0 <= 0 {exit 1} {have[$1] = 1}
        END {for (s = 1; s <= u; s *= 2) if (!(s in have)) exit 1}' "$dir/np.out" ||
        fail "np.out lacks a power of two up to $upper or has a non-positive rate"
    echo "run_netpipe: sweep of $rows sizes, 1 to $last bytes, complete"
    awk -v u="$upper" '$1 == 1 || $1 == 1024 || $1 == 65536 || $1 == u \
        {printf "run_netpipe: %9d bytes %10.1f Mbps %10.2f us one way\n", $1, $2, $3 * 1e6}' "$dir/np.out"
else
    passed=$(grep -o 'Integrity check passed' "$dir/log" | wc -l)
    [ "$passed" -eq "$rows" ] || fail "$passed of $rows sizes passed the integrity check"
    [ "$last" -ge $((upper / 2)) ] || fail "the integrity run stopped at $last bytes"
    first=$(head -1 "$dir/np.out" | awk '{print $1}')
    echo "run_netpipe: integrity check passed at all $rows sizes, $first to $last bytes"
fi
