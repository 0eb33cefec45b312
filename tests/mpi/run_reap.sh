#!/usr/bin/env bash
# run_reap.sh NEXT_PROGRAM [run_viastack.sh] LAUNCHER... PROGRAM
# A PMIx job whose ranks are killed leaves no /dev/shm file behind once the
# next job starts (vipl_boot's PMIx backend reaps the files of dead jobs,
# docs/mpi.md "Jobs"):
#   1. `LAUNCHER... PROGRAM` (mpi_fault) runs under run_fault.sh, which kills
#      a rank with SIGKILL (mpirun then ends the others): the job's files stay;
#   2. after the reaper's age margin, `LAUNCHER... NEXT_PROGRAM` runs to its end;
#   3. none of the first job's viastack-pmix-* files may be left.
# run_viastack.sh (the tests' own clean-up) is dropped from the command line:
# it would remove the files itself.
set -u
next=$1; shift
[ "$(basename "$1")" = run_viastack.sh ] && shift
here=$(cd "$(dirname "$0")" && pwd)
list() { ls /dev/shm 2>/dev/null | grep '^viastack-pmix-' | sort; }
before=$(list)
"$here/run_fault.sh" 10 "$@" || { echo "run_reap: FAIL: the killed job did not end as run_fault.sh expects" >&2; exit 1; }
left=$(comm -13 <(printf '%s\n' "$before") <(list))
echo "run_reap: files of the killed job: ${left:-none}"
sleep 6
launcher=("${@:1:$#-1}")
"${launcher[@]}" "$next" >/dev/null || { echo "run_reap: FAIL: the next job ($next) failed" >&2; exit 1; }
stale=""
for f in $left; do [ -e "/dev/shm/$f" ] && stale="$stale $f"; done
[ -z "$stale" ] || { echo "run_reap: FAIL: left behind after the next job:$stale" >&2; exit 1; }
echo "run_reap: the killed job's files are gone"
