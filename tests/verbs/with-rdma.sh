#!/bin/sh
# with-rdma.sh - runs a verbs test: `with-rdma.sh COMMAND...`
#
# Sets VIPL_PROVIDER=verbs and runs COMMAND.  On a host with no RDMA device the
# test is skipped (exit 77, ctest's SKIP_RETURN_CODE) with a hint, so a plain
# `ctest` on a development machine stays green; inside the soft-RoCE guest
# (RXE_GUEST=1, see tools/rxe-run) a missing device is a failure, never a skip.
if ! ls /sys/class/infiniband/ 2>/dev/null | grep -q .; then
    if [ "${RXE_GUEST:-0}" = 1 ]; then
        echo "with-rdma.sh: FAIL: no RDMA device in the rxe guest" >&2
        exit 1
    fi
    echo "with-rdma.sh: SKIP: no RDMA device on this host; run under soft-RoCE:" \
         "tools/rxe-run ctest -L verbs (docs/rxe.md)" >&2
    exit 77
fi
VIPL_PROVIDER=verbs
export VIPL_PROVIDER
exec "$@"
