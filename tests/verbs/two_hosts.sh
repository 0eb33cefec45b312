#!/bin/bash
# two_hosts.sh - the verbs provider between two "hosts" inside the rxe guest.
#
# Two soft-RoCE devices, rxe1 and rxe2, sit on the two ends of a veth pair
# (10.77.0.1 <-> 10.77.0.2, MTU 9000), so every packet really crosses a link:
#   1. a VI ping-pong with no launcher and no PMIx: the server listens on a fixed
#      rdma_cm port, the client finds it with VipNSGetHostByName("10.77.0.1:18515");
#   2. an AM all-to-all (the AM multi-process test) on 4 ranks, even ranks on rxe1
#      and odd ranks on rxe2, so half of all traffic crosses the link.
# The veth counters must show the traffic went over the pair.
#
# Topology: network namespaces are the natural way to make two hosts, but rxe in
# Linux 6.1 keeps its UDP socket and its route lookups in the initial namespace,
# so an rxe device on a veth end inside another namespace can neither send nor
# receive (rdma_cm: UNREACHABLE).  Both veth ends therefore stay in the initial
# namespace and policy routing sends locally generated traffic for the other end
# out through the veth (instead of the loopback shortcut); accept_local lets each
# end accept packets from the other's local address.  TWO_HOSTS_NETNS=1 uses real
# namespaces instead (kernels whose rxe supports them).
#
# Needs root and the rxe guest (tools/rxe-run); elsewhere it is skipped (exit 77).
# Environment (set by ctest): PINGPONG, and optionally VIPL_RUN + AM_ALLTOALL.
set -u
if [ "${RXE_GUEST:-0}" != 1 ] || [ "$(id -u)" != 0 ]; then
    echo "two_hosts.sh: SKIP: needs root inside the rxe guest (tools/rxe-run ctest -L verbs)" >&2
    exit 77
fi
: "${PINGPONG:?PINGPONG must name the two_host_pingpong binary}"
fail() { echo "two_hosts.sh: FAIL: $*" >&2; exit 1; }
A=10.77.0.1 B=10.77.0.2 PORT=18515
NETNS=${TWO_HOSTS_NETNS:-0}

wait_gid() { # device ip
    local hex; hex=$(printf '%02x%02x:%02x%02x' ${2//./ })
    for _ in $(seq 100); do
        grep -q "ffff:$hex" /sys/class/infiniband/$1/ports/1/gids/* 2>/dev/null && return 0
        sleep 0.1
    done
    fail "$1 has no GID for $2"
}

ip link add vethA mtu 9000 type veth peer name vethB mtu 9000 || fail "cannot create the veth pair"
if [ "$NETNS" = 1 ]; then
    ip netns add hostA && ip netns add hostB || fail "ip netns add"
    ip link set vethA netns hostA && ip link set vethB netns hostB
    IN_A="ip netns exec hostA" IN_B="ip netns exec hostB"
else
    IN_A="" IN_B=""
fi
$IN_A ip addr add $A/24 dev vethA && $IN_A ip link set vethA up && $IN_A ip link set lo up
$IN_B ip addr add $B/24 dev vethB && $IN_B ip link set vethB up && $IN_B ip link set lo up
if [ "$NETNS" != 1 ]; then
    for k in all/rp_filter vethA/rp_filter vethB/rp_filter; do echo 0 > /proc/sys/net/ipv4/conf/$k; done
    for k in vethA/accept_local vethB/accept_local; do echo 1 > /proc/sys/net/ipv4/conf/$k; done
    # Locally generated packets for the other end go out through the veth; the
    # local table (which would short-cut them over lo) is consulted after that.
    ip route add $B dev vethA src $A table 101 && ip route add $A dev vethB src $B table 102 \
        && ip rule add pref 10 iif lo to $B lookup 101 && ip rule add pref 11 iif lo to $A lookup 102 \
        && ip rule add pref 1000 lookup local && ip rule del pref 0 lookup local \
        || fail "cannot set up policy routing"
fi
$IN_A rdma link add rxe1 type rxe netdev vethA || fail "rdma link add rxe1"
$IN_B rdma link add rxe2 type rxe netdev vethB || fail "rdma link add rxe2"
wait_gid rxe1 $A
wait_gid rxe2 $B
counter() { $IN_A cat /sys/class/net/vethA/statistics/tx_packets; }

echo "== VI ping-pong rxe2 ($B) -> rxe1 ($A:$PORT), name service, no launcher"
before=$(counter)
$IN_A env VIPL_PROVIDER=verbs VIPL_VERBS_DEVICE=rxe1 VIPL_VERBS_PORT=$PORT \
    timeout 120 "$PINGPONG" server 1000 > /run/two_hosts_server.out 2>&1 &
srv=$!
$IN_B env VIPL_PROVIDER=verbs VIPL_VERBS_DEVICE=rxe2 \
    timeout 120 "$PINGPONG" client $A:$PORT 1000 16 || { cat /run/two_hosts_server.out; fail "ping-pong client"; }
wait $srv || { cat /run/two_hosts_server.out; fail "ping-pong server"; }
cat /run/two_hosts_server.out
crossed=$(( $(counter) - before ))
echo "vethA sent $crossed packets"
[ "$crossed" -ge 1000 ] || fail "only $crossed packets crossed the veth pair: traffic took a shortcut"

if [ -n "${AM_ALLTOALL:-}" ] && [ -n "${VIPL_RUN:-}" ]; then
    echo "== AM all-to-all, 4 ranks: even ranks on rxe1, odd ranks on rxe2"
    wrap=/run/two_hosts_rank.sh
    cat > $wrap <<WRAP
#!/bin/sh
# Places a vipl-run rank on one of the two hosts by its rank number.
if [ \$((VIASTACK_RANK % 2)) = 0 ]; then dev=rxe1 ns="$IN_A"; else dev=rxe2 ns="$IN_B"; fi
VIPL_VERBS_DEVICE=\$dev VIASTACK_AM_NIC=\$dev exec \$ns "\$@"
WRAP
    chmod +x $wrap
    before=$(counter)
    VIPL_PROVIDER=verbs timeout 500 "$VIPL_RUN" -n 4 --timeout 480 $wrap "$AM_ALLTOALL" \
        || fail "AM all-to-all across the two hosts"
    crossed=$(( $(counter) - before ))
    echo "vethA sent $crossed packets"
    [ "$crossed" -ge 100 ] || fail "AM traffic did not cross the veth pair ($crossed packets)"
fi
echo "two_hosts.sh: PASS"
