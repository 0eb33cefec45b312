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
# Wait for the server's listening socket (state 0A in /proc/net/tcp); a
# probe connection would be taken by the server as its client.
hexport=$(printf '%04X' "$port")
i=0
until grep -q ":$hexport 00000000:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 400 ]; then echo "fi_pingpong server never listened on port $port" >&2; exit 1; fi
    sleep 0.05
done
exec "$pp" -p viastack -e "$ep" -P "$port" -I "$iters" -S "$size" "$@" localhost
