#!/usr/bin/env bash
# run_netpipe.sh sweep|integrity UPPER LAUNCHER... NPMPI
# Runs NetPIPE's MPI module (Debian's netpipe-openmpi, NPmpi/NPopenmpi),
# unchanged, on 2 ranks through LAUNCHER (an mpirun command line), from
# 1 byte up to UPPER bytes with 10 repeats per size (NetPIPE adds sizes 3
# bytes either side of each step), and checks the run:
#   sweep      the bandwidth sweep: every size up to UPPER was measured (the
#              np.out table is complete, each line a positive rate) and the
#              job exited 0;
#   integrity  NetPIPE's -i mode, which checks the received data instead of
#              timing it: every size reports "Integrity check passed", none
#              fails, and the sizes reach at least UPPER/2.
set -u
mode=$1 upper=$2; shift 2
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fail() { echo "run_netpipe: FAIL ($mode): $*" >&2; echo "--- NetPIPE output:" >&2; tail -40 "$dir/log" >&2; exit 1; }

case $mode in
    sweep)     opts=(-u "$upper" -n 10 -o "$dir/np.out") ;;
    integrity) opts=(-u "$upper" -n 3 -i -o "$dir/np.out") ;;
    *) echo "run_netpipe: mode must be sweep or integrity, not '$mode'" >&2; exit 2 ;;
esac
"$@" "${opts[@]}" >"$dir/log" 2>&1
status=$?
[ $status -eq 0 ] || fail "the job exited with status $status"
grep -q -i -E 'fail|error|abort' "$dir/log" && fail "NetPIPE reported an error"
# The progress lines "N: SIZE bytes R times --> ..." number the sizes from 0.
points=$(grep -c -E '^ *[0-9]+: +[0-9]+ bytes' "$dir/log")
last=$(grep -E '^ *[0-9]+: +[0-9]+ bytes' "$dir/log" | tail -1 | awk '{print $2}')
[ "$points" -gt 20 ] || fail "only $points message sizes were run"

if [ "$mode" = sweep ]; then
    [ -s "$dir/np.out" ] || fail "no np.out table"
    rows=$(wc -l <"$dir/np.out")
    [ "$rows" -eq "$points" ] || fail "np.out has $rows rows for $points sizes run"
    awk -v u="$upper" '$1 == u {found = 1} $2 + 0 <= 0 {bad = NR} END {exit !(found && !bad)}' \
        "$dir/np.out" || fail "np.out lacks the size $upper or has a non-positive rate"
    echo "run_netpipe: sweep of $points sizes, 1 to $last bytes, complete"
    awk -v u="$upper" '$1 == 1 || $1 == 1024 || $1 == 65536 || $1 == u \
        {printf "run_netpipe: %9d bytes %10.1f Mbps %10.2f us one way\n", $1, $2, $3 * 1e6}' "$dir/np.out"
else
    passed=$(grep -c 'Integrity check passed' "$dir/log")
    [ "$passed" -eq "$points" ] || fail "$passed of $points sizes passed the integrity check"
    [ "$last" -ge $((upper / 2)) ] || fail "the integrity run stopped at $last bytes"
    echo "run_netpipe: integrity check passed at all $points sizes, 1 to $last bytes"
fi
