#!/bin/bash
# bench_vs_perftest.sh - viastack over the verbs provider vs perftest, same device,
# same guest, same moment (tools/rxe-run ctest -L bench -V).
#
#   VI  send/recv 16 B RTT/2 (vi_pingpong)           vs ib_send_lat -s 16 (RC)   target <= 1.1x
#   AM  short request/reply RTT/2 (am_pingpong)      vs ib_send_lat -s 16        target <= 1.2x
#   VI  RDMA write 32 KB bandwidth (vi_rdma_bw)      vs ib_write_bw -s 32768     target >= 0.9x
#
# Each measurement is a median inside its program (perftest's t_typical for
# latency; its BW average for bandwidth).  The script runs every program ROUNDS
# times (default 5), back to back with its perftest counterpart (perftest first in
# odd rounds, viastack first in even ones), computes a ratio per round and judges
# the median of those ratios: the emulated guest's speed drifts with the host's
# load, and pairing neighbours in time cancels most of the drift.  Medians of the
# raw figures are printed too.
# Bandwidths are compared in MiB/s (perftest's MB); vi_rdma_bw reports 10^6 B/s.
# It reports; it fails only if a program fails, or, with BENCH_ENFORCE=1, if a
# target is missed (soft-RoCE under emulation is noisy: see docs/rxe.md).
# Output: a table on stdout and bench_vs_perftest.json in the current directory.
set -u
if ! ls /sys/class/infiniband/ 2>/dev/null | grep -q .; then
    echo "bench_vs_perftest.sh: SKIP: no RDMA device (run under tools/rxe-run)" >&2
    exit 77
fi
: "${VIPL_RUN:?}" "${VI_PINGPONG:?}" "${VI_RDMA_BW:?}"
command -v ib_send_lat > /dev/null || { echo "bench: FAIL: perftest is not installed" >&2; exit 1; }
DEV=${RXE_DEVICE:-$(ls /sys/class/infiniband | head -1)}
ROUNDS=${ROUNDS:-5}
ITERS=${BENCH_ITERS:-2000}
BW_ITERS=${BENCH_BW_ITERS:-6000}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export VIPL_PROVIDER=verbs VIPL_VERBS_DEVICE=$DEV

fail() { echo "bench: FAIL: $*" >&2; exit 1; }

perftest_pair() { # tool args... -> client output on stdout
    timeout 120 "$@" > "$T/server" 2>&1 &
    local srv=$!
    sleep 1
    timeout 120 "$@" localhost || { cat "$T/server" >&2; return 1; }
    wait $srv
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }

run_ib_lat() { # ib_send_lat prints: #bytes #iterations t_min t_max t_typical t_avg ...
    perftest_pair ib_send_lat -d "$DEV" -x 1 -F -c RC -s 16 -n "$ITERS" > "$T/lat" || fail "ib_send_lat"
    awk '$1 == 16 { print $5 * 1000 }' "$T/lat" >> "$T/ib_lat_ns"
}
run_ib_bw() {
    perftest_pair ib_write_bw -d "$DEV" -x 1 -F -s 32768 -n "$BW_ITERS" > "$T/bw" || fail "ib_write_bw"
    awk '$1 == 32768 { print $4 }' "$T/bw" >> "$T/ib_bw_mib"
}
run_ours_lat() {
    timeout 300 "$VIPL_RUN" -n 2 --timeout 280 "$VI_PINGPONG" -s 16 -n "$ITERS" -w 200 > "$T/vi" 2>&1 \
        || { cat "$T/vi" >&2; fail "vi_pingpong"; }
    sed -n 's/^RTT\/2 = \([0-9.]*\) ns.*/\1/p' "$T/vi" | head -1 >> "$T/vi_ns"
    if [ -n "${AM_PINGPONG:-}" ]; then
        timeout 300 "$VIPL_RUN" -n 2 --timeout 280 "$AM_PINGPONG" "$ITERS" 200 > "$T/am" 2>&1 \
            || { cat "$T/am" >&2; fail "am_pingpong"; }
        sed -n 's/^RTT\/2 = \([0-9.]*\) ns.*/\1/p' "$T/am" | head -1 >> "$T/am_ns"
    fi
}
run_ours_bw() {
    timeout 300 "$VIPL_RUN" -n 2 --timeout 280 "$VI_RDMA_BW" -m 32768 -n "$BW_ITERS" -d 64 > "$T/vbw" 2>&1 \
        || { cat "$T/vbw" >&2; fail "vi_rdma_bw"; }
    awk '$1 == 32768 { printf "%.1f\n", $3 / 1.048576 }' "$T/vbw" >> "$T/vi_bw_mib"
}
# This round's ratio of two figures (the last line of each file) goes to file $3.
round_ratio() {
    awk -v a="$(tail -1 "$T/$1")" -v b="$(tail -1 "$T/$2")" \
        'BEGIN { if (a > 0 && b > 0) printf "%.4f\n", a / b }' >> "$T/$3"
}

for r in $(seq "$ROUNDS"); do
    # Odd rounds measure perftest first, even rounds viastack first (drift cancels).
    if [ $((r % 2)) = 1 ]; then run_ib_lat; run_ours_lat; run_ib_bw; run_ours_bw
    else run_ours_lat; run_ib_lat; run_ours_bw; run_ib_bw; fi
    round_ratio vi_ns ib_lat_ns r_vi
    [ -s "$T/am_ns" ] && round_ratio am_ns ib_lat_ns r_am
    round_ratio vi_bw_mib ib_bw_mib r_bw
    echo "round $r: ib_send_lat $(tail -1 "$T/ib_lat_ns") ns, VI $(tail -1 "$T/vi_ns") ns$( [ -s "$T/am_ns" ] && echo ", AM $(tail -1 "$T/am_ns") ns"); ib_write_bw $(tail -1 "$T/ib_bw_mib") MiB/s, VI write $(tail -1 "$T/vi_bw_mib") MiB/s"
done

ib_lat=$(median < "$T/ib_lat_ns"); vi=$(median < "$T/vi_ns")
ib_bw=$(median < "$T/ib_bw_mib"); vi_bw=$(median < "$T/vi_bw_mib")
am=$( [ -s "$T/am_ns" ] && median < "$T/am_ns" || echo "")
[ -n "$ib_lat" ] && [ -n "$vi" ] && [ -n "$ib_bw" ] && [ -n "$vi_bw" ] || fail "could not parse the results"

ratio_of() { median < "$T/$1" | awk '{ printf "%.2f", $1 }'; }
verdict() { awk -v r="$1" -v t="$2" -v dir="$3" 'BEGIN { ok = dir == "le" ? r <= t : r >= t; print ok ? "met" : "MISSED" }'; }
vi_r=$(ratio_of r_vi); bw_r=$(ratio_of r_bw)
printf "\nverbs provider vs perftest on %s, %s rounds x %s iterations (bandwidth: %s)\n" "$DEV" "$ROUNDS" "$ITERS" "$BW_ITERS"
printf '(figures: medians of the rounds; ratio: median of the per-round ratios)\n'
printf '%-36s %12s %12s %7s %8s %s\n' measurement viastack perftest ratio target result
printf '%-36s %10.0f ns %10.0f ns %7s %8s %s\n' "VI send/recv 16 B RTT/2" "$vi" "$ib_lat" "$vi_r" "<= 1.1" "$(verdict "$vi_r" 1.1 le)"
missed=0
[ "$(verdict "$vi_r" 1.1 le)" = met ] || missed=1
if [ -n "$am" ]; then
    am_r=$(ratio_of r_am)
    printf '%-36s %10.0f ns %10.0f ns %7s %8s %s\n' "AM short request/reply RTT/2" "$am" "$ib_lat" "$am_r" "<= 1.2" "$(verdict "$am_r" 1.2 le)"
    [ "$(verdict "$am_r" 1.2 le)" = met ] || missed=1
fi
printf '%-36s %7.1f MiB/s %7.1f MiB/s %7s %8s %s\n' "RDMA write 32 KB bandwidth" "$vi_bw" "$ib_bw" "$bw_r" ">= 0.9" "$(verdict "$bw_r" 0.9 ge)"
[ "$(verdict "$bw_r" 0.9 ge)" = met ] || missed=1
list() { [ -s "$T/$1" ] && paste -sd, "$T/$1"; }
cat > bench_vs_perftest.json <<JSON
{"device": "$DEV", "rounds": $ROUNDS, "iterations": $ITERS, "bw_iterations": $BW_ITERS,
 "ib_send_lat_16B_ns": $ib_lat, "vi_rtt2_16B_ns": $vi, "am_rtt2_ns": ${am:-null},
 "ib_write_bw_32KB_MiBps": $ib_bw, "vi_rdma_write_32KB_MiBps": $vi_bw,
 "ratio_vi_lat": $vi_r, "ratio_am_lat": ${am_r:-null}, "ratio_bw": $bw_r,
 "round_ratios_vi_lat": [$(list r_vi)], "round_ratios_am_lat": [$(list r_am)],
 "round_ratios_bw": [$(list r_bw)]}
JSON
if [ "$missed" = 1 ] && [ "${BENCH_ENFORCE:-0}" = 1 ]; then
    fail "a target was missed (BENCH_ENFORCE=1)"
fi
exit 0
