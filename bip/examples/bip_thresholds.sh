#!/bin/sh
# bip_thresholds.sh - measures BIP's two thresholds (docs/bip.md):
#
#   switch point: RTT/2 by size with every message copied (VIASTACK_BIP_EAGER
#     large) against every message by rendezvous + RDMA (VIASTACK_BIP_EAGER=0),
#     interleaved round by round; the crossover is where rendezvous wins.
#   fragment: bandwidth of long messages with fixed RDMA fragment sizes
#     (VIASTACK_BIP_FRAGMENT) against the adaptive rule, interleaved.
#
#   bip_thresholds.sh BUILD_DIR [rounds]     (prints medians over the rounds)
#   SW, FR: the sizes of each sweep; FRAGS: the fragment sizes; NPP: round trips per size
set -eu
B=${1:?usage: bip_thresholds.sh BUILD_DIR [rounds]}
R=${2:-5}
RUN="$B/vipl/launcher/vipl-run -n 2 --timeout 300 $B/bip/bip_pingpong"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
SW=${SW:-64,256,1024,4096,8192,16384,24576,32768,49152,65000}
FR=${FR:-65536,262144,1048576,4194304}
FRAGS=${FRAGS:-8192 16384 32768 65536 0}
EAGER_MAX=${EAGER_MAX:-65000}
i=0
while [ $i -lt "$R" ]; do
    VIASTACK_BIP_EAGER=$EAGER_MAX $RUN -n ${NPP:-1000} -w 100 -s $SW | grep -v '^#' >> "$T/eager"
    VIASTACK_BIP_EAGER=0 $RUN -n ${NPP:-1000} -w 100 -s $SW | grep -v '^#' >> "$T/rndv"
    for f in $FRAGS; do
        VIASTACK_BIP_FRAGMENT=$f $RUN -n 100 -w 10 -s $FR | grep -v '^#' >> "$T/frag$f"
    done
    i=$((i + 1))
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "# switch point: median RTT/2 (ns) over $R rounds"
echo "# bytes   copied   rendezvous"
for s in $(echo $SW | tr , ' '); do
    e=$(awk -v s=$s '$1==s {print $2}' "$T/eager" | median)
    r=$(awk -v s=$s '$1==s {print $2}' "$T/rndv" | median)
    echo "$s $e $r"
done
echo "# fragment: median MB/s over $R rounds (0 = adaptive)"
echo "# bytes  fragment sizes: $FRAGS (0 = adaptive)"
for s in $(echo $FR | tr , ' '); do
    line="$s"
    for f in $FRAGS; do
        line="$line $(awk -v s=$s '$1==s {print $5}' "$T/frag$f" | median)"
    done
    echo "$line"
done
