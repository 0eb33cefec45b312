#!/bin/sh
# run_mpi.sh MPIRUN OFI_DIR PROGRAM - a 2-rank MPI program over Open MPI's
# mtl:ofi on viastack;ofi_rxm (docs/mpi.md).  The ranks meet through PMIx;
# their nicfw wire is /dev/shm/viastack-pmix-<namespace>-wire, which the
# job's last vipl_boot_finalize removes: a file this run created that is
# still there after it (and that no process maps) fails the run, and is
# removed.
mpirun=$1 ofi=$2 prog=$3
list() { ls /dev/shm/ 2>/dev/null | grep '^viastack-pmix-' | sort; }
before=$(list)
"$mpirun" --allow-run-as-root --oversubscribe -n 2 -x FI_PROVIDER_PATH="$ofi" \
    --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include viastack "$prog"
rc=$?
for f in $(printf '%s\n%s\n%s\n' "$before" "$before" "$(list)" | sort | uniq -u); do
    grep -q -s -F "/dev/shm/$f" /proc/[0-9]*/maps && continue  # another job's, still running
    echo "run_mpi.sh: FAIL: the job left /dev/shm/$f behind" >&2
    rm -f "/dev/shm/$f"
    [ $rc -eq 0 ] && rc=1
done
exit $rc
