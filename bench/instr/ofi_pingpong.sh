#!/bin/sh
# ofi_pingpong.sh OUT EP PORT N - one rank of libfabric-bin's fi_pingpong over
# the viastack provider (16-byte messages, N iterations) under callgrind, for
# count.sh --ofi; run by vipl-run -n 2: rank 0 serves, rank 1 connects to the
# first rank on this host ("localhost").  The profile goes to OUT.<rank>.out.
# The control connection is fi_pingpong's own TCP socket on PORT.
out=$1 ep=$2 port=$3 n=$4
cg="valgrind --tool=callgrind --dump-instr=no --callgrind-out-file=$out.$VIASTACK_RANK.out"
if [ "$VIASTACK_RANK" = 0 ]; then
    exec $cg fi_pingpong -p viastack -e "$ep" -B "$port" -I "$n" -S 16
fi
# Wait for the server's listening socket without connecting to it; the
# server starts under valgrind, hence the long wait.
"$(dirname "$0")/../../tools/wait-listen" "$port" 120 || exit 1
exec $cg fi_pingpong -p viastack -e "$ep" -P "$port" -I "$n" -S 16 localhost
