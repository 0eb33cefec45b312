#!/bin/sh
# run_pingpong.sh FI_PINGPONG EP PORT - one rank of fi_pingpong over the
# viastack provider, under vipl-run -n 2: rank 0 is the server, rank 1 the
# client.  The node "localhost" names the first rank on this host (rank 0).
# The control connection is fi_pingpong's own TCP socket on PORT; the client
# waits until the server listens on it.
pp=$1 ep=$2 port=$3
if [ "$VIASTACK_RANK" = 0 ]; then
    exec "$pp" -p viastack -e "$ep" -B "$port" -I 100 -S all
fi
i=0
while ! (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 200 ] && { echo "server never listened on $port" >&2; exit 1; }
    sleep 0.05
done 2>/dev/null
exec "$pp" -p viastack -e "$ep" -P "$port" -I 100 -S all localhost
