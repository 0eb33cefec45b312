#!/usr/bin/env bash
# bench_rxm_verbs.sh [ROUNDS] - inside the soft-RoCE guest (tools/rxe-run, from
# the build directory): the viastack provider under ofi_rxm against libfabric's
# own verbs provider under ofi_rxm, both on rxe0, interleaved round by round.
#
#   cd build && ../tools/rxe-run ../tests/ofi/bench_rxm_verbs.sh 5
#
# Each round runs, for each stack (viastack;ofi_rxm, then verbs;ofi_rxm):
#   fi_pingpong -e rdm   16 B (usec/xfer = RTT/2) and 64 KiB (MB/s)
#   NPmpi (NetPIPE)      16 B (RTT/2) and 64 KiB (Mb/s), Open MPI mtl:ofi
# Binding is the same for both: the first process on CPU 0, the second on
# CPU 1 (vipl-run --bind core; taskset for libfabric's verbs, which needs no
# viastack job; mpirun --bind-to core).  Prints every round's figures and the
# ratio viastack/verbs, then the medians.  Not a test: it passes nothing and
# fails only when a run fails.  Figures from a TCG guest are emulation
# figures: compare the stacks with each other, never with hardware.
set -u
ROUNDS=${1:-5}
B=${VIASTACK_BUILD:-$PWD}
SRC=$(cd "$(dirname "$0")/../.." && pwd -P)
VIPL_RUN=$B/vipl/launcher/vipl-run
PP=$(command -v fi_pingpong) || { echo "bench: no fi_pingpong (libfabric-bin)" >&2; exit 1; }
NP=$(command -v NPmpi || command -v NPopenmpi) || { echo "bench: no NPmpi (netpipe-openmpi)" >&2; exit 1; }
[ -x "$VIPL_RUN" ] || { echo "bench: run me from the build directory ($VIPL_RUN missing)" >&2; exit 1; }
DEV=${RXE_DEVICE:-rxe0} IP=${RXE_IPV4:-192.0.2.1}
export VIPL_PROVIDER=verbs FI_PROVIDER_PATH=$B/ofi
# rxm sizes its connected provider's CQ as (tx + rx queue size) x universe
# size: with the default universe (256) that is past rxe's max_cqe (32767),
# and libfabric's verbs provider refuses it (fi_enable -FI_EINVAL; Open MPI
# then finds no usable provider).  The same smaller universe for both stacks.
export FI_UNIVERSE_SIZE=${FI_UNIVERSE_SIZE:-16}
ITERS_LAT=${BENCH_ITERS_LAT:-2000} ITERS_BW=${BENCH_ITERS_BW:-200}
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
echo 47800 >"$out/port"
# The functions run in $(...) subshells: the next control port lives in a file.
next_port() { port=$(($(cat "$out/port") + 1)); echo "$port" >"$out/port"; }

# fi_pingpong's result line for one size:
#   bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec  -> "usec/xfer MB/sec"
pp_viastack() { # SIZE ITERS -> "usec MB/s"
    next_port
    timeout 300 "$VIPL_RUN" -n 2 --bind core --timeout 280 \
        sh "$SRC/tests/ofi/run_pingpong.sh" "$PP" rdm "$port" "$2" "$1" >"$out/pp" 2>&1 ||
        { echo "bench: fi_pingpong viastack $1 B failed:" >&2; cat "$out/pp" >&2; touch "$out/failed"; return; }
    awk '$1 ~ /^[0-9]/ && $2 ~ /^[0-9]/ {print $7, $6}' "$out/pp" | tail -1
}
pp_verbs() {
    next_port
    taskset -c 0 timeout 280 "$PP" -p verbs -d "$DEV" -e rdm -B "$port" -S "$1" -I "$2" >"$out/pp" 2>&1 &
    local srv=$!
    local hex=$(printf '%04X' "$port") i=0
    until grep -q ":$hex 00000000:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 600 ] && { echo "bench: verbs server never listened" >&2; touch "$out/failed"; return; }
        sleep 0.05
    done
    taskset -c 1 timeout 280 "$PP" -p verbs -d "$DEV" -e rdm -P "$port" -S "$1" -I "$2" "$IP" >"$out/ppc" 2>&1 ||
        { echo "bench: fi_pingpong verbs $1 B failed:" >&2; cat "$out/ppc" "$out/pp" >&2; touch "$out/failed"; wait; return; }
    wait $srv
    awk '$1 ~ /^[0-9]/ && $2 ~ /^[0-9]/ {print $7, $6}' "$out/ppc" | tail -1
}
np() { # PROVIDER SIZE -> "usec Mb/s" (np.out: bytes Mbps seconds-one-way; NetPIPE
       # also runs SIZE-3 and SIZE+3: the row of SIZE itself is taken)
    rm -f "$out/np.out"
    timeout 300 mpirun --allow-run-as-root -n 2 --bind-to core --timeout 280 \
        -x FI_PROVIDER_PATH -x VIPL_PROVIDER -x FI_UNIVERSE_SIZE -x VIASTACK_BOOT_TIMEOUT=120 \
        --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$1" \
        "$NP" -l "$2" -u "$2" -o "$out/np.out" >"$out/nplog" 2>&1
    local rc=$?
    local row=$(awk -v s="$2" '$1 == s {printf "%.2f %.1f\n", $3 * 1e6, $2}' "$out/np.out" 2>/dev/null)
    if [ -z "$row" ]; then
        echo "bench: NPmpi over $1 failed (exit $rc):" >&2; grep -v '^ *$' "$out/nplog" | head -25 >&2
        touch "$out/failed"; return
    fi
    # A job that measured and then failed to end cleanly is reported, its figures kept.
    [ $rc = 0 ] || echo "bench: NPmpi over $1, $2 B: measured, then mpirun exited $rc ($(grep -m1 -o 'exiting improperly\|MPI_ERR[A-Z_]*' "$out/nplog"))" >&2
    echo "$row"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }
median() { sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "bench_rxm_verbs: $ROUNDS rounds on $DEV ($IP), $(nproc) CPUs, $(uname -r)"
echo "fi_pingpong -e rdm: 16 B x $ITERS_LAT, 64 KiB x $ITERS_BW; NPmpi -l S -u S (its own repeat count)"
printf '%-5s %-9s %12s %12s %12s %12s\n' round stack "pp16B_us" "pp64K_MB/s" "np16B_us" "np64K_Mb/s"
: >"$out/ratios"
for r in $(seq 1 "$ROUNDS"); do
    read -r vl _ <<<"$(pp_viastack 16 "$ITERS_LAT")"; read -r _ vb <<<"$(pp_viastack 65536 "$ITERS_BW")"
    read -r vnl _ <<<"$(np viastack 16)"; read -r _ vnb <<<"$(np viastack 65536)"
    read -r wl _ <<<"$(pp_verbs 16 "$ITERS_LAT")"; read -r _ wb <<<"$(pp_verbs 65536 "$ITERS_BW")"
    read -r wnl _ <<<"$(np verbs 16)"; read -r _ wnb <<<"$(np verbs 65536)"
    printf '%-5s %-9s %12s %12s %12s %12s\n' "$r" viastack "$vl" "$vb" "$vnl" "$vnb"
    printf '%-5s %-9s %12s %12s %12s %12s\n' "$r" verbs "$wl" "$wb" "$wnl" "$wnb"
    a=$(ratio "$vl" "$wl") b=$(ratio "$vb" "$wb") c=$(ratio "$vnl" "$wnl") d=$(ratio "$vnb" "$wnb")
    printf '%-5s %-9s %12s %12s %12s %12s\n' "$r" ratio "$a" "$b" "$c" "$d"
    echo "$vl $vb $vnl $vnb $wl $wb $wnl $wnb $a $b $c $d" >>"$out/ratios"
done
col() { awk -v c="$1" '{print $c}' "$out/ratios" | median; }
echo "medians over $ROUNDS rounds (ratio = viastack / verbs, the median of the per-round ratios):"
printf '%-15s %12s %12s %12s %12s\n' "" "pp16B_us" "pp64K_MB/s" "np16B_us" "np64K_Mb/s"
printf '%-15s %12s %12s %12s %12s\n' "viastack;rxm" "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)"
printf '%-15s %12s %12s %12s %12s\n' "verbs;rxm" "$(col 5)" "$(col 6)" "$(col 7)" "$(col 8)"
printf '%-15s %12s %12s %12s %12s\n' "ratio" "$(col 9)" "$(col 10)" "$(col 11)" "$(col 12)"
[ -e "$out/failed" ] && { echo "bench_rxm_verbs: some runs FAILED (see above); their figures are missing" >&2; exit 1; }
exit 0
