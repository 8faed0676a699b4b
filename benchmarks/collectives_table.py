#!/usr/bin/env python3
"""The tables of BENCHMARKS.md section 7 from bench_collectives --json rows.

    python3 benchmarks/collectives_table.py ROWS.jsonl [MORE.jsonl ...]

Rows of later files replace rows of earlier ones with the same
(transport, collective, procs, bytes, variant). Prints, per transport and
collective, one markdown table: a row per p, a column per size, each cell
naming the fastest variant and, where the default picked another, the
default with its time over the fastest (marked with a cross beyond 1.2x);
then how many cells are within 1.2x.
"""
import json
import sys

SHORT = {
    "tree": "tree", "two-phase": "2ph", "pipelined": "pipe", "direct": "dir",
    "hypercube": "cube", "routed": "routed", "one-factor": "1-f",
    "1-level": "1-lv", "2-level": "2-lv", "3-level": "3-lv", "log-p-level": "logp-lv",
}
ORDER = ["broadcast", "reduce", "all_reduce", "exclusive_scan", "all_to_all"]
LIMIT = 1.2


def size_name(b):
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if b >= scale and b % scale == 0:
            return f"{b // scale}{unit}"
    return str(b)


def main(paths):
    rows = {}
    for path in paths:
        for line in open(path):
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if "collective" not in r:
                continue
            key = (r["transport"], r["collective"], r["procs"], r["bytes"], r["variant"])
            rows[key] = r
    cells = {}
    for (transport, coll, p, b, _), r in rows.items():
        cells.setdefault((transport, coll, p, b), []).append(r)
    within = {}
    for transport in sorted({k[0] for k in cells}):
        for coll in ORDER:
            mine = {k: v for k, v in cells.items() if k[0] == transport and k[1] == coll}
            if not mine:
                continue
            procs = sorted({k[2] for k in mine})
            sizes = sorted({k[3] for k in mine})
            print(f"**{coll}** ({transport})\n")
            print("| p | " + " | ".join(size_name(b) for b in sizes) + " |")
            print("|---" * (len(sizes) + 1) + "|")
            for p in procs:
                out = []
                for b in sizes:
                    group = mine.get((transport, coll, p, b))
                    if not group:
                        out.append("")
                        continue
                    best = min(group, key=lambda r: r["seconds"])
                    default = next(r for r in group if r["default"])
                    ratio = default["seconds"] / best["seconds"]
                    ok = ratio <= LIMIT
                    total, good = within.get(transport, (0, 0))
                    within[transport] = (total + 1, good + ok)
                    cell = SHORT[best["variant"]]
                    if default is not best:
                        mark = "" if ok else " ✗"
                        cell += f" ({SHORT[default['variant']]} {ratio:.2f}×{mark})"
                    out.append(cell)
                print(f"| {p} | " + " | ".join(out) + " |")
            print()
    for transport, (total, good) in sorted(within.items()):
        print(f"{transport}: the default within {LIMIT}x of the fastest in {good} of {total} cells")


if __name__ == "__main__":
    main(sys.argv[1:])
