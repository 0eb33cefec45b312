#!/usr/bin/env bash
# ofi_protocol.sh - which protocol an MPI message takes over viastack;ofi_rxm,
# per message size, in counts (load-independent): the provider's calls per
# message (fi_send, fi_inject, fi_recv, fi_read, fi_mr_reg, ...), VIPL's and
# nicfw's (VipPostSend, VipRegisterMem, staged packets, one-sided transfers)
# by callgrind, and how each RDMA read was served by perf's syscall counts:
# by the reader's NIC itself (a process_vm_readv in the receiver, one-sided)
# or by the target's firmware (a process_vm_writev in the sender: the
# one-sided attempt was declined).  docs/mpi.md, "256 KiB".
#
#   bench/instr/ofi_protocol.sh [--build DIR] [--out DIR] [--sizes "S..."]
#                               [--w1 N] [--w2 N] [--windows N] [--mode inline|thread]
#
# The program is bench/instr/mpi_stream.c (logp_mpi's bandwidth pattern:
# windows of 16 MPI_Isend, one 0-byte answer per window), built here with
# mpicc.  Under callgrind it runs with --w1 and --w2 windows (default 4 and
# 12); a figure per message is (calls at w2 - at w1) / (16 (w2 - w1)), so
# start-up, connection set-up and rxm's initial receive posts cancel.  The
# perf run (no valgrind: its timing decides the race it counts) uses
# --windows windows (default 100).  Writes DIR/protocol.md and prints it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../../build"
out=ofi-protocol
sizes="4096 65536 262144 1048576"
w1=4
w2=12
windows=100
mode=inline
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --w1) w1=$2; shift 2 ;;
        --w2) w2=$2; shift 2 ;;
        --windows) windows=$2; shift 2 ;;
        --mode) mode=$2; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "ofi_protocol.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
for v in "$w1" "$w2" "$windows"; do
    case "$v" in ''|*[!0-9]*) echo "ofi_protocol.sh: window counts must be positive integers, got '$v'" >&2; exit 2 ;; esac
done
if [ "$w1" -lt 1 ] || [ "$w2" -le "$w1" ]; then
    echo "ofi_protocol.sh: need 1 <= --w1 < --w2 (got $w1, $w2)" >&2; exit 2
fi
for s in $sizes; do
    case "$s" in ''|*[!0-9]*) echo "ofi_protocol.sh: sizes must be byte counts, got '$s'" >&2; exit 2 ;; esac
done
case "$mode" in inline|thread) ;; *) echo "ofi_protocol.sh: --mode is inline or thread, got '$mode'" >&2; exit 2 ;; esac
for t in mpicc mpirun valgrind python3; do
    command -v "$t" >/dev/null || { echo "ofi_protocol.sh: $t not found (Debian: openmpi-bin, libopenmpi-dev, valgrind, python3)" >&2; exit 2; }
done
build=$(cd "$build" && pwd)
[ -f "$build/ofi/libviastack-fi.so" ] || { echo "ofi_protocol.sh: $build/ofi/libviastack-fi.so not built (cmake --build $build --target viastack-fi)" >&2; exit 2; }
have_perf=0
if command -v perf >/dev/null && perf stat -e syscalls:sys_enter_process_vm_readv true >/dev/null 2>&1; then have_perf=1
else echo "ofi_protocol.sh: perf cannot count syscalls here (linux-perf, root or perf_event_paranoid <= 1): no CMA counts" >&2
fi
mkdir -p "$out/raw"
out=$(cd "$out" && pwd)
raw="$out/raw"
mpicc -O2 -o "$raw/mpi_stream" "$here/mpi_stream.c"

# mpirun over viastack;ofi_rxm; the wire files the job leaves are removed
# by tests/mpi/run_viastack.sh.
job() {
    "$here/../../tests/mpi/run_viastack.sh" mpirun --allow-run-as-root --oversubscribe -n 2 \
        -x FI_PROVIDER_PATH="$build/ofi" -x VIPL_NICFW_MODE="$mode" \
        --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include viastack "$@"
}
for s in $sizes; do
    for w in "$w1" "$w2"; do
        echo "ofi_protocol.sh: $s B, $w windows under callgrind" >&2
        job sh -c "exec valgrind --tool=callgrind --dump-instr=no --callgrind-out-file=$raw/cg.$s.$w.\$OMPI_COMM_WORLD_RANK.out $raw/mpi_stream $s $w" \
            >"$raw/cg.$s.$w.log" 2>&1 || { echo "ofi_protocol.sh: the callgrind run failed, see $raw/cg.$s.$w.log" >&2; exit 1; }
    done
    if [ "$have_perf" = 1 ]; then
        echo "ofi_protocol.sh: $s B, $windows windows under perf stat" >&2
        job sh -c "exec perf stat -x, -o $raw/perf.$s.\$OMPI_COMM_WORLD_RANK -e syscalls:sys_enter_process_vm_readv,syscalls:sys_enter_process_vm_writev $raw/mpi_stream $s $windows" \
            >"$raw/perf.$s.log" 2>&1 || { echo "ofi_protocol.sh: the perf run failed, see $raw/perf.$s.log" >&2; exit 1; }
    fi
done

# $sizes is a list of numbers (checked above): one argument each.
# shellcheck disable=SC2086
python3 - "$raw" "$out/protocol.md" "$w1" "$w2" "$windows" "$have_perf" "$mode" $sizes <<'PY'
import collections, re, sys
raw, md, w1, w2, windows, have_perf, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == "1", sys.argv[7]
sizes = sys.argv[8:]
WINDOW = 16

def calls(path):
    """Calls into each function (callgrind's calls= lines), by name without arguments."""
    names, n, cfn = {}, collections.Counter(), None
    def name(rest):
        m = re.match(r"\((\d+)\)(?: (.*))?", rest)
        if not m: return rest.split("(")[0]
        if m.group(2): names[m.group(1)] = m.group(2).split("(")[0]
        return names.get(m.group(1), m.group(1))
    with open(path) as f:
        for line in f:
            if line.startswith("fn="): name(line[3:].strip())
            elif line.startswith("cfn="): cfn = name(line[4:].strip())
            elif line.startswith("calls="): n[cfn] += int(line[6:].split()[0])
    return n

# row label -> functions whose calls it sums
ROWS = [
    ("fi_send / fi_sendmsg / fi_senddata", ["vfi::m_send", "vfi::m_sendv", "vfi::m_sendmsg", "vfi::m_senddata"]),
    ("fi_inject", ["vfi::m_inject", "vfi::m_injectdata"]),
    ("fi_recv", ["vfi::m_recv", "vfi::m_recvv", "vfi::m_recvmsg"]),
    ("fi_read", ["vfi::r_read", "vfi::r_readv", "vfi::r_readmsg"]),
    ("fi_write", ["vfi::r_write", "vfi::r_writev", "vfi::r_writemsg", "vfi::r_inject", "vfi::r_writedata", "vfi::r_injectdata"]),
    ("fi_mr_reg", ["vfi::mr_reg", "vfi::mr_regv", "vfi::mr_regattr"]),
    ("fi_close(mr)", ["vfi::mr_close"]),
    ("VipPostSend", ["VipPostSend"]),
    ("VipRegisterMem", ["VipRegisterMem"]),
    ("VipDeregisterMem", ["VipDeregisterMem"]),
    ("nicfw: packets sent staged", ["nicfw::Firmware::tx_one"]),
    ("nicfw: one-sided attempts", ["nicfw::Firmware::tx_onesided"]),
    ("nicfw: one-sided done", ["nicfw::Firmware::move_onesided"]),
]
nmsg = WINDOW * (w2 - w1)
table = {}
for s in sizes:
    for r in (0, 1):
        a, b = calls(f"{raw}/cg.{s}.{w1}.{r}.out"), calls(f"{raw}/cg.{s}.{w2}.{r}.out")
        for label, fns in ROWS:
            table[(label, s, r)] = sum(b[f] - a[f] for f in fns) / nmsg

def perf(path):
    v = {}
    for line in open(path):
        p = line.strip().split(",")
        if len(p) > 2 and p[0].replace(".", "").isdigit(): v[p[2].split("_")[-1]] = float(p[0])
    return v

lines = [f"# Calls per MPI message over viastack;ofi_rxm (nicfw {mode})", "",
         f"mpi_stream (windows of {WINDOW} MPI_Isend), callgrind, {w2} - {w1} windows differenced: "
         "calls per message, sender (s) / receiver (r).", "",
         "| per message | " + " | ".join(f"{s} B" for s in sizes) + " |",
         "| --- | " + " | ".join("---:" for _ in sizes) + " |"]
for label, _ in ROWS:
    cells = [f"{table[(label, s, 0)]:.2f} / {table[(label, s, 1)]:.2f}" for s in sizes]
    if any(abs(table[(label, s, r)]) >= 0.005 for s in sizes for r in (0, 1)):
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
if have_perf:
    lines += ["", f"Without valgrind, {windows} windows ({windows * WINDOW} messages), perf stat: cross-memory-attach "
              "calls per message.  A read the receiver's NIC did one-sided is a process_vm_readv in the receiver; "
              "one its firmware declined is served by the sender's firmware, a process_vm_writev in the sender.", "",
              "| per message | " + " | ".join(f"{s} B" for s in sizes) + " |",
              "| --- | " + " | ".join("---:" for _ in sizes) + " |"]
    n = windows * WINDOW
    rd, wr = [], []
    for s in sizes:
        snd, rcv = perf(f"{raw}/perf.{s}.0"), perf(f"{raw}/perf.{s}.1")
        rd.append(f"{rcv.get('readv', 0) / n:.3f}")
        wr.append(f"{snd.get('writev', 0) / n:.3f}")
    lines.append("| receiver process_vm_readv (one-sided read) | " + " | ".join(rd) + " |")
    lines.append("| sender process_vm_writev (read served by the target) | " + " | ".join(wr) + " |")
text = "\n".join(lines) + "\n"
open(md, "w").write(text)
print(text, end="")
PY
