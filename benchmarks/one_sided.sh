#!/usr/bin/env bash
# bsp under MPI beside a hand-written BSP superstep in MPI one-sided
# communication (benchmarks/one_sided/put_fence.c: MPI_Put into
# MPI_Win_allocate windows and one MPI_Win_fence), in one run:
#
#   bash benchmarks/one_sided.sh [NP] [RUNS] [ROUNDS]
#
# Builds bench_one_sided (cargo, --features mpi) and put_fence (mpicc),
# then runs, RUNS times (default 3) in turn: put_fence at MPI's
# default thread level (MPI_Init) and at bsp's (MPI_THREAD_SERIALIZED,
# which costs every fence more on Open MPI); bsp with its rows
# through a window (BSP_MPI_SYNC=fence, the default); bsp with its rows
# through MPI_Allgather (BSP_MPI_SYNC=allgather, as before the window).
# Each program takes ROUNDS rounds (default 7) and prints its minimum and
# median per measurement (see put_fence.c). Prints, per measurement, the
# median over runs of each program's median and the ratios bsp / MPI
# (for GB/s, bsp's share of MPI's), then each run's ratios side by side;
# writes every line to
# benchmarks/data/one_sided/latest.jsonl (or $OUT).
set -euo pipefail
cd "$(dirname "$0")/.."
NP=${1:-2}
RUNS=${2:-3}
ROUNDS=${3:-7}
OUT=${OUT:-benchmarks/data/one_sided/latest.jsonl}
MPIRUN=(mpirun -np "$NP")
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
[ "$NP" -gt "$(nproc)" ] && MPIRUN+=(--oversubscribe)

cargo build --release -p bsp-benchmarks --features mpi --example bench_one_sided >&2
EX=${CARGO_TARGET_DIR:-target}/release/examples
mpicc -O2 benchmarks/one_sided/put_fence.c -o "$EX/put_fence"

: >"$OUT"
for run in $(seq "$RUNS"); do
    echo "run $run of $RUNS" >&2
    for level in single serialized; do
        "${MPIRUN[@]}" "$EX/put_fence" "$ROUNDS" $level | sed "s/^{/{\"run\":$run,\"rows\":\"-\",/" >>"$OUT"
    done
    for sync in fence allgather; do
        "${MPIRUN[@]}" -x BSP_MPI_SYNC=$sync "$EX/bench_one_sided" --rounds "$ROUNDS" |
            sed "s/^{/{\"run\":$run,\"rows\":\"$sync\",/" >>"$OUT"
    done
done
python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def key(r):
    return "mpi " + r["threads"] if r["impl"] == "mpi_one_sided" else "bsp " + r["rows"]
def median_of(r):
    return next(v for k, v in r.items() if k.endswith("_median"))
whats = []
for r in rows:
    if r["what"] not in whats:
        whats.append(r["what"])
np = rows[0]["np"]
print(f"np = {np}, median over runs of each run's median; ratios are bsp (rows by fence) /")
print("MPI one-sided at the single and at the serialized thread level, and bsp with its")
print("rows by MPI_Allgather / MPI single (for GB/s, bsp's share of MPI's)")
print(f"{'':10} {'unit':>11} {'MPI single':>10} {'serialized':>10} {'bsp fence':>10} {'/single':>8} {'/serial':>8} {'bsp allgather':>14} {'/single':>8}")
for w in whats:
    by = {}
    for r in rows:
        if r["what"] == w:
            by.setdefault(key(r), []).append(median_of(r))
    med = {k: statistics.median(v) for k, v in by.items()}
    sample = next(r for r in rows if r["what"] == w)
    unit = next(k[: -len("_median")] for k in sample if k.endswith("_median"))
    m1, m2 = med["mpi single"], med["mpi serialized"]
    f, a = med["bsp fence"], med["bsp allgather"]
    print(f"{w:10} {unit:>11} {m1:10.3f} {m2:10.3f} {f:10.3f} {f / m1:8.2f} {f / m2:8.2f} {a:14.3f} {a / m1:8.2f}")
# A launch of a program lands on one of this kind of VM's levels and
# keeps it (BENCHMARKS.md, section 14c): the ratios of each run, side by
# side, show how far one launch can move them.
runs = sorted({r["run"] for r in rows})
if len(runs) > 1:
    print()
    print("per run, bsp (rows by fence) / MPI single, then / MPI serialized:")
    print(f"{'':10} " + " ".join(f"{'run ' + str(n):>13}" for n in runs))
    for w in whats:
        cells = []
        for n in runs:
            got = {key(r): median_of(r) for r in rows if r["what"] == w and r["run"] == n}
            f = got["bsp fence"]
            cells.append(f"{f / got['mpi single']:.2f} / {f / got['mpi serialized']:.2f}")
        print(f"{w:10} " + " ".join(f"{c:>13}" for c in cells))
PY
