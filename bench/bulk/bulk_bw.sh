#!/bin/sh
# bulk_bw.sh - RDMA-write bandwidth of nicfw's data paths against UCX's
# shared-memory put, measured interleaved (issue #15; docs/nicfw.md "Data path").
#
#   bench/bulk/bulk_bw.sh BUILD_DIR [ROUNDS] [SIZES...]
#
# Per round and size, in this order: vi_rdma_bw with VipxAllocMem memory (bulk
# path, one memcpy), with heap memory (bulk path, cross-memory attach), with the
# bulk path off (VIPL_NICFW_DMA_MIN=off: staged through the wire FIFO; at most
# 64 KiB per write, so larger sizes are measured at 64 KiB), and
# `ucx_perftest -t ucp_put_bw` with UCX_TLS=sm,self (as bench/logp runs it).
# BULK_DMA_MIN=N runs the two bulk variants with VIPL_NICFW_DMA_MIN=N (to find
# the crossover below the default); BULK_NO_UCX=1 leaves UCX out; BULK_NICE=N
# runs every measured process (ours and UCX's) under nice -n N, so that on a
# shared machine the two processes of a run get most of the CPU they ask for.
# Prints "round size variant MB/s" lines, then the median of each and the
# per-round ratio to ucp_put_bw (median, min, max).
set -eu
build=${1:?usage: bulk_bw.sh BUILD_DIR [ROUNDS] [SIZES...]}
rounds=${2:-5}
shift 2 2>/dev/null || shift $#
sizes=${*:-4096 32768 262144 1048576}
run="$build/vipl/launcher/vipl-run"
bw="$build/vipl/examples/vi_rdma_bw"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

iters() { n=$((268435456 / $1)); [ $n -lt 2000 ] && n=2000; [ $n -gt 20000 ] && n=20000; echo $n; }
vi() { # size iters [env] [flags]
    env ${3:-} $nice "$run" -n 2 --timeout 120 "$bw" -s "$1" -m "$1" -n "$2" -d 32 ${4:-} | awk -v s="$1" '$1 == s { print $3 }'
}
ucx() { # size iters
    port=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 20000))
    UCX_TLS=sm,self $nice ucx_perftest -p "$port" >/dev/null 2>&1 &
    srv=$!
    sleep 0.3
    UCX_TLS=sm,self $nice ucx_perftest localhost -p "$port" -t ucp_put_bw -s "$1" -n "$2" -w $(($2 / 10)) -v 2>/dev/null |
        awk -F, 'NF > 7 && $1 ~ /^[0-9]+$/ { v = $6 } END { printf "%.1f\n", v * 1048576 / 1e6 }'
    wait "$srv" 2>/dev/null || true
}
nice=${BULK_NICE:+nice -n $BULK_NICE}
bulkenv=${BULK_DMA_MIN:+VIPL_NICFW_DMA_MIN=$BULK_DMA_MIN}
for r in $(seq 1 "$rounds"); do
    for s in $sizes; do
        n=$(iters "$s")
        staged=$s; [ "$staged" -gt 65536 ] && staged=65536
        echo "$r $s shm $(vi "$s" "$n" "$bulkenv" -a)" | tee -a "$out"
        echo "$r $s cma $(vi "$s" "$n" "$bulkenv")" | tee -a "$out"
        echo "$r $s staged $(vi "$staged" "$n" VIPL_NICFW_DMA_MIN=off)" | tee -a "$out"
        [ -n "${BULK_NO_UCX:-}" ] || echo "$r $s ucx $(ucx "$s" "$n")" | tee -a "$out"
    done
done
echo "# medians over $rounds rounds (MB/s); per-round ratios (to ucp_put_bw, to the staged path): median [min, max]"
python3 - "$out" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 4]
d = {}
for r, s, v, x in rows:
    d.setdefault((int(s), v), {})[int(r)] = float(x) if x not in ('', 'nan') else float('nan')
def ratio(m, ref):
    rs = [m[r] / ref[r] for r in m if r in ref and ref[r] > 0 and m[r] == m[r]]
    return f"{st.median(rs):.2f} [{min(rs):.2f}, {max(rs):.2f}]" if rs else "-"
for s in sorted({k[0] for k in d}):
    line = [f"{s:>8}"]
    for v in ('shm', 'cma', 'staged', 'ucx'):
        m = d.get((s, v), {})
        if not m: continue
        line.append(f"{v} {st.median(m.values()):9.1f}")
        if v != 'ucx' and (s, 'ucx') in d: line.append(f"/ucx {ratio(m, d[(s, 'ucx')])}")
        if v in ('shm', 'cma'): line.append(f"/staged {ratio(m, d[(s, 'staged')])}")
    print("  ".join(line))
PY
