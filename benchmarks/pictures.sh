#!/usr/bin/env bash
# Measures the benchmarks whose pictures BENCHMARKS.md shows and draws
# them: `bash benchmarks/pictures.sh` from the repository root. Writes the
# figures as JSON lines under benchmarks/data/ (each benchmark's --json
# output, and one radix sort's profile trace), then the SVG pictures under
# benchmarks/ (cargo run -p bsp-benchmarks --bin plot). Everything it needs
# is a cargo dependency; nothing else is installed. With --draw-only it
# draws from the recorded data without measuring.
#
# Sizes are chosen to finish in a few minutes on 2 cores; set BSP_MIB,
# SORT_N and NAS_CLASSES to measure larger cases. NPB_DIR (laid out as for
# benchmarks/nas_vs_npb.sh, NPB's IS built for NAS_CLASSES) also measures
# NPB beside NAS IS and rewrites benchmarks/data/npb.jsonl; without it the
# recorded NPB figures are drawn.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=benchmarks/data

if [ "${1:-}" != "--draw-only" ]; then
    cargo build --release --workspace --examples
    EX=${CARGO_TARGET_DIR:-target}/release/examples
    echo "== router scaling (bench_router, p = 2, 4, 8)"
    "$EX/bench_router" --procs 2,4,8 --mib "${BSP_MIB:-128}" --reps 3 --rounds 2 \
        --shapes h1,shift,random --json >"$DATA/router.jsonl"
    echo "== sort against peers (bench_sort, p = 2)"
    "$EX/bench_sort" --n "${SORT_N:-16777216}" --dist R,S --kind keys --reps 3 --json \
        >"$DATA/sort.jsonl"
    echo "== NAS IS (nas_is, p = 2; with NPB_DIR, NPB 3.4 IS beside it)"
    : >"$DATA/nas_is.jsonl"
    [ -n "${NPB_DIR:-}" ] && : >"$DATA/npb.jsonl"
    ROOT=()
    [ "$(id -u)" -eq 0 ] && ROOT=(--allow-run-as-root)
    for class in ${NAS_CLASSES:-A B}; do
        "$EX/nas_is" --class "$class" --procs 2 --json >>"$DATA/nas_is.jsonl"
        # NPB_DIR as for nas_vs_npb.sh: NPB's own builds, run right after
        # bsp's so that the picture compares figures of the same minutes.
        if [ -n "${NPB_DIR:-}" ]; then
            mpi=$(mpirun "${ROOT[@]}" -np 2 "$NPB_DIR/NPB3.4-MPI/bin/is.$class.x" | awk '/Mop\/s total/ {print $NF}')
            omp=$(OMP_NUM_THREADS=2 "$NPB_DIR/NPB3.4-OMP/bin/is.$class.x" | awk '/Mop\/s total/ {print $NF}')
            for row in "MPI, 2 processes|$mpi" "OpenMP, 2 threads|$omp"; do
                printf '{"class":"%s","implementation":"NPB 3.4 IS, %s","mops":%s,"source":"pictures.sh, %s"}\n' \
                    "$class" "${row%%|*}" "${row##*|}" "$(date -u +%F)" >>"$DATA/npb.jsonl"
            done
        fi
    done
    echo "== one radix sort's timeline (BSP_PROFILE=trace)"
    BSP_PROFILE=trace BSP_TRACE_FILE="$DATA/radix_sort_trace.json" \
        "$EX/radix_sort" --n 4194304 --procs 2 --no-verify
fi
echo "== pictures"
cargo run --release -p bsp-benchmarks --bin plot -- "$DATA" benchmarks
