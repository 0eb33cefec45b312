#!/bin/sh
# run_mpi.sh MPIRUN OFI_DIR PROGRAM - a 2-rank MPI program over Open MPI's
# mtl:ofi on viastack;ofi_rxm (docs/mpi.md).  The ranks meet through PMIx;
# their nicfw wire is /dev/shm/viastack-pmix-<namespace>-*, which nobody
# removes for a PMIx job: the files this run created are removed here.
mpirun=$1 ofi=$2 prog=$3
before=$(ls /dev/shm/ 2>/dev/null | grep '^viastack-pmix-' | sort)
"$mpirun" --allow-run-as-root --oversubscribe -n 2 -x FI_PROVIDER_PATH="$ofi" \
    --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include viastack "$prog"
rc=$?
after=$(ls /dev/shm/ 2>/dev/null | grep '^viastack-pmix-' | sort)
for f in $(printf '%s\n%s\n' "$before" "$after" | sort | uniq -u); do rm -f "/dev/shm/$f"; done
exit $rc
