#!/usr/bin/env bash
# run_fault.sh BOUND_SECONDS LAUNCHER... PROGRAM
# Runs `LAUNCHER... PROGRAM` (an mpirun command line and mpi_fault), waits
# until every rank has printed "mpi_fault: rank R pid P", kills the last rank
# with SIGKILL and checks that
#   - within BOUND_SECONDS of the kill the launcher and every rank are gone;
#   - the launcher's exit status is non-zero.
set -u
bound=$1; shift
out=$(mktemp); trap 'rm -f "$out"' EXIT
fail() { echo "run_fault: FAIL: $*" >&2; echo "--- job output:" >&2; cat "$out" >&2; exit 1; }

"$@" >"$out" 2>&1 &
job=$!

# Ends a job that overran: SIGTERM first, so mpirun tears the job down and
# removes its shared memory; SIGKILL whatever is left 5 s later.
stop_job() {
    kill -TERM "$job" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$job" $pids 2>/dev/null
}

# The ranks print their pid after a warm-up; allow 60 s for start-up.
expected=$(printf '%s\n' "$@" | awk 'prev=="-n" || prev=="-np" {print; exit} {prev=$0}')
[ -n "$expected" ] || fail "the launcher command has no -n N"
nranks=0
for _ in $(seq 600); do
    nranks=$(grep -c '^mpi_fault: rank [0-9]* pid [0-9]*$' "$out")
    [ "$nranks" -ge "$expected" ] && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
done
if ! kill -0 "$job" 2>/dev/null; then
    wait "$job"
    fail "the job ended (status $?) before a rank was killed"
fi
pids=""
[ "$nranks" -ge "$expected" ] || { stop_job; fail "only $nranks of $expected ranks reported their pid within 60 s"; }
pids=$(sed -n 's/^mpi_fault: rank [0-9]* pid \([0-9]*\)$/\1/p' "$out")
victim_rank=$(sed -n 's/^mpi_fault: rank \([0-9]*\) pid [0-9]*$/\1/p' "$out" | sort -n | tail -1)
victim=$(sed -n "s/^mpi_fault: rank $victim_rank pid \([0-9]*\)\$/\1/p" "$out")

t0=$(date +%s.%N)
kill -9 "$victim" || fail "could not kill rank $victim_rank (pid $victim)"
echo "run_fault: killed rank $victim_rank (pid $victim) of $nranks with SIGKILL"

# A process counts as gone once it no longer exists or is a zombie (dead,
# waiting to be reaped by whoever inherited it).
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ "$st" != Z ]; }

# The job has ended when the launcher and every rank are gone: wait for that,
# at most BOUND_SECONDS.
ended=0 left=" launcher"
deadline=$(echo "$t0 + $bound" | bc)
while [ "$(echo "$(date +%s.%N) < $deadline" | bc)" = 1 ]; do
    left=""
    alive "$job" && left=" launcher"
    for p in $pids; do alive "$p" && left="$left $p"; done
    if [ -z "$left" ]; then ended=1; break; fi
    sleep 0.05
done
t1=$(date +%s.%N)
if [ $ended = 0 ]; then
    stop_job
    fail "still running $bound s after the kill:$left"
fi
wait "$job"; status=$?
elapsed=$(echo "$t1 - $t0" | bc)
[ "$status" -ne 0 ] || fail "the launcher exited with status 0 although a rank was killed"
printf 'run_fault: the job (launcher and %d ranks) ended %.2f s after the kill (status %d, bound %s s)\n' \
    "$nranks" "$elapsed" "$status" "$bound"
