# count_args.sh - checks shared by the callgrind counting scripts (count.sh,
# bench/logp/mpi/count_mpi.sh); sourced, not run.  Each exits 2 with a message
# that starts with the calling script's name ($me).

# The two message counts whose difference cancels start-up: 100 <= n1 < n2.
count_check_n() {
    case "$1$2" in *[!0-9]*|"") echo "$me: --n1 and --n2 want positive integers" >&2; exit 2 ;; esac
    if [ "$2" -le "$1" ] || [ "$1" -lt 100 ]; then
        echo "$me: need 100 <= --n1 < --n2 (got $1, $2)" >&2; exit 2
    fi
}

# A program the count needs, with how to get it.
count_need() {
    command -v "$1" >/dev/null || { echo "$me: $1 not found ($2)" >&2; exit 2; }
}
