#!/usr/bin/env bash
# run_viastack.sh LAUNCHER... - runs an mpirun command line of the viastack
# selection and then removes the nicfw wire files its PMIx job left in
# /dev/shm (viastack-pmix-<namespace>-*: the ranks of a PMIx job do not know
# when the last of them is done with them).  Only files that appeared during
# this run and that no process still maps are removed, so a job running
# beside this one keeps its own.  Exits with the launcher's status.
list() { ls /dev/shm 2>/dev/null | grep '^viastack-pmix-' | sort; }
before=$(list)
"$@"
status=$?
for f in $(comm -13 <(printf '%s\n' "$before") <(list)); do
    grep -q -s -F "/dev/shm/$f" /proc/[0-9]*/maps || rm -f "/dev/shm/$f"
done
exit $status
