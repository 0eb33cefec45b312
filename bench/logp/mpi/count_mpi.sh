#!/usr/bin/env bash
# count_mpi.sh - instructions per 16-byte MPI round trip, by callgrind
# (load-independent), over the transports logp's mpi layer compares:
#   viastack  pml cm + mtl ofi over viastack;ofi_rxm (nicfw, inline firmware)
#   shm       pml cm + mtl ofi over libfabric's shm (mtl_ofi_shm.so preloaded)
#   vader     pml ob1 + btl self,vader (Open MPI's own shared memory)
#
#   bench/logp/mpi/count_mpi.sh [--build DIR] [--out DIR] [--n1 N] [--n2 N] [--only T,...]
#
# Method (docs/mpi.md, "Instructions per MPI round trip"): mpi_count_pingpong
# runs N round trips in which no MPI_Recv waits (the ranks sequence through a
# shared flag outside MPI); both ranks run under callgrind collecting only
# inside MPI_Send and MPI_Recv (--toggle-collect), so what is counted is the
# library's work, not polls that found nothing.  Run at N1 and N2, a figure is
# (count at N2 - count at N1) / (N2 - N1), per round trip, both ranks summed:
# the set-up and the warm-up cancel.  Split by the object the instructions
# ran in (self cost): Open MPI (libmpi, libopen-pal, its pml/mtl/btl
# components), libfabric (ofi_rxm, shm), the viastack provider, VIPL (with
# nicfw, inlined in libvipl), libc, the rest.
# Writes DIR/mpi-instr.md and prints it.
set -euo pipefail
me=count_mpi.sh
# shellcheck source=../../instr/count_args.sh
. "$(dirname "$0")/../../instr/count_args.sh"

here=$(cd "$(dirname "$0")" && pwd)
build="$here/../../../build"
out=mpi-instr-count
n1=1000
n2=3000
only=viastack,shm,vader
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --n1) n1=$2; shift 2 ;;
        --n2) n2=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "count_mpi.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
count_check_n "$n1" "$n2"
for t in ${only//,/ }; do
    case "$t" in viastack|shm|vader) ;; *) echo "count_mpi.sh: unknown transport '$t' in --only (known: viastack, shm, vader)" >&2; exit 2 ;; esac
done
count_need valgrind "Debian: apt-get install valgrind"
count_need mpirun "Debian: apt-get install openmpi-bin"
build=$(cd "$build" && pwd)
prog="$build/bench/logp/mpi_count_pingpong"
shim="$build/bench/logp/logp_mtl_ofi_shm.so"
ofi="$build/ofi"
for p in "$prog" "$shim" "$ofi/libviastack-fi.so"; do
    [ -e "$p" ] || { echo "count_mpi.sh: $p not built (cmake --build $build --target mpi_count_pingpong logp_mtl_ofi_shm viastack-fi)" >&2; exit 2; }
done
mkdir -p "$out/raw"
out=$(cd "$out" && pwd)
raw="$out/raw"

selection() {
    case "$1" in
        viastack) echo --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include viastack -x "FI_PROVIDER_PATH=$ofi" ;;
        shm) echo --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include shm -x FI_PROVIDER=shm -x "LD_PRELOAD=$shim" ;;
        vader) echo --mca pml ob1 --mca btl self,vader ;;
    esac
}
wires() { ls /dev/shm/ 2>/dev/null | grep '^viastack-pmix-' | sort || true; }

for t in ${only//,/ }; do
    for n in "$n1" "$n2"; do
        before=$(wires)
        # shellcheck disable=SC2046
        if ! env -u VIASTACK_JOB -u VIASTACK_RANK -u VIASTACK_SIZE -u VIASTACK_BOOT -u VIASTACK_HOSTS -u VIASTACK_JOB_CPUS \
                timeout 900 mpirun --allow-run-as-root --oversubscribe -np 2 $(selection "$t") --bind-to none \
                valgrind --tool=callgrind --dump-instr=no "--callgrind-out-file=$raw/$t.$n.%q{OMPI_COMM_WORLD_RANK}.out" \
                '--toggle-collect=*MPI_Send' '--toggle-collect=*MPI_Recv' "$prog" "$n" >"$raw/$t.$n.log" 2>&1; then
            echo "count_mpi.sh: $t at N=$n failed, see $raw/$t.$n.log" >&2; exit 1
        fi
        for f in $(printf '%s\n%s\n%s\n' "$before" "$before" "$(wires)" | sort | uniq -u); do rm -f "/dev/shm/$f"; done
        for r in 0 1; do
            callgrind_annotate --inclusive=no --threshold=100 --show-percs=no "$raw/$t.$n.$r.out" >"$raw/$t.$n.$r.txt"
        done
    done
done

python3 - "$raw" "$out" "$n1" "$n2" "$only" <<'PY'
import re, sys
raw, out, n1, n2, only = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split(",")
GROUPS = [("Open MPI", ("libmpi", "libopen-pal", "libopen-rte", "mca_")),
          ("libfabric (rxm, shm)", ("libfabric",)),
          ("viastack provider", ("libviastack-fi",)),
          ("VIPL + nicfw", ("libvipl",)),
          ("libc, libm", ("libc.so", "libc-", "libm.so", "ld-linux")),]
def group(obj):
    base = obj.rsplit("/", 1)[-1]
    for name, prefixes in GROUPS:
        if any(base.startswith(p) for p in prefixes): return name
    return "other"
line = re.compile(r"^\s*([\d,]+)\s+\S.*?\[(.+?)\]\s*$")
total = re.compile(r"^\s*([\d,]+)\s+\(?.*PROGRAM TOTALS")
def counts(path):
    by, tot = {}, None
    for l in open(path):
        m = total.match(l)
        if m and tot is None:
            tot = int(m.group(1).replace(",", ""))
            continue
        m = line.match(l)
        if m:
            g = group(m.group(2))
            by[g] = by.get(g, 0) + int(m.group(1).replace(",", ""))
    return by, tot
names = [g for g, _ in GROUPS] + ["other"]
rows = []
for t in only:
    per, tot = {}, 0.0
    for r in (0, 1):
        a, ta = counts(f"{raw}/{t}.{n1}.{r}.txt")
        b, tb = counts(f"{raw}/{t}.{n2}.{r}.txt")
        for g in names: per[g] = per.get(g, 0.0) + (b.get(g, 0) - a.get(g, 0)) / (n2 - n1)
        tot += (tb - ta) / (n2 - n1)
    rows.append((t, per, tot))
label = {"viastack": "viastack;ofi_rxm (cm + mtl ofi)", "shm": "shm (cm + mtl ofi)", "vader": "vader (ob1 + btl vader)"}
md = [f"Instructions per 16-byte MPI round trip, both ranks, inside MPI_Send and MPI_Recv (callgrind, N = {n1} and {n2} differenced)", "",
      "| transport | " + " | ".join(names) + " | total |", "| --- |" + " ---: |" * (len(names) + 1)]
for t, per, tot in rows:
    md.append(f"| {label[t]} | " + " | ".join(f"{per[g]:.0f}" for g in names) + f" | {tot:.0f} |")
text = "\n".join(md) + "\n"
open(f"{out}/mpi-instr.md", "w").write(text)
print(text)
bad = [t for t, per, tot in rows if not (0 < tot < 1e6)]
if bad:
    print("count_mpi.sh: implausible totals for " + ", ".join(bad), file=sys.stderr); sys.exit(1)
PY
