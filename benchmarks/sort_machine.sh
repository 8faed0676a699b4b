#!/usr/bin/env bash
# The sort and NAS IS on the machine at hand, beside their peers in one run,
# with each way a scatter can store (bsp::expert::stores: lines, plain and
# the measured choice, auto), and the memory floor under a pass:
#
#   bash benchmarks/sort_machine.sh BIN_DIR OUT_DIR [PROCS] [ROUNDS]
#
# BIN_DIR holds bench_sort, nas_is (release builds; benchmarks/bundle.sh
# puts static ones in .scaling_bin), stream_copy (benchmarks/floor/
# stream_copy.c, gcc -O3 -fopenmp) and, optionally, is.B.x: NPB 3.4 IS
# class B, OpenMP, built outside this repository with its make.def flags.
# PROCS defaults to "2", ROUNDS (alternating NAS IS runs per policy) to 3.
#
# Per p: the floor (read, copy and NPB's scatter loop, ns per key); NAS IS
# class B with each policy and NPB, alternating, best of the rounds; the
# radix sort of 2^26 keys and pairs, uniform [R] and skewed [S], one-shot
# and reused, against rdst in the same run (median of 3), once per policy.
# Writes JSON rows to OUT_DIR and prints a summary (OUT_DIR/summary.txt).
set -uo pipefail
BIN=${1:?usage: sort_machine.sh BIN_DIR OUT_DIR [PROCS] [ROUNDS]}
OUT=${2:?usage: sort_machine.sh BIN_DIR OUT_DIR [PROCS] [ROUNDS]}
PROCS=${3:-2}
ROUNDS=${4:-3}
POLICIES="lines plain auto"
mkdir -p "$OUT"
: >"$OUT/floor.jsonl"
: >"$OUT/nas.jsonl"
: >"$OUT/sort.jsonl"
{
    echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
    echo "nproc: $(nproc); memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); date: $(date -u +%FT%TZ)"
} >"$OUT/machine.txt"

for p in $PROCS; do
    timeout 60 "$BIN/stream_copy" "$p" | sed "s/^{/{\"p\":$p,/" >>"$OUT/floor.jsonl"
    for r in $(seq "$ROUNDS"); do
        for s in $POLICIES; do
            row=$(timeout 60 "$BIN/nas_is" --class B --procs "$p" --stores "$s" --json 2>/dev/null)
            echo "{\"p\":$p,\"round\":$r,\"impl\":\"bsp $s\",\"result\":${row:-null}}" >>"$OUT/nas.jsonl"
        done
        if [ -x "$BIN/is.B.x" ]; then
            mops=$(OMP_NUM_THREADS=$p timeout 60 "$BIN/is.B.x" | awk '/Mop\/s total/ {print $NF}')
            echo "{\"p\":$p,\"round\":$r,\"impl\":\"NPB OpenMP\",\"result\":{\"mops\":${mops:-null},\"verified\":true}}" >>"$OUT/nas.jsonl"
        fi
    done
    for s in $POLICIES; do
        timeout 240 "$BIN/bench_sort" --n 67108864 --procs "$p" --dist R,S --kind keys,pairs --reps 3 \
            --only bsp,bsp_reused,rdst --stores "$s" --json 2>/dev/null |
            grep '^{' | sed "s/^{/{\"stores\":\"$s\",/" >>"$OUT/sort.jsonl"
    done
done

python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
out = sys.argv[1]
def rows(name):
    return [json.loads(l) for l in open(os.path.join(out, name)) if l.strip()]
print(open(os.path.join(out, "machine.txt")).read().strip())
for f in rows("floor.jsonl"):
    print(f"p = {f['p']}: floor per key and thread: read {f['read_ns_per_key']:.2f} ns, "
          f"copy {f['copy_ns_per_key']:.2f} ns ({f['copy_gb_s']:.1f} GB/s), "
          f"NPB's scatter loop {f['scatter_ns_per_key']:.2f} ns")
nas = rows("nas.jsonl")
for p in sorted({r["p"] for r in nas}):
    best = {}
    for r in nas:
        res = r["result"]
        if r["p"] == p and res and res.get("verified") and res.get("mops"):
            best[r["impl"]] = max(best.get(r["impl"], 0), res["mops"])
    npb = best.get("NPB OpenMP")
    cells = [f"{k} {v:.0f}" + (f" ({v / npb:.2f}x)" if npb and k != "NPB OpenMP" else "")
             for k, v in sorted(best.items())]
    print(f"p = {p}: NAS IS B, best Mop/s (bsp / NPB OpenMP): " + ", ".join(cells))
sort = rows("sort.jsonl")
for p in sorted({r.get("procs", 0) for r in sort}):
    print(f"p = {p}: radix sort of 2^26, bsp / rdst in the same run (median of 3; below 1 is faster):")
    for s in ("lines", "plain", "auto"):
        sel = [r for r in sort if r["stores"] == s and r.get("procs", 0) == p]
        t = {(r["dist"], r["kind"], r["sorter"]): r["seconds"] for r in sel}
        cells = []
        for (d, k, name) in sorted(t):
            if name != "rdst" and (d, k, "rdst") in t:
                cells.append(f"[{d}] {k} {name} {t[(d, k, name)] / t[(d, k, 'rdst')]:.2f}")
        print(f"  stores {s:5}: " + "; ".join(cells))
PY
