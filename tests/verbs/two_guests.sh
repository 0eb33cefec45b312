#!/bin/bash
# two_guests.sh - the verbs provider between two real hosts: two QEMU guests (two
# kernels, an rxe0 each) joined by an emulated Ethernet link (tools/rxe-run --hosts 2).
#
#   On the host (ctest -L twoguest, or by hand from the build tree):
#     PINGPONG=.../verbs_two_host_pingpong [VIPL_RUN=.../vipl-run AM_ALLTOALL=.../am_mp_test] \
#       tests/verbs/two_guests.sh
#   boots the two guests with tools/rxe-run --hosts 2 and runs this script in both.
#
#   In guest i (RXE_HOSTS=2, RXE_HOST_INDEX=i, RXE_IPV4=10.77.0.(i+1)):
#   1. a VI ping-pong with no launcher: host 0 serves on rdma_cm port $PORT, host 1
#      finds it with VipNSGetHostByName("10.77.0.1:$PORT") and checks every echo of
#      1000 round trips;
#   2. an AM all-to-all on 4 ranks, 2 per host, joined by the TCP bootstrap
#      (vipl-run --world 4 --first-rank 2i --boot tcp:10.77.0.1:$BOOT_PORT); left
#      out, with a message, only when AM_ALLTOALL/VIPL_RUN are not given (no AM build).
#   3. an MPI ping-pong (tests/ofi/mpi_pingpong.c), rank i on host i, over Open MPI's
#      mtl:ofi on viastack;ofi_rxm and the verbs provider: mpirun on host 0 starts
#      host 1's daemon through remote_shell.py (plm_rsh_agent; there is no ssh), the
#      ranks meet through PMIx; left out when MPI_PINGPONG/OFI_DIR are not given.
#   After each part the NIC's packet counters must show the RDMA traffic crossed
#   the link (TCP segments, i.e. the bootstrap, are subtracted), or the host fails.
#
# No step waits on the other host without a deadline: the client retries its
# connect for 60 s, the bootstrap for BOOT_TIMEOUT, and every program runs under
# `timeout`; rxe-run stops a guest RXE_RUN_PEER_GRACE s after the other one failed.
# Exit: 0 pass, 1 fail, 77 skipped (no qemu, VIASTACK_SKIP_RXE=1, or a single guest).
set -u
ME=two_guests.sh
PORT=${TWO_GUESTS_PORT:-18515}        # the ping-pong server's rdma_cm port
BOOT_PORT=${TWO_GUESTS_BOOT_PORT:-18600} # rank 0's TCP bootstrap port
ROUNDS=${TWO_GUESTS_ROUNDS:-1000}
skip() { echo "$ME: SKIP: $*" >&2; exit 77; }
fail() { echo "$ME: FAIL: $*" >&2; exit 1; }

# ---- on the host: start the two guests and run this script in both ------------------
if [ "${RXE_GUEST:-0}" != 1 ]; then
    [ "${VIASTACK_SKIP_RXE:-0}" = 1 ] && skip "VIASTACK_SKIP_RXE=1"
    command -v qemu-system-x86_64 > /dev/null || skip "qemu-system-x86_64 is not installed (tools/rxe-run --setup)"
    : "${PINGPONG:?PINGPONG must name the verbs_two_host_pingpong binary}"
    RXE_RUN=${RXE_RUN:-$(dirname "$0")/../../tools/rxe-run}
    export RXE_RUN_TIMEOUT=${RXE_RUN_TIMEOUT:-300}
    exec "$RXE_RUN" --hosts 2 "$(cd "$(dirname "$0")" && pwd -P)/$ME"
fi

# ---- in guest RXE_HOST_INDEX -----------------------------------------------------------
[ "${RXE_HOSTS:-1}" = 2 ] || skip "needs two guests (tools/rxe-run --hosts 2), this is a single guest"
: "${PINGPONG:?PINGPONG must name the verbs_two_host_pingpong binary}"
I=$RXE_HOST_INDEX NIC=$RXE_NETDEV
SERVER=10.77.0.1
export VIPL_PROVIDER=verbs VIPL_VERBS_DEVICE=$RXE_DEVICE VIASTACK_AM_NIC=$RXE_DEVICE

stat() { cat "/sys/class/net/$NIC/statistics/$1"; }
tcp_out() { awk '$1 == "Tcp:" && n++ { print $12 }' /proc/net/snmp; } # OutSegs
tcp_in() { awk '$1 == "Tcp:" && n++ { print $11 }' /proc/net/snmp; }  # InSegs
mark() { TX0=$(stat tx_packets) RX0=$(stat rx_packets) TO0=$(tcp_out) TI0=$(tcp_in); }
# Fails unless at least $1 non-TCP packets left and arrived on the NIC since `mark`.
crossed() {
    local tx=$(( $(stat tx_packets) - TX0 - ($(tcp_out) - TO0) ))
    local rx=$(( $(stat rx_packets) - RX0 - ($(tcp_in) - TI0) ))
    echo "$ME: $2: $NIC sent $tx and received $rx RDMA packets over the link (need >= $1 each)"
    [ "$tx" -ge "$1" ] && [ "$rx" -ge "$1" ] || fail "$2: the traffic did not cross the link"
}

echo "== host $I: $RXE_IPV4 on $NIC (mtu $(cat /sys/class/net/$NIC/mtu)), peer $RXE_PEER_IPV4"
echo "== VI ping-pong, $ROUNDS round trips: host 1 -> $SERVER:$PORT (name service, no launcher)"
mark
if [ "$I" = 0 ]; then
    VIPL_VERBS_PORT=$PORT timeout 150 "$PINGPONG" server "$ROUNDS" || fail "ping-pong server (exit $?)"
else
    timeout 150 "$PINGPONG" client "$SERVER:$PORT" "$ROUNDS" 64 || fail "ping-pong client (exit $?)"
fi
crossed "$ROUNDS" "ping-pong"

if [ -z "${AM_ALLTOALL:-}" ] || [ -z "${VIPL_RUN:-}" ]; then
    echo "$ME: AM all-to-all LEFT OUT: AM_ALLTOALL and VIPL_RUN are not set"
elif ! "$VIPL_RUN" --help 2>&1 | grep -q -- '--boot'; then
    fail "$VIPL_RUN has no --boot (the TCP bootstrap): rebuild vipl-run"
else
    echo "== AM all-to-all, 4 ranks: ranks $((2 * I)),$((2 * I + 1)) here, bootstrap tcp:$SERVER:$BOOT_PORT"
    mark
    VIASTACK_BOOT_TIMEOUT=${VIASTACK_BOOT_TIMEOUT:-90} timeout 260 "$VIPL_RUN" -n 2 --world 4 \
        --first-rank $((2 * I)) --job "twoguests$BOOT_PORT" --boot "tcp:$SERVER:$BOOT_PORT" \
        --timeout 240 --tag-output "$AM_ALLTOALL" || fail "AM all-to-all across the two hosts (exit $?)"
    crossed 1000 "AM all-to-all" # ~4100 each way measured
fi
if [ -z "${MPI_PINGPONG:-}" ] || [ -z "${OFI_DIR:-}" ]; then
    echo "$ME: MPI ping-pong LEFT OUT: MPI_PINGPONG and OFI_DIR are not set (no ofi/ or MPI build)"
else
    # Open MPI's own launcher across the hosts: mpirun on host 0 starts its
    # daemon on host 1 through plm_rsh_agent, here remote_shell.py (the guests
    # have no ssh); the ranks meet through PMIx, the provider opens rxe0.
    RSH=$(cd "$(dirname "$0")" && pwd -P)/remote_shell.py
    MPI_LOG=$(mktemp)
    export REMOTE_SHELL_PORT=${TWO_GUESTS_RSH_PORT:-18700}
    echo "== MPI ping-pong, rank 0 here and rank 1 on the other host: mpirun, mtl:ofi, viastack;ofi_rxm over verbs"
    mark
    if [ "$I" = 0 ]; then
        FI_PROVIDER_PATH=$OFI_DIR timeout 260 mpirun --allow-run-as-root -n 2 --host "$SERVER:1,$RXE_PEER_IPV4:1" \
            --timeout 240 --mca plm_rsh_agent "$RSH" --mca oob_tcp_if_include 10.77.0.0/24 \
            -x FI_PROVIDER_PATH -x VIPL_PROVIDER -x VIPL_VERBS_DEVICE -x VIASTACK_BOOT_TIMEOUT=120 \
            --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include viastack "$MPI_PINGPONG" 2>&1 | tee "$MPI_LOG"
        status=${PIPESTATUS[0]}
        "$RSH" --quit "$RXE_PEER_IPV4"
        passed=$(grep -c "mpi_pingpong: all checks passed" "$MPI_LOG")
        rm -f "$MPI_LOG"
        [ "$status" = 0 ] || fail "MPI ping-pong across the two hosts (mpirun exit $status)"
        [ "$passed" = 1 ] || fail "MPI ping-pong: no 'all checks passed'"
    else
        timeout 280 "$RSH" serve "$RXE_IPV4" 270 || fail "remote shell for mpirun (exit $?)"
    fi
    crossed 1000 "MPI ping-pong"
fi
echo "$ME: host $I: PASS"
