#!/usr/bin/env bash
# NAS IS side by side with NPB 3.4 IS (MPI and OpenMP) in one run, p = 2:
# bsp on threads and under mpirun, each beside the NPB build of the same kind.
#
#   bash benchmarks/nas_vs_npb.sh NPB_DIR [CLASSES] [REPS]
#
# NPB_DIR holds NPB3.4-MPI/bin/is.<class>.x and NPB3.4-OMP/bin/is.<class>.x,
# NPB 3.4's IS built for the classes outside this repository (this
# script only runs them). CLASSES defaults to "B C", REPS
# (runs of each program per class, alternating) to 3. Prints every run's
# Mop/s and, per class, the best and median of each with the ratios of
# the bests, and each bsp run against its NPB peer's run beside it (the
# median of those is the target's reading); writes
# the runs as JSON lines to benchmarks/data/nas_vs_npb.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
NPB=${1:?usage: nas_vs_npb.sh NPB_DIR [CLASSES] [REPS]}
CLASSES=${2:-B C}
REPS=${3:-3}
OUT=benchmarks/data/nas_vs_npb.jsonl
ROOT=()
[ "$(id -u)" -eq 0 ] && ROOT=(--allow-run-as-root)

cargo build --release --features mpi --example nas_is >&2
EX=${CARGO_TARGET_DIR:-target}/release/examples

# mops LINE...: the Mop/s figure of an NPB report.
npb_mops() { awk '/Mop\/s total/ { print $NF }'; }
# bsp_mops: the Mop/s figure of a verified `nas_is --json` run.
bsp_mops() { python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["verified"]; print(round(r["mops"], 1))'; }

: >"$OUT"
for class in $CLASSES; do
    for bin in "$NPB/NPB3.4-MPI/bin/is.$class.x" "$NPB/NPB3.4-OMP/bin/is.$class.x"; do
        [ -x "$bin" ] || { echo "missing $bin: build NPB IS class $class first" >&2; exit 1; }
    done
    for rep in $(seq "$REPS"); do
        bsp=$("$EX/nas_is" --class "$class" --procs 2 --json | bsp_mops)
        bsp_mpi=$(mpirun "${ROOT[@]}" -np 2 "$EX/nas_is" --class "$class" --json | bsp_mops)
        mpi=$(mpirun "${ROOT[@]}" -np 2 "$NPB/NPB3.4-MPI/bin/is.$class.x" | npb_mops)
        omp=$(OMP_NUM_THREADS=2 "$NPB/NPB3.4-OMP/bin/is.$class.x" | npb_mops)
        echo "class $class run $rep: bsp $bsp, bsp under MPI $bsp_mpi, NPB MPI $mpi, NPB OpenMP $omp Mop/s"
        for impl in "bsp nas_is|$bsp" "bsp nas_is, MPI, 2 processes|$bsp_mpi" "NPB 3.4 IS, MPI, 2 processes|$mpi" "NPB 3.4 IS, OpenMP, 2 threads|$omp"; do
            printf '{"class":"%s","implementation":"%s","run":%d,"mops":%s}\n' \
                "$class" "${impl%%|*}" "$rep" "${impl##*|}" >>"$OUT"
        done
    done
done
python3 - "$OUT" <<'PY'
import json, sys
from statistics import median
rows = [json.loads(l) for l in open(sys.argv[1])]
THREADS, MPI = "bsp nas_is", "bsp nas_is, MPI, 2 processes"
PEERS = {THREADS: "NPB 3.4 IS, OpenMP, 2 threads", MPI: "NPB 3.4 IS, MPI, 2 processes"}
for c in sorted({r["class"] for r in rows}):
    runs = {}
    for r in rows:
        if r["class"] == c:
            runs.setdefault(r["implementation"], {})[r["run"]] = r["mops"]
    best = {impl: max(by_run.values()) for impl, by_run in runs.items()}
    mid = {impl: median(by_run.values()) for impl, by_run in runs.items()}
    print(f"class {c}, best and median of runs (bsp threads / this, bsp under MPI / this, best against best):")
    for impl, m in best.items():
        print(f"  {impl:32} {m:8.1f} Mop/s (median {mid[impl]:7.1f})   "
              f"{best[THREADS] / m:5.2f}x   {best[MPI] / m:5.2f}x")
    # The target's reading: each bsp run against its peer's run beside it.
    for mine, peer in PEERS.items():
        ratios = [runs[mine][k] / runs[peer][k] for k in sorted(runs[mine]) if k in runs[peer]]
        shown = ", ".join(f"{x:.2f}" for x in ratios)
        print(f"  {mine} / {peer}, run by run: {shown}; median {median(ratios):.2f}x")
PY
