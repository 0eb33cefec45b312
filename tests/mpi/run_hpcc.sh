#!/usr/bin/env bash
# run_hpcc.sh HPCCINF LAUNCHER... HPCC
# Runs the HPC Challenge suite (Debian's hpcc, unchanged) in a scratch
# directory holding HPCCINF as hpccinf.txt, and checks hpccoutf.txt: the run
# reached its end with Success=1, HPL and PTRANS passed their residual checks
# and failed none, RandomAccess found no errors, STREAM validated, no node
# reported an error, the parallel FFT's error is at rounding level, and b_eff
# (the latency/bandwidth section) produced its figures.
set -u
inf=$1; shift
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
out=$dir/hpccoutf.txt
fail() {
    echo "run_hpcc: FAIL: $*" >&2
    echo "--- job output:" >&2; tail -20 "$dir/log" >&2
    [ -f "$out" ] && { echo "--- hpccoutf.txt (checks):" >&2
        grep -E -i 'PASSED|FAILED|errors|Success|Validat|with error|maxErr' "$out" >&2; }
    exit 1
}
cp "$inf" "$dir/hpccinf.txt" || exit 1
(cd "$dir" && "$@") >"$dir/log" 2>&1
status=$?
[ $status -eq 0 ] || fail "the job exited with status $status"
[ -f "$out" ] || fail "no hpccoutf.txt"
grep -q '^End of HPC Challenge tests\.' "$out" || fail "hpccoutf.txt does not reach the end of the tests"
grep -q '^Success=1$' "$out" || fail "the summary does not say Success=1"
grep -E -q '\.\.\.\.\.\. PASSED$' "$out" || fail "HPL's residual check did not pass"
grep -q 'FAILED' "$out" && fail "a check reports FAILED"
bad=$(grep -E 'tests completed and failed residual checks' "$out" | grep -v -E '^ *0 tests' || true)
[ -z "$bad" ] || fail "residual checks failed: $bad"
npass=$(grep -c -E 'tests completed and passed residual checks' "$out")
[ "$npass" -ge 2 ] || fail "HPL and PTRANS did not both report passed residual checks"
grep -q '^PTRANS_residual=' "$out" || fail "no PTRANS result"
grep -E '^(MPIRandomAccess|MPIRandomAccess_LCG)_Errors=' "$out" | grep -v -q '=0$' &&
    fail "RandomAccess found errors"
grep -q 'errors in .* locations (failed)' "$out" && fail "RandomAccess verification failed"
grep -q -i 'Failed Validation' "$out" && fail "STREAM failed validation"
grep -E 'Node\(s\) with error' "$out" | grep -v -q 'error 0$' && fail "a node reported an error"
fft=$(sed -n 's/^MPIFFT_maxErr=//p' "$out")
[ -n "$fft" ] || fail "no MPIFFT_maxErr"
awk -v e="$fft" 'BEGIN {exit !(e + 0 < 1e-10)}' || fail "MPIFFT error $fft is not at rounding level"
for k in MaxPingPongLatency_usec MinPingPongBandwidth_GBytes NaturallyOrderedRingBandwidth_GBytes; do
    grep -q -E "^$k=[0-9.e+-]+$" "$out" || fail "b_eff did not report $k"
done
sed -n -E 's/^(HPL_Tflops|PTRANS_GBs|MPIRandomAccess_GUPs|MPIFFT_Gflops|MaxPingPongLatency_usec|MinPingPongBandwidth_GBytes)=/run_hpcc: \1 = /p' "$out"
echo "run_hpcc: HPL, PTRANS, RandomAccess, STREAM, FFT and b_eff checks passed"
