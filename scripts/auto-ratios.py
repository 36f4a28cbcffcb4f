#!/usr/bin/env python3
"""Per-round ratios of a `braid-bench tpcc --mode prefetch,interleaved,auto --repeat R` JSON file.

Each round runs the three modes back to back, so the ratio within a round is what machine noise
disturbs least. Prints, per (mix, workers): interleaved / prefetch and auto / max(interleaved,
prefetch), median and minimum over the rounds, and how many rounds fall below 0.97.
Usage: scripts/auto-ratios.py FILE.jsonl [FILE.jsonl ...]
"""
import collections
import json
import statistics
import sys


def main(paths):
    for path in paths:
        print("==", path)
        rounds = collections.defaultdict(dict)  # (mix, threads, process, rep) -> mode -> txn/s
        process = 0
        last_rep = None
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if last_rep is not None and r["rep"] < last_rep:
                    process += 1  # a new process appended to the same file
                last_rep = r["rep"]
                mode = "hybrid" if r.get("hybrid") else r["mode"]
                rounds[(r["mix"], r["threads"], process, r["rep"])][mode] = r["txn_per_s"]
        cells = collections.defaultdict(list)
        for (mix, threads, _, _), m in rounds.items():
            if not {"prefetch", "interleaved", "auto"} <= m.keys():
                continue
            il, pf, au = m["interleaved"], m["prefetch"], m["auto"]
            cells[(mix, threads)].append((il / pf, au / max(il, pf)))
        for (mix, threads), v in sorted(cells.items()):
            a = [x[0] for x in v]
            b = [x[1] for x in v]
            print(f"{mix:7s} {threads}w rounds={len(v):2d}  interleaved/prefetch median "
                  f"{statistics.median(a):.3f} (min {min(a):.3f})  auto/best median "
                  f"{statistics.median(b):.3f} (min {min(b):.3f}, below 0.97: "
                  f"{sum(x < 0.97 for x in b)})")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
