#!/bin/sh
# layers_bw.sh - AM-v3 long and Split-C bulk_put bandwidth of two builds (old,
# new) against UCX's shared-memory put, interleaved round by round (issue #15;
# docs/logp.md "Bulk by RDMA").
#
#   bench/bulk/layers_bw.sh OLD_BUILD NEW_BUILD [ROUNDS] [SIZES...]
#
# Per round, in this order: `logp --quick --no-peers --layers am-v3,splitc` of
# the old build, the same of the new build (each a full bandwidth curve, of
# which SIZES are kept), and `ucx_perftest -t ucp_put_bw` with UCX_TLS=sm,self
# at each size (as bench/bulk/bulk_bw.sh runs it).  Prints "round size variant
# MB/s" lines, then per size and variant the median over the rounds and the
# per-round ratios new/old and new/ucp_put_bw (median [min, max]).
set -eu
old=${1:?usage: layers_bw.sh OLD_BUILD NEW_BUILD [ROUNDS] [SIZES...]}
new=${2:?usage: layers_bw.sh OLD_BUILD NEW_BUILD [ROUNDS] [SIZES...]}
rounds=${3:-3}
shift 3 2>/dev/null || shift $#
sizes=${*:-4096 32768 262144 1048576}
tmp=$(mktemp -d)
out=$tmp/rows
trap 'rm -rf "$tmp"' EXIT

logp() { # build tag round
    "$1/bench/logp/logp" --quick --no-peers --layers am-v3,splitc --vipl-run "$1/vipl/launcher/vipl-run" \
        --out "$tmp/$2-$3" --json "$tmp/$2-$3.json" >/dev/null 2>&1 || true
    python3 - "$tmp/$2-$3.json" "$2" "$3" $sizes <<'PY' | tee -a "$out"
import json, sys
path, tag, rnd, sizes = sys.argv[1], sys.argv[2], sys.argv[3], [int(s) for s in sys.argv[4:]]
try:
    d = json.load(open(path))
except Exception:
    d = {"bandwidth": []}
for c in d["bandwidth"]:
    pts = {p["bytes"]: p["mb_s"] for p in c.get("points", [])}
    for s in sizes:
        if s in pts:
            print(rnd, s, f"{c['layer']}-{tag}", f"{pts[s]:.1f}")
PY
}
ucx() { # size iters
    port=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 20000))
    UCX_TLS=sm,self ucx_perftest -p "$port" >/dev/null 2>&1 &
    srv=$!
    sleep 0.3
    UCX_TLS=sm,self ucx_perftest localhost -p "$port" -t ucp_put_bw -s "$1" -n "$2" -w $(($2 / 10)) -v 2>/dev/null |
        awk -F, 'NF > 7 && $1 ~ /^[0-9]+$/ { v = $6 } END { printf "%.1f\n", v * 1048576 / 1e6 }'
    wait "$srv" 2>/dev/null || true
}
iters() { n=$((268435456 / $1)); [ $n -lt 2000 ] && n=2000; [ $n -gt 20000 ] && n=20000; echo $n; }
for r in $(seq 1 "$rounds"); do
    logp "$old" old "$r"
    logp "$new" new "$r"
    for s in $sizes; do echo "$r $s ucp_put_bw $(ucx "$s" "$(iters "$s")")" | tee -a "$out"; done
done
echo "# medians over $rounds rounds (MB/s); per-round ratios: median [min, max]"
python3 - "$out" <<'PY'
import sys, statistics as st
d = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 4:
        d.setdefault((int(f[1]), f[2]), {})[int(f[0])] = float(f[3])
def ratios(a, b):
    return [a[r] / b[r] for r in a if r in b and b[r] > 0]
def fmt(v):
    return f"{st.median(v):.3g} [{min(v):.3g}, {max(v):.3g}]" if v else "-"
for s in sorted({k[0] for k in d}):
    ucx = d.get((s, "ucp_put_bw"), {})
    print(f"{s} B: ucp_put_bw {st.median(ucx.values()) if ucx else float('nan'):.0f}")
    for layer in ("am-v3", "splitc"):
        o, n = d.get((s, layer + "-old"), {}), d.get((s, layer + "-new"), {})
        if not n:
            continue
        print(f"  {layer}: old {st.median(o.values()) if o else float('nan'):.0f}, new {st.median(n.values()):.0f}; "
              f"new/old {fmt(ratios(n, o))}; new/ucp_put_bw {fmt(ratios(n, ucx))}; old/ucp_put_bw {fmt(ratios(o, ucx))}")
PY
