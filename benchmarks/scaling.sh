#!/usr/bin/env bash
# Scaling in p on a machine with many cores, bsp beside its peers in one run:
# the superstep against an OpenMP barrier, l and g, routing against one
# memcpy, the radix sort against rdst, NAS IS against NPB's OpenMP build.
#
#   bash benchmarks/scaling.sh BIN_DIR OUT_DIR [PROCS]
#
# BIN_DIR holds binaries built elsewhere (the many-core machine builds
# nothing): bsp's harnesses bench_procs, bspbench, bench_router, bench_sort
# (benchmarks/examples/) and examples nas_is, radix_sort (statically linked for threads:
# RUSTFLAGS="-C target-feature=+crt-static" cargo build --release
# --workspace --examples --target x86_64-unknown-linux-gnu), omp_barrier
# (gcc -O2 -fopenmp -static benchmarks/floor/omp_barrier.c) and, optionally,
# is.B.x (NPB 3.4 IS class B, OpenMP, built outside this repository).
# PROCS defaults to "2 4 8 16" (only those not above nproc are run).
# Every step has its own time limit, so the whole stays under ~9 minutes;
# a step that runs out leaves "timed out" in its file and the rest go on.
# Writes one file per kind of step (7 in all) to OUT_DIR and prints a
# summary of ratios (also to OUT_DIR/summary.txt).
set -uo pipefail
BIN=${1:?usage: scaling.sh BIN_DIR OUT_DIR [PROCS]}
OUT=${2:?usage: scaling.sh BIN_DIR OUT_DIR [PROCS]}
PROCS_ALL=${3:-2 4 8 16}
mkdir -p "$OUT"
CORES=$(nproc)
PROCS=()
for p in $PROCS_ALL; do [ "$p" -le "$CORES" ] && PROCS+=("$p"); done
LIST=$(IFS=,; echo "${PROCS[*]}")

# step NAME LIMIT COMMAND...: runs COMMAND with a limit, appending to OUT/NAME.
step() {
    local name=$1 limit=$2
    shift 2
    echo "== $name: $*" | tee -a "$OUT/$name" >&2
    local t0=$SECONDS
    timeout "$limit" "$@" >>"$OUT/$name" 2>&1 || echo "exit $? (timed out at ${limit}s if 124)" >>"$OUT/$name"
    echo "   $((SECONDS - t0)) s" >&2
}

{
    date -u +"%F %T UTC"
    echo "nproc $CORES"
    grep -m1 "model name" /proc/cpuinfo
    lscpu | grep -E "^(Socket|Core|Thread|NUMA node\(s\)|L2|L3)"
    free -g | head -2
    echo "cgroup cpu.max: $(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo none)"
    echo "available_parallelism seen by bsp: see bench_procs below"
    uname -r
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt" >&2

# 1. A superstep with one 8-byte put per processor, against the OpenMP
#    barrier with every thread reading every row: the floor of any sync.
#    (One file for all three, so that the whole run leaves at most 8 files.)
for p in "${PROCS[@]}"; do
    step superstep.jsonl 20 "$BIN/omp_barrier" "$p" 20000 7
done
step superstep.jsonl 90 "$BIN/bench_procs" --procs "$LIST" --router direct,two-phase --steps 2000 --json
step superstep.jsonl 60 env BSP_BARRIER=binomial "$BIN/bench_procs" --procs "$LIST" --router direct --steps 2000 --json

# 2. l and g (bspbench's fit), both routers.
for p in "${PROCS[@]}"; do
    for r in direct two-phase; do
        step bspbench.jsonl 30 "$BIN/bspbench" --procs "$p" --router "$r" --max-kib 256 --json
    done
done

# 3. Routing 256 MiB against one memcpy of each processor's share.
step router.txt 100 "$BIN/bench_router" --procs "$LIST" --mib 256 --reps 3 --rounds 1 --shapes h1,random

# 4. The radix sort against rdst (64M keys, uniform).
for p in "${PROCS[@]}"; do
    step sort.jsonl 60 "$BIN/bench_sort" --n 67108864 --dist R --kind keys,pairs --reps 3 --only bsp,rdst --procs "$p" --json
done

# 5. NAS IS class B against NPB 3.4 IS (OpenMP), alternately.
for p in "${PROCS[@]}"; do
    for rep in 1 2; do
        step nas.txt 30 "$BIN/nas_is" --class B --procs "$p" --json
        if [ -x "$BIN/is.B.x" ]; then
            echo "NPB OpenMP threads=$p" >>"$OUT/nas.txt"
            OMP_NUM_THREADS=$p step nas.txt 30 "$BIN/is.B.x"
        fi
    done
done

# The summary: ratios of bsp to its peers, per p.
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, re, sys, pathlib
out = pathlib.Path(sys.argv[1])
def jsonl(name):
    p = out / name
    rows = []
    if p.exists():
        for line in p.read_text().splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    return rows
# superstep.jsonl: the OpenMP rows, then bench_procs's rows under headers
# that say which barrier ran.
floor, steps, barrier = {}, [], "default"
for line in ((out / "superstep.jsonl").read_text().splitlines() if (out / "superstep.jsonl").exists() else []):
    if line.startswith("== "):
        barrier = "binomial" if "BSP_BARRIER=binomial" in line else "default"
    elif line.startswith("{"):
        r = json.loads(line)
        if r.get("peer") == "openmp":
            floor[r["threads"]] = r["sync_ns"]
        else:
            steps.append((barrier, r))
print("superstep (one 8-byte put each) against the OpenMP barrier + row reads:")
for barrier, r in steps:
    p = r.get("procs")
    ns = r["seconds_per_superstep"] * 1e9
    f = floor.get(p)
    ratio = f"{ns / f:6.1f}x" if f else "   n/a"
    print(f"  barrier {barrier:9} p={p:<3} {r.get('router','?'):10} {ns/1e3:9.2f} us   floor {((f or 0)/1e3):6.2f} us   {ratio}")
print("l and g (bspbench's fit):")
for r in jsonl("bspbench.jsonl"):
    print(f"  p={r.get('procs'):<3} {r.get('router'):10} l {r['l_seconds'] * 1e6:8.2f} us   g {r['g_seconds_per_byte'] * 1e9:.3f} ns/B")
print("sort (bsp against rdst, median seconds):")
sorts = jsonl("sort.jsonl")
for r in sorts:
    if r.get("sorter") == "bsp":
        peer = [s for s in sorts if s.get("sorter") == "rdst" and s.get("procs") == r.get("procs")
                and s.get("kind") == r.get("kind") and s.get("dist") == r.get("dist")]
        if peer:
            print(f"  p={r.get('procs')} {r.get('kind')}: bsp {r['seconds']:.3f} s, rdst {peer[0]['seconds']:.3f} s, "
                  f"bsp/rdst {r['seconds'] / peer[0]['seconds']:.2f}x")
nas = (out / "nas.txt").read_text() if (out / "nas.txt").exists() else ""
print("NAS IS class B (Mop/s, best of runs; bsp/NPB):")
best = {}
p_now = None
for line in nas.splitlines():
    m = re.match(r"NPB OpenMP threads=(\d+)", line)
    if m:
        p_now = int(m.group(1))
    m = re.search(r"Mop/s total\s*=\s*([\d.]+)", line)
    if m and p_now:
        best[("npb", p_now)] = max(best.get(("npb", p_now), 0), float(m.group(1)))
    if line.startswith("{"):
        try:
            r = json.loads(line)
            if r.get("verified"):
                best[("bsp", r["procs"])] = max(best.get(("bsp", r["procs"]), 0), r["mops"])
        except ValueError:
            pass
for p in sorted({p for _, p in best}):
    b, n = best.get(("bsp", p)), best.get(("npb", p))
    ratio = f"{b / n:.2f}x" if b and n else "n/a"
    print(f"  p={p}: bsp {b or 0:.1f}  NPB OpenMP {n or 0:.1f}  bsp/NPB {ratio}")
PY
