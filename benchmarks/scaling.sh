#!/usr/bin/env bash
# Scaling in p on a machine with many cores, bsp beside its peers in one run:
# the empty and the one-put superstep against the OpenMP floor, l and g,
# routing against one memcpy, the radix sort against rdst, NAS IS against
# NPB's OpenMP build, the collectives against the cost model, and (with an
# MPI bundle) l, g and routing under MPI.
#
#   bash benchmarks/bundle.sh BIN_DIR                 # here: builds BIN_DIR
#   bash benchmarks/scaling.sh BIN_DIR OUT_DIR [PROCS]   # on the many-core machine
#
# BIN_DIR is what benchmarks/bundle.sh writes (the many-core machine builds
# nothing): bsp's harnesses bench_floor, bspbench, bench_router, bench_sort,
# bench_collectives and the example nas_is, statically linked; omp_barrier
# and nas_is_floor, the floor programs of benchmarks/floor/; optionally is.B.x (NPB 3.4 IS
# class B, OpenMP, built outside this repository and put there by hand);
# and optionally mpi/, the MPI builds of bspbench, bench_router and
# bench_mpi with an Open MPI runtime and its launcher, mpi/run.
# PROCS defaults to "2 4 8 16" (only those not above nproc are run);
# BARRIERS (environment, default "central binomial dissemination") lists
# the BSP_BARRIER kinds measured one by one: a kind the binaries do not
# know leaves an error line in superstep.jsonl and the rest go on.
#
# Every step has its own time limit; their sum, printed first, bounds the
# whole run (under 8 minutes with everything present and PROCS of four).
# A step that runs out leaves "exit 124" in its file and the rest go on.
# Writes one file per kind of step (JSON rows, NAS's as NPB prints them) to
# OUT_DIR and prints a summary of ratios (also to OUT_DIR/summary.txt).
set -uo pipefail
BIN=${1:?usage: scaling.sh BIN_DIR OUT_DIR [PROCS]}
OUT=${2:?usage: scaling.sh BIN_DIR OUT_DIR [PROCS]}
PROCS_ALL=${3:-2 4 8 16}
BARRIERS=${BARRIERS:-central binomial dissemination}
mkdir -p "$OUT"
CORES=$(nproc)
PROCS=()
for p in $PROCS_ALL; do [ "$p" -le "$CORES" ] && PROCS+=("$p"); done
if [ "${#PROCS[@]}" -eq 0 ]; then
    echo "scaling.sh: no p in \"$PROCS_ALL\" fits $CORES cores" >&2
    exit 2
fi
LIST=$(IFS=,; echo "${PROCS[*]}")
P_MAX=${PROCS[-1]}
HAVE_NPB=0
[ -x "$BIN/is.B.x" ] && HAVE_NPB=1
HAVE_MPI=0
[ -x "$BIN/mpi/run" ] && [ -x "$BIN/mpi/bspbench" ] && [ -x "$BIN/mpi/bench_router" ] && HAVE_MPI=1
MPI_BENCH_NP=()
if [ "$HAVE_MPI" -eq 1 ] && [ -x "$BIN/mpi/bench_mpi" ]; then
    MPI_BENCH_NP=("${PROCS[0]}")
    [ "$P_MAX" -ne "${PROCS[0]}" ] && MPI_BENCH_NP+=("$P_MAX")
fi

# Time limits in seconds, per step: about three times what each took on
# 16 cores (the bsp steps grow with p; the sort and NAS IS shrink).
T_FLOOR=30         # bench_floor, every p, 5 rounds of 10,000 steps
T_BARRIER=12       # bench_floor per barrier kind, 3 rounds of 5,000 steps
T_BSPBENCH=6       # bspbench, one p, direct router
T_BSPBENCH_TWO=16  # bspbench, one p, two-phase (13 s at p = 16 on Intel-16)
T_ROUTER=30        # bench_router, every p
T_COLLECTIVES=20   # bench_collectives, every p
T_MPI_BSPBENCH=8   # bspbench under mpirun, one np and router
T_MPI_ROUTER=8     # bench_router under mpirun, one np
T_MPI_BENCH=8      # bench_mpi --quick, one np
t_sort() { if [ "$1" -le 2 ]; then echo 30; elif [ "$1" -le 4 ]; then echo 20; else echo 15; fi; }
t_nas() { if [ "$1" -le 2 ]; then echo 10; else echo 7; fi; } # nas_is, and is.B.x

NB=$(wc -w <<<"$BARRIERS")
NP=${#PROCS[@]}
TOTAL=$((T_FLOOR + NB * T_BARRIER + NP * (T_BSPBENCH + T_BSPBENCH_TWO) + T_ROUTER + T_COLLECTIVES))
for p in "${PROCS[@]}"; do
    TOTAL=$((TOTAL + $(t_sort "$p") + (1 + HAVE_NPB) * $(t_nas "$p")))
done
if [ "$HAVE_MPI" -eq 1 ]; then
    TOTAL=$((TOTAL + NP * (2 * T_MPI_BSPBENCH + T_MPI_ROUTER) + ${#MPI_BENCH_NP[@]} * T_MPI_BENCH))
fi
echo "scaling.sh: p = ${PROCS[*]}; barriers: $BARRIERS; NPB IS: $([ $HAVE_NPB -eq 1 ] && echo yes || echo no);" \
    "MPI bundle: $([ $HAVE_MPI -eq 1 ] && echo yes || echo no)" >&2
echo "scaling.sh: the time limits sum to $TOTAL s ($((TOTAL / 60)) min $((TOTAL % 60)) s): the longest this run can take" >&2
[ "$TOTAL" -ge 480 ] && echo "scaling.sh: WARNING: that is 8 minutes or more" >&2

# step NAME LIMIT COMMAND...: runs COMMAND with a limit, appending to OUT/NAME.
step() {
    local name=$1 limit=$2
    shift 2
    echo "== $name: $*" | tee -a "$OUT/$name" >&2
    local t0=$SECONDS
    timeout "$limit" "$@" >>"$OUT/$name" 2>&1 || echo "exit $? (timed out at ${limit}s if 124)" >>"$OUT/$name"
    echo "-- $((SECONDS - t0)) s" | tee -a "$OUT/$name" >&2
}

{
    date -u +"%F %T UTC"
    echo "nproc $CORES"
    grep -m1 "model name" /proc/cpuinfo
    lscpu | grep -E "^(Socket|Core|Thread|NUMA node\(s\)|L2|L3)"
    free -g | head -2
    echo "cgroup cpu.max: $(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo none)"
    echo "available_parallelism seen by bsp: \"nproc\" in superstep.jsonl"
    uname -r
    if [ "$HAVE_MPI" -eq 1 ]; then
        "$BIN/mpi/run" --version 2>&1 | head -1
    else
        echo "no MPI bundle in $BIN/mpi"
    fi
    echo "time limits sum to $TOTAL s"
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt" >&2

# 1. The empty superstep and a superstep with one 8-byte put per processor,
#    against the OpenMP barrier with every thread reading every row (the
#    floor of any shared-memory sync), alternately in one run; then the
#    same for each barrier kind of the threads transport.
step superstep.jsonl "$T_FLOOR" "$BIN/bench_floor" --floor "$BIN/omp_barrier" \
    --procs "$LIST" --rounds 5 --steps 10000 --json
for kind in $BARRIERS; do
    step superstep.jsonl "$T_BARRIER" env BSP_BARRIER="$kind" "$BIN/bench_floor" \
        --floor "$BIN/omp_barrier" --procs "$LIST" --rounds 3 --steps 5000 --json
done

# 2. l and g (bspbench's fit), both routers.
for p in "${PROCS[@]}"; do
    step bspbench.jsonl "$T_BSPBENCH" "$BIN/bspbench" --procs "$p" --router direct --max-kib 256 --json
    step bspbench.jsonl "$T_BSPBENCH_TWO" "$BIN/bspbench" --procs "$p" --router two-phase --max-kib 256 --json
done

# 3. Routing 256 MiB against one memcpy of each processor's share.
step router.jsonl "$T_ROUTER" "$BIN/bench_router" --procs "$LIST" --mib 256 --reps 3 --rounds 1 \
    --shapes h1,random --json

# 4. The radix sort against rdst (64M keys, uniform).
for p in "${PROCS[@]}"; do
    step sort.jsonl "$(t_sort "$p")" "$BIN/bench_sort" --n 67108864 --dist R --kind keys,pairs --reps 3 \
        --only bsp,rdst --procs "$p" --json
done

# 5. NAS IS class B against NPB 3.4 IS (OpenMP), one after the other.
for p in "${PROCS[@]}"; do
    step nas.txt "$(t_nas "$p")" "$BIN/nas_is" --class B --procs "$p" --json
    # The same ranking in plain C (benchmarks/floor/nas_is_floor.c), at
    # 2^9 and NPB's 2^10 buckets.
    for bits in 9 10; do
        OMP_NUM_THREADS=$p step nas.txt "$(t_nas "$p")" "$BIN/nas_is_floor" B "$bits"
    done
    if [ "$HAVE_NPB" -eq 1 ]; then
        echo "NPB OpenMP threads=$p" >>"$OUT/nas.txt"
        OMP_NUM_THREADS=$p step nas.txt "$(t_nas "$p")" "$BIN/is.B.x"
    fi
done

# 6. The collectives, each variant against the cost model (8 B and 64 KiB).
step collectives.jsonl "$T_COLLECTIVES" "$BIN/bench_collectives" --procs "$LIST" --bytes 8,65536 \
    --collectives broadcast,reduce,all_reduce,exclusive_scan,all_to_all --json

# 7. Under MPI (the bundle's Open MPI, one rank per core): l and g, routing
#    64 MiB against MPI_Alltoallv, and bench_mpi's empty sync against
#    MPI_Barrier + MPI_Alltoall.
if [ "$HAVE_MPI" -eq 1 ]; then
    for p in "${PROCS[@]}"; do
        for r in direct two-phase; do
            step bspbench.jsonl "$T_MPI_BSPBENCH" "$BIN/mpi/run" -np "$p" "$BIN/mpi/bspbench" \
                --router "$r" --max-kib 256 --json
        done
        step router_mpi.jsonl "$T_MPI_ROUTER" "$BIN/mpi/run" -np "$p" "$BIN/mpi/bench_router" \
            --mib 64 --reps 3 --rounds 1 --shapes h1,random --routers direct,two-phase --json
    done
    for p in "${MPI_BENCH_NP[@]}"; do
        step mpi.jsonl "$T_MPI_BENCH" "$BIN/mpi/run" -np "$p" "$BIN/mpi/bench_mpi" --quick --json
    done
fi

# The summary: ratios of bsp to its peers, per p.
python3 - "$OUT" "$BARRIERS" <<'PY' | tee "$OUT/summary.txt"
import json, re, sys, pathlib
out = pathlib.Path(sys.argv[1])
barriers = sys.argv[2].split()
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
def us(seconds):
    return f"{seconds * 1e6:8.2f} us"
def times(a, b, digits=2):
    return f"{a / b:.{digits}f}x" if b else "n/a"
def section(summarise):
    """Runs one part of the summary: a malformed file spoils only its part."""
    try:
        summarise()
    except Exception as e:
        print(f"  (this part of the summary failed: {e!r})")

@section
def superstep():
    print("superstep against the floor (OpenMP barrier + row reads), ns; ratio median (range) over rounds:")
    steps = jsonl("superstep.jsonl")
    for r in steps:
        e, pu = r["empty_over_floor_range"], r["put_over_floor_range"]
        print(f"  barrier {r['barrier']:13} p={r['procs']:<3} floor {r['floor_ns']:7.0f}  "
              f"empty {r['empty_ns']:8.0f} {r['empty_over_floor']:5.2f}x ({e[0]:.2f}-{e[1]:.2f})  "
              f"one put {r['put_ns']:8.0f} {r['put_over_floor']:5.2f}x ({pu[0]:.2f}-{pu[1]:.2f})")
    for kind in barriers:
        if not any(r["barrier"] == kind for r in steps):
            print(f"  barrier {kind}: no rows (rejected or timed out: see superstep.jsonl)")
    for r in steps:
        if r["procs"] == 2 and r["barrier"] == "default":
            empty, put = r["empty_over_floor"], r["put_over_floor"]
            print(f"  targets at p=2 (empty <= 2x, one put <= 3x): empty {empty:.2f}x "
                  f"{'met' if empty <= 2 else 'missed'}, one put {put:.2f}x {'met' if put <= 3 else 'missed'}")

@section
def l_and_g():
    print("l and g (bspbench's fit), threads beside MPI:")
    lg = {}
    for r in jsonl("bspbench.jsonl"):
        lg[(r["procs"], r["router"], r["backend"])] = r
    for (p, router) in sorted({(p, r) for p, r, _ in lg}):
        cells = []
        for backend in ("threads", "mpi"):
            r = lg.get((p, router, backend))
            if r:
                extra = f" ({r['l_ratio_to_mpi']:.2f}x MPI_Barrier+Alltoall)" if "l_ratio_to_mpi" in r else ""
                cells.append(f"{backend} l {us(r['l_seconds'])} g {r['g_seconds_per_byte'] * 1e9:.3f} ns/B{extra}")
            else:
                cells.append(f"{backend} n/a")
        print(f"  p={p:<3} {router:10} " + "   ".join(cells))

def routing(name, title):
    rows = [r for r in jsonl(name) if "ratio_to_baseline" in r]
    if rows:
        print(title)
    for p in sorted({r["procs"] for r in rows}):
        for shape in sorted({r["shape"] for r in rows if r["procs"] == p}):
            cells = [f"{r['router']} {r['ratio_to_baseline']:.2f}x" for r in rows
                     if r["procs"] == p and r["shape"] == shape and r["router"] not in ("baseline", "alltoallv")]
            print(f"  p={p:<3} {shape:7} " + ", ".join(cells))
section(lambda: routing("router.jsonl", "routing 256 MiB on threads (speed against one memcpy; > 1 is faster):"))
section(lambda: routing("router_mpi.jsonl", "routing 64 MiB under MPI (speed against MPI_Alltoallv; > 1 is faster):"))

@section
def mpi_sync():
    for r in jsonl("mpi.jsonl"):
        if r.get("bench") == "empty_sync":
            print(f"MPI empty sync, np={r['np']}: bsp {r['bsp_us']:.2f} us, MPI_Barrier+Alltoall "
                  f"{r['barrier_alltoall_us']:.2f} us, {times(r['bsp_us'], r['barrier_alltoall_us'])}")

@section
def sort():
    print("sort (bsp against rdst, median seconds):")
    sorts = jsonl("sort.jsonl")
    for r in sorts:
        if r.get("sorter") == "bsp":
            peer = [s for s in sorts if s.get("sorter") == "rdst" and s.get("procs") == r.get("procs")
                    and s.get("kind") == r.get("kind") and s.get("dist") == r.get("dist")]
            if peer:
                print(f"  p={r.get('procs')} {r.get('kind')}: bsp {r['seconds']:.3f} s, rdst {peer[0]['seconds']:.3f} s, "
                      f"bsp/rdst {times(r['seconds'], peer[0]['seconds'])}")

@section
def nas():
    text = (out / "nas.txt").read_text() if (out / "nas.txt").exists() else ""
    print("NAS IS class B (Mop/s, best of runs; bsp/NPB):")
    best = {}
    p_now = None
    for line in text.splitlines():
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
        npb = f"{n:.1f}" if n else "n/a"
        print(f"  p={p}: bsp {b or 0:.1f}  NPB OpenMP {npb}  bsp/NPB {times(b or 0, n or 0)}")

@section
def collectives():
    print("collectives: the default variant against the fastest, and against the cost model:")
    coll = jsonl("collectives.jsonl")
    for p in sorted({r["procs"] for r in coll}):
        for size in sorted({r["bytes"] for r in coll if r["procs"] == p}):
            cells = []
            for c in dict.fromkeys(r["collective"] for r in coll if r["procs"] == p and r["bytes"] == size):
                rows = [r for r in coll if r["procs"] == p and r["bytes"] == size and r["collective"] == c]
                best = min(r["seconds"] for r in rows)
                for r in rows:
                    if r["default"]:
                        cells.append(f"{c} {times(r['seconds'], best)} best, "
                                     f"{times(r['seconds'], r['predicted_seconds'], 1)} model")
            print(f"  p={p:<3} {size:>6} B: " + "; ".join(cells))
PY
