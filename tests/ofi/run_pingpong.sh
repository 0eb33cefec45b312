#!/bin/sh
# run_pingpong.sh FI_PINGPONG EP PORT [ITERATIONS [SIZE [OPTION...]]] - one rank of
# fi_pingpong over the viastack provider, under vipl-run -n 2: rank 0 is the
# server, rank 1 the client.  The node "localhost" names the first rank on
# this host (rank 0), on every VIPL provider (nicfw, verbs).  The control
# connection is fi_pingpong's own TCP socket on PORT.  ITERATIONS per size
# (default 100; fewer where the network is emulated, e.g. the soft-RoCE
# guest), SIZE bytes or every size ("all", the default); OPTIONs go to both
# sides (e.g. -c, the data check).
pp=$1 ep=$2 port=$3 iters=${4:-100} size=${5:-all}
[ $# -ge 5 ] && shift 5 || shift $#
if [ "$VIASTACK_RANK" = 0 ]; then
    exec "$pp" -p viastack -e "$ep" -B "$port" -I "$iters" -S "$size" "$@"
fi
# Wait for the server's listening socket without connecting to it.
"$(dirname "$0")/../../tools/wait-listen" "$port" 20 || exit 1
exec "$pp" -p viastack -e "$ep" -P "$port" -I "$iters" -S "$size" "$@" localhost
