#!/usr/bin/env bash
# The radix sort's time against the input distribution and against n, as in
# Bader, Helman and JaJa (1995), Sect. 5 (Figs. 4 and 5): the paper's
# distributions [R], [S], [C] and [N] and this project's [G] at n = 2^24,
# and [R] for n = 2^20 to 2^28, each in three modes: with the
# constant-digit skip (the default), without it (--keep-constant-digits:
# every digit of the 32-bit key is sorted, in the order the sorter picks),
# and as the paper sorts (every digit, least significant first: --order
# lsd). p = 2, 32-bit keys, the best of REPS runs (default 3) of
# examples/radix_sort.
#
#   bash benchmarks/distributions.sh [REPS]
#
# Writes benchmarks/data/distributions.jsonl and draws every picture of
# BENCHMARKS.md from the recorded data (benchmarks/distributions.svg among
# them).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-3}
OUT=benchmarks/data/distributions.jsonl
cargo build --release --example radix_sort >&2
EX=${CARGO_TARGET_DIR:-target}/release/examples

run() { # run N DIST: every mode, REPS times, as JSON lines
    for mode in "" --keep-constant-digits "--keep-constant-digits --order lsd"; do
        for _ in $(seq "$REPS"); do
            # shellcheck disable=SC2086 # a mode is several words
            "$EX/radix_sort" --procs 2 --n "$1" --dist "$2" --no-verify --json $mode >>"$OUT"
        done
    done
}
: >"$OUT"
for dist in R S C N G; do
    echo "== dist [$dist], n = 2^24" >&2
    run $((1 << 24)) "$dist"
done
for log in 20 22 26 28; do
    echo "== dist [R], n = 2^$log" >&2
    run $((1 << log)) R
done
cargo run --release -p bsp-benchmarks --bin plot -- benchmarks/data benchmarks
