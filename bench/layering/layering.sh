#!/bin/sh
# layering.sh - the layering study (docs/bip.md): "% of the layer below
# delivered upward" by message size, for
#   mp-fm1 / FM   a tagged layer written as an FM 1.x client
#   mp-fm2 / FM   the same layer using FM 2.x's gather and layer interleaving
#   BIP / VI      BIP over the best raw VI bandwidth at that size (vi-send, vi-rdma)
#   AM medium / VI, AM long / VI
#
#   layering.sh BUILD_DIR [OUT_DIR] [rounds]
#
# FM and its two clients run in one job, interleaved per size and round; VI,
# BIP and AM run as separate jobs, interleaved round by round (vi, bip, am,
# vi, ...).  Each number is the median over the rounds; each fraction is the
# ratio of the medians.  Writes OUT_DIR/layering.txt (raw rows),
# layering.dat (the table) and layering.svg (the plot, with gnuplot).
set -eu
B=${1:?usage: layering.sh BUILD_DIR [OUT_DIR] [rounds]}
OUT=${2:-layering-report}
R=${3:-5}
MB=${LAYERING_MB:-4}
mkdir -p "$OUT"
RUN="$B/vipl/launcher/vipl-run -n 2 --timeout 900 $B/bench/layering/layering_bw"
RAW="$OUT/layering.txt"
: > "$RAW"
$RUN fm -r "$R" -m "$MB" >> "$RAW"
i=0
while [ $i -lt "$R" ]; do
    for m in vi bip am; do $RUN $m -r 1 -m "$MB" >> "$RAW"; done
    i=$((i + 1))
done
if grep -q ERROR "$RAW"; then
    grep ERROR "$RAW" >&2
    exit 1
fi
# Medians per (layer, size), then the table.
awk '
$1 !~ /^#/ && NF == 5 { v[$1 " " $2] = v[$1 " " $2] " " $5; sizes[$2] = 1 }
function median(s,   a, n, i, j, t) {
    n = split(s, a, " "); if (n == 0) return "";
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function pct(x, y) { return (x != "" && y != "" && y > 0) ? sprintf("%.1f", 100 * x / y) : "?" }
function m(l, s) { return ((l " " s) in v) ? median(v[l " " s]) : "" }
END {
    print "# bytes fm mp-fm1 mp-fm2 mp-fm1/fm% mp-fm2/fm% vi-best bip bip/vi% am-medium am-medium/vi% am-long am-long/vi%"
    n = 0; for (s in sizes) list[++n] = s + 0
    for (i = 2; i <= n; i++) { t = list[i]; for (j = i - 1; j >= 1 && list[j] > t; j--) list[j + 1] = list[j]; list[j + 1] = t }
    for (i = 1; i <= n; i++) {
        s = list[i]
        fm = m("fm", s); a = m("mp-fm1", s); b = m("mp-fm2", s)
        vs = m("vi-send", s); vr = m("vi-rdma", s); vi = vs + 0 > vr + 0 ? vs : vr
        bip = m("bip", s); am = m("am-medium", s); al = m("am-long", s)
        printf "%d %s %s %s %s %s %s %s %s %s %s %s %s\n", s, fm, a, b, pct(a, fm), pct(b, fm), vi, bip, pct(bip, vi), \
               am == "" ? "?" : am, pct(am, vi), al == "" ? "?" : al, pct(al, vi)
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
     "" using 1:9 with linespoints title "BIP / raw VI", \
     "" using 1:11 with linespoints title "AM-2 medium / raw VI", \
     "" using 1:13 with linespoints title "AM-2 long / raw VI", \
     90 with lines dashtype 2 title "90%"
GP
    echo "plot: $OUT/layering.svg"
fi
