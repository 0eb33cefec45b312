#!/usr/bin/env bash
# count.sh - instructions one 16-byte message costs the sender and the
# receiver, by callgrind (load-independent): VI send/recv, AM short request
# and reply, a Split-C store, and UCX's active message over shared memory
# (ucx_perftest -t ucp_am_lat -s 16, UCX_TLS=sm,self), side by side; with
# --ofi also the libfabric provider (libviastack-fi.so) under fi_pingpong,
# alone (-e msg) and under ofi_rxm (-e rdm, the route of Open MPI's mtl:ofi).
#
#   bench/instr/count.sh [--build DIR] [--out DIR] [--n1 N] [--n2 N] [--ofi] [--check]
#
# Method (docs/logp.md, "Instructions per message"):
#  * Each program runs under callgrind twice, with N1 and N2 messages; a
#    figure per message is (inclusive Ir at N2 - at N1) / (N2 - N1), so start-up,
#    connection set-up and the warm-up cancel.
#  * Only functions that run once per message, when there is one, are
#    counted (what --toggle-collect on them would count): the polls that find
#    nothing (VipRecvDone, AM_Poll, splitc poll, ucp_worker_progress spinning
#    on an empty FIFO) never enter them, so idle polling is excluded without
#    guessing its cost.  What each side counts is listed with the figure.
#  * UCX's transport-level receive (uct_mm's FIFO read) is inlined into
#    ucp_worker_progress in the Debian libraries and has no symbol of its own:
#    its receive figure is the AM dispatch (ucp_am_handler) only, which the
#    table says.
#  * --ofi counts the provider's own calls only (fi_send/fi_inject, the
#    completion handling, the receive repost), VIPL inside them included;
#    ofi_rxm and fi_pingpong around them are not counted.
# Writes DIR/instr.json and DIR/instr.md and prints the table; --check exits
# non-zero unless every figure is a finite positive count below 10^6.
set -euo pipefail
me=count.sh
# shellcheck source=count_args.sh
. "$(dirname "$0")/count_args.sh"

here=$(cd "$(dirname "$0")" && pwd)
build="$here/../../build"
out=instr-count
n1=2000
n2=6000
check=0
ofi=0
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --n1) n1=$2; shift 2 ;;
        --n2) n2=$2; shift 2 ;;
        --check) check=1; shift ;;
        --ofi) ofi=1; shift ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "count.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
count_check_n "$n1" "$n2"
count_need valgrind "Debian: apt-get install valgrind"
count_need callgrind_annotate "part of valgrind"
build=$(cd "$build" && pwd)
run="$build/vipl/launcher/vipl-run"
for p in "$run" "$build/vipl/examples/vi_pingpong" "$build/am/am_pingpong" "$build/splitc/splitc_stream"; do
    [ -x "$p" ] || { echo "count.sh: $p not built (cmake --build $build --target vipl-run vi_pingpong am_pingpong splitc_stream)" >&2; exit 2; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
raw="$out/raw"
mkdir -p "$raw"

cg() { echo valgrind --tool=callgrind --dump-instr=no "--callgrind-out-file=$raw/$1.%q{VIASTACK_RANK}.out"; }

# Two-rank viastack programs: rank 0 and rank 1 each write their profile.
profile_job() {  # name N command...
    local name=$1 n=$2; shift 2
    if ! timeout 600 "$run" -n 2 -- $(cg "$name.$n") "$@" >"$raw/$name.$n.log" 2>&1; then
        echo "count.sh: $name ($*) failed, see $raw/$name.$n.log" >&2; exit 1
    fi
}
for n in "$n1" "$n2"; do
    profile_job vi "$n" "$build/vipl/examples/vi_pingpong" -s 16 -n "$n" -w 100
    profile_job am "$n" "$build/am/am_pingpong" "$n" 100 am
    profile_job splitc "$n" "$build/splitc/splitc_stream" "$n" 1
done

# The libfabric provider under fi_pingpong: the script runs callgrind itself.
if [ "$ofi" = 1 ]; then
    command -v fi_pingpong >/dev/null || { echo "count.sh: --ofi needs fi_pingpong (Debian: apt-get install libfabric-bin)" >&2; exit 2; }
    [ -f "$build/ofi/libviastack-fi.so" ] || { echo "count.sh: --ofi needs $build/ofi/libviastack-fi.so (cmake --build $build --target viastack-fi)" >&2; exit 2; }
    for ep in msg rdm; do
        for n in "$n1" "$n2"; do
            port=$(( 20000 + RANDOM % 20000 ))
            if ! timeout 600 "$run" -n 2 -- sh "$here/ofi_pingpong.sh" "$raw/ofi_$ep.$n" "$ep" "$port" "$n" \
                    >"$raw/ofi_$ep.$n.log" 2>&1; then
                echo "count.sh: fi_pingpong -e $ep under callgrind failed, see $raw/ofi_$ep.$n.log" >&2; exit 1
            fi
        done
    done
fi

# UCX: server and client of ucp_am_lat, each under callgrind.
ucx=$(command -v ucx_perftest || true)
if [ -n "$ucx" ]; then
    for n in "$n1" "$n2"; do
        port=$(( 20000 + RANDOM % 20000 ))
        UCX_TLS=sm,self timeout 600 valgrind --tool=callgrind --dump-instr=no "--callgrind-out-file=$raw/ucx.$n.1.out" \
            "$ucx" -p "$port" >"$raw/ucx.$n.server.log" 2>&1 &
        server=$!
        # Wait for the server's listening socket, however slowly valgrind
        # starts it under load (an early server failure is its client's to report).
        "$here/../../tools/wait-listen" "$port" 60 "$server" || true
        ok=1
        UCX_TLS=sm,self timeout 600 valgrind --tool=callgrind --dump-instr=no "--callgrind-out-file=$raw/ucx.$n.0.out" \
            "$ucx" localhost -p "$port" -t ucp_am_lat -s 16 -n "$n" -w 100 >"$raw/ucx.$n.client.log" 2>&1 || ok=0
        [ "$ok" = 1 ] || kill "$server" 2>/dev/null || true  # a server whose client failed waits for no one
        wait "$server" || true
        [ "$ok" = 1 ] || { echo "count.sh: ucx_perftest under callgrind failed, see $raw/ucx.$n.client.log" >&2; exit 1; }
    done
fi

python3 - "$raw" "$out" "$n1" "$n2" "$check" "${ucx:+yes}" "$ofi" <<'PY'
import json, math, re, subprocess, sys
raw, out, n1, n2, check, have_ucx = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6] == "yes"
want_ofi = sys.argv[7] == "1"

def inclusive(path):
    """Function name -> inclusive Ir, from callgrind_annotate."""
    # cwd "/": callgrind_annotate shortens file names relative to its working
    # directory, and from inside the source tree of a -g build one function's
    # cost would be split over two names.
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                          capture_output=True, text=True, check=True, cwd="/").stdout
    cost = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?\S*?:(.+?) \[", line)
        if not m:
            continue
        name = m.group(2)
        cost[name] = cost.get(name, 0) + int(m.group(1).replace(",", ""))
    return cost

def pick(cost, fn):
    """Inclusive Ir of fn: the exact name, or the name with its parameter list."""
    return sum(v for k, v in cost.items() if k == fn or k.startswith(fn + "("))

# (row, side, program, rank, [(function, sign)], what it counts)
P = "nicfw::Firmware::rx_packet_try"
rows = [
    ("vi send/recv", "sender", "vi", 0, [("VipPostSend", 1)], "VipPostSend (the inline transmit included)"),
    ("vi send/recv", "receiver", "vi", 1, [(P, 1), ("VipPostRecv", 1)],
     "rx_packet_try (the firmware taking the packet from the wire into the posted buffer, the completion) + VipPostRecv"),
    ("am request", "sender", "am", 0, [("AMVIA_Request", 1)], "AM_Request4 (AMVIA_Request, VipPostSend inside)"),
    # run_request reposts the request's receive itself: its VipPostRecv is
    # inside run_request's inclusive cost (counting it again counted it twice).
    ("am request", "receiver", "am", 1, [(P, 1), ("amvia::run_request", 1), ("AMVIA_Reply", -1)],
     "rx_packet_try + run_request (dispatch, handler, VipPostRecv) - AMVIA_Reply (the reply's send, counted in its row)"),
    ("am reply", "sender", "am", 1, [("AMVIA_Reply", 1)], "AM_Reply4 inside the handler (AMVIA_Reply)"),
    ("am reply", "receiver", "am", 0, [(P, 1), ("amvia::run_reply", 1), ("VipPostRecv", 1)],
     "rx_packet_try + run_reply + VipPostRecv"),
    ("splitc store", "sender", "splitc", 0, [("VipPostSend", 1)],
     "VipPostSend of the store (the runtime's own packing of the store, ~200, not counted: splitc_store_4 also waits for credits)"),
    ("splitc store", "receiver", "splitc", 1, [(P, 1), ("splitc::rt::(anonymous namespace)::serve", 1)],
     "rx_packet_try + serve (dispatch, VipPostRecv, the share of the STORE_ACKs)"),
]
if have_ucx:
    rows += [
        ("ucx am (ucp_am_send_nbx)", "sender", "ucx", 0, [("ucp_am_send_nbx", 1)], "ucp_am_send_nbx (uct_mm's short send inside)"),
        ("ucx am (ucp_am_send_nbx)", "receiver", "ucx", 0, [("ucp_am_handler", 1)],
         "ucp_am_handler, the AM dispatch only (uct_mm's FIFO read is inlined into ucp_worker_progress, no symbol)"),
    ]

if want_ofi:
    # fi_pingpong: each rank sends once and receives once per iteration; a
    # 16-byte send is fi_inject on a msg endpoint, and under rdm rxm's inject
    # (its 72-byte header and the payload fit the provider's inject size) or,
    # for a packet past it, its eager fi_send: both are counted, one runs.
    R = [(P, 1), ("vfi::ep_process", 1), ("vfi::m_recv", 1)]
    rows += [
        ("ofi msg (fi_pingpong -e msg)", "sender", "ofi_msg", 0, [("vfi::m_inject", 1)],
         "fi_inject (VipPostSend inside)"),
        ("ofi msg (fi_pingpong -e msg)", "receiver", "ofi_msg", 1, R,
         "rx_packet_try + ep_process (the receive's, the send's and the credit write's completions) + fi_recv (the repost, its credit write included)"),
        ("ofi rdm (fi_pingpong -e rdm)", "sender", "ofi_rdm", 0, [("vfi::m_inject", 1), ("vfi::m_send", 1)],
         "fi_inject (or fi_send) from ofi_rxm (VipPostSend inside)"),
        ("ofi rdm (fi_pingpong -e rdm)", "receiver", "ofi_rdm", 1, R,
         "rx_packet_try + ep_process (the receive's and the send's completions) + fi_recv (rxm's repost, its share of credit writes)"),
    ]

cache = {}
def cost(prog, n, rank):
    key = (prog, n, rank)
    if key not in cache:
        cache[key] = inclusive(f"{raw}/{prog}.{n}.{rank}.out")
    return cache[key]

result = {"schema": "viastack-instr/1", "n1": n1, "n2": n2, "bytes": 16,
          "method": "inclusive Ir of the functions that run once per message, (Ir(N2) - Ir(N1)) / (N2 - N1); "
                    "idle polls never enter them", "rows": []}
for row, side, prog, rank, fns, what in rows:
    parts = {}
    total = 0.0
    for fn, sign in fns:
        d = (pick(cost(prog, n2, rank), fn) - pick(cost(prog, n1, rank), fn)) / (n2 - n1)
        parts[fn] = round(sign * d, 1)
        total += sign * d
    result["rows"].append({"row": row, "side": side, "instructions": round(total, 1), "functions": parts, "counts": what})
if not have_ucx:
    result["ucx"] = "not installed (Debian: apt-get install ucx-utils)"

with open(f"{out}/instr.json", "w") as f:
    json.dump(result, f, indent=1)
lines = [f"Instructions per 16-byte message (callgrind, (Ir(N={n2}) - Ir(N={n1})) / {n2 - n1})", "",
         "| message | sender | receiver | sender counts | receiver counts |", "| --- | ---: | ---: | --- | --- |"]
by = {}
for r in result["rows"]:
    by.setdefault(r["row"], {})[r["side"]] = r
for name, sides in by.items():
    s, rc = sides["sender"], sides["receiver"]
    lines.append(f"| {name} | {s['instructions']:.0f} | {rc['instructions']:.0f} | {s['counts']} | {rc['counts']} |")
with open(f"{out}/instr.md", "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
print(f"\nJSON: {out}/instr.json")
if check:
    bad = [r for r in result["rows"] if not (math.isfinite(r["instructions"]) and 0 < r["instructions"] < 1e6)]
    for fnrows in result["rows"]:
        for fn, v in fnrows["functions"].items():
            if v == 0:
                bad.append({"row": fnrows["row"], "side": fnrows["side"], "instructions": f"{fn} never ran"})
    for r in bad:
        print(f"count.sh: not a sane count: {r['row']} {r['side']}: {r['instructions']}", file=sys.stderr)
    sys.exit(1 if bad else 0)
PY
