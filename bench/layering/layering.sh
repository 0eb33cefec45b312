#!/bin/sh
# layering.sh - the layering study (docs/bip.md): "% of the layer below
# delivered upward" by message size, for
#   mp-fm1 / FM   a tagged layer written as an FM 1.x client
#   mp-fm2 / FM   the same layer using FM 2.x's gather and layer interleaving
#   BIP / VI      BIP over the raw VI primitive that carries its data at that
#                 size: sends into posted receives up to BIP's switch point
#                 ($BIP_EAGER, default 16384), RDMA writes above
#   AM medium / VI  the same with AM's medium messages (inline sends up to
#                 4096 bytes, RDMA above); AM long / VI over RDMA writes
#
#   layering.sh BUILD_DIR [OUT_DIR] [rounds]
#
# FM and its two clients run in one job, interleaved per size and round; VI,
# BIP and AM run as separate jobs, interleaved round by round (vi, bip, am,
# vi, ...).  Each bandwidth is the median over the rounds; each fraction the
# median over the rounds of the ratio within the round.  Writes
# OUT_DIR/layering.txt (raw rows),
# layering.dat (the table) and layering.svg (the plot, with gnuplot).
# LAYERING_REUSE=1 re-tabulates an existing OUT_DIR/layering.txt without
# measuring.
set -eu
B=${1:?usage: layering.sh BUILD_DIR [OUT_DIR] [rounds]}
OUT=${2:-layering-report}
R=${3:-5}
MB=${LAYERING_MB:-4}
mkdir -p "$OUT"
RUN="$B/vipl/launcher/vipl-run -n 2 --timeout 900 $B/bench/layering/layering_bw"
RAW="$OUT/layering.txt"
EAGER=${BIP_EAGER:-${VIASTACK_BIP_EAGER:-16384}}
if [ "${LAYERING_REUSE:-0}" != 1 ]; then
    : > "$RAW"
    $RUN fm -r "$R" -m "$MB" >> "$RAW"
    i=0
    while [ $i -lt "$R" ]; do
        # -r 1 numbers its rows round 0: renumber them as round $i.
        for m in vi bip am; do $RUN $m -r 1 -m "$MB" | awk -v r=$i 'NF == 5 { $3 = r } { print }' >> "$RAW"; done
        i=$((i + 1))
    done
fi
if grep -q ERROR "$RAW"; then
    grep ERROR "$RAW" >&2
    exit 1
fi
# Per (layer, size): the median bandwidth over the rounds.  Per pairing and
# size: the median over the rounds of the ratio measured within the round
# (the layer and the layer below ran next to each other, so the ratio sees
# one machine state even when the load moves the absolute numbers).
awk -v eager="$EAGER" '
$1 !~ /^#/ && NF == 5 { bw[$1, $2, $3] = $5; v[$1 " " $2] = v[$1 " " $2] " " $5; sizes[$2] = 1; if ($3 + 1 > nr) nr = $3 + 1 }
function median(s,   a, n, i, j, t) {
    n = split(s, a, " "); if (n == 0) return "";
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function m(l, s) { return ((l " " s) in v) ? median(v[l " " s]) : "" }
# Median over the rounds of 100 * upper / lower.
function ratio(up, lo, s,   r, list) {
    list = ""
    for (r = 0; r < nr; r++)
        if (((up, s, r) in bw) && ((lo, s, r) in bw) && bw[lo, s, r] > 0) list = list " " 100 * bw[up, s, r] / bw[lo, s, r]
    return list == "" ? "?" : sprintf("%.1f", median(list))
}
END {
    print "# bytes fm mp-fm1 mp-fm2 mp-fm1/fm% mp-fm2/fm% vi-send vi-rdma bip bip/vi% am-medium am-medium/vi% am-long am-long/vi%"
    n = 0; for (s in sizes) list[++n] = s + 0
    for (i = 2; i <= n; i++) { t = list[i]; for (j = i - 1; j >= 1 && list[j] > t; j--) list[j + 1] = list[j]; list[j + 1] = t }
    for (i = 1; i <= n; i++) {
        s = list[i]
        fm = m("fm", s); a = m("mp-fm1", s); b = m("mp-fm2", s)
        vs = m("vi-send", s); vr = m("vi-rdma", s)
        bip = m("bip", s); am = m("am-medium", s); al = m("am-long", s)
        bipvi = s <= eager + 0 ? "vi-send" : "vi-rdma"; amvi = s <= 4096 ? "vi-send" : "vi-rdma"
        printf "%d %s %s %s %s %s %s %s %s %s %s %s %s %s\n", s, fm, a, b, ratio("mp-fm1", "fm", s), ratio("mp-fm2", "fm", s), \
               vs == "" ? "?" : vs, vr, bip, ratio("bip", bipvi, s), am == "" ? "?" : am, ratio("am-medium", amvi, s), \
               al == "" ? "?" : al, ratio("am-long", "vi-rdma", s)
    }
}' "$RAW" > "$OUT/layering.dat"
cat "$OUT/layering.dat"
if command -v gnuplot > /dev/null; then
    gnuplot <<GP
set terminal svg size 800,500 dynamic
set output "$OUT/layering.svg"
set title "Layering: % of the layer below delivered upward (one-way streaming, median of $R rounds)"
set logscale x 2
set xlabel "message size (bytes)"
set ylabel "% of the layer below"
set yrange [0:*]
set key left top
set datafile missing "?"
plot "$OUT/layering.dat" using 1:5 with linespoints title "tagged layer as FM 1.x client / FM", \
     "" using 1:6 with linespoints title "tagged layer with FM 2.x features / FM", \
     "" using 1:10 with linespoints title "BIP / raw VI (send, RDMA above the switch point)", \
     "" using 1:12 with linespoints title "AM-2 medium / raw VI (send, RDMA above 4 KB)", \
     "" using 1:14 with linespoints title "AM-2 long / raw VI RDMA write", \
     90 with lines dashtype 2 title "90%"
GP
    echo "plot: $OUT/layering.svg"
fi
