#!/bin/sh
# am_vs_ucx.sh - AM short ping-pong over nicfw (inline firmware) next to
# UCX active messages over shared memory, measured in the same run.
#
#   bench/peers/am_vs_ucx.sh BUILD_DIR [iterations] [rounds]
#
# Each round runs `ucx_perftest -t ucp_am_lat -s 16` (UCX_TLS=sm,self, Debian's
# ucx-utils) and `vipl-run -n 2 am_pingpong`; the script prints every number
# and the medians over rounds, then whether AM RTT/2 <= UCX and delta <= 150
# cycles.  Run it on an otherwise idle machine: both sides busy-poll.
set -eu
B=${1:?usage: am_vs_ucx.sh BUILD_DIR [iterations] [rounds]}
N=${2:-100000}
R=${3:-3}
command -v ucx_perftest >/dev/null || { echo "ucx_perftest not found: apt-get install ucx-utils" >&2; exit 2; }
[ -x "$B/am/am_pingpong" ] || { echo "$B/am/am_pingpong not built (ninja -C $B am_pingpong vipl-run)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
while [ $i -lt "$R" ]; do
  port=$((20000 + ($$ + i) % 20000))
  UCX_TLS=sm,self ucx_perftest -p $port >/dev/null 2>&1 &
  srv=$!
  sleep 1
  UCX_TLS=sm,self ucx_perftest -p $port localhost -t ucp_am_lat -s 16 -n "$N" 2>/dev/null |
    awk '/Final:/ {printf "%.0f\n", $3 * 1000}' >>"$tmp/ucx"
  wait $srv || true
  VIPL_NICFW_MODE=inline "$B/vipl/launcher/vipl-run" -n 2 "$B/am/am_pingpong" "$N" >"$tmp/am.$i"
  cat "$tmp/am.$i"
  awk '/^RTT\/2 =/ {print $3}' "$tmp/am.$i" >>"$tmp/am"
  awk '/^delta =/ {print $6}' "$tmp/am.$i" >>"$tmp/delta"
  echo "ucx_perftest ucp_am_lat -s 16: median latency $(tail -n 1 "$tmp/ucx") ns"
  i=$((i + 1))
done
med() { sort -n "$1" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
am=$(med "$tmp/am"); ucx=$(med "$tmp/ucx"); delta=$(med "$tmp/delta")
echo "median over $R rounds: AM RTT/2 = $am ns, UCX ucp_am_lat = $ucx ns, delta = $delta cycles"
[ "$am" -le "$ucx" ] && echo "AM <= UCX: yes" || echo "AM <= UCX: no"
[ "$delta" -le 150 ] && echo "delta <= 150 cycles: yes" || echo "delta <= 150 cycles: no"
