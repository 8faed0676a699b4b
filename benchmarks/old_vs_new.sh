#!/usr/bin/env bash
# Old build against new, run alternately, for a change that must cost
# nothing: bench_sort, bench_router and bspbench from two directories of
# release binaries (build each commit's with
# `cargo build --release -p bsp-benchmarks --example bench_sort
#  --example bench_router --example bspbench` and copy the three out of
# target/release/examples). Prints one table of new / old medians.
#
#   bash benchmarks/old_vs_new.sh OLD_DIR NEW_DIR [ROUNDS]
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-5}
OUT=$(mktemp)
for r in $(seq "$ROUNDS"); do
    # Alternate which goes first, so that drift hits both alike.
    order="old new"
    [ $((r % 2)) -eq 0 ] && order="new old"
    for b in $order; do
        d=$OLD
        [ "$b" = new ] && d=$NEW
        "$d/bench_sort" --n 16777216 --dist R,S --kind keys,pairs --reps 3 --only bsp --json | sed "s/^/$b sort /"
        "$d/bench_router" --procs 2 --mib 64 --reps 3 --rounds 1 --shapes h1,random,skew --json | sed "s/^/$b router /"
        "$d/bspbench" --procs 2 --max-kib 1024 --json | sed "s/^/$b bspbench /"
    done
done >"$OUT"
python3 - "$OUT" <<'PY'
import collections, json, statistics as st, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    build, kind, text = line.split(" ", 2)
    try:
        j = json.loads(text)
    except ValueError:
        continue
    if kind == "sort":
        runs[("sort", j["dist"], j["kind"])].append((build, j["seconds"]))
    elif kind == "router" and "seconds" in j and j["router"] != "baseline":
        runs[("router", j["shape"], j["router"])].append((build, j["seconds"]))
    elif kind == "bspbench":
        runs[("bspbench", "l")].append((build, j["l_seconds"]))
        runs[("bspbench", "g")].append((build, j["g_seconds_per_byte"]))
print(f"{'case':32} {'old':>10} {'new':>10} {'new/old':>8}   old range | new range")
for key, v in sorted(runs.items()):
    old = [x for b, x in v if b == "old"]
    new = [x for b, x in v if b == "new"]
    mo, mn = st.median(old), st.median(new)
    print(f"{' '.join(key):32} {mo:10.4g} {mn:10.4g} {mn / mo:8.3f}   "
          f"{min(old):.3g}-{max(old):.3g} | {min(new):.3g}-{max(new):.3g}")
PY
rm -f "$OUT"
