#!/usr/bin/env python3
"""Per-round ratios of a `braid-bench tpcc --mode prefetch,interleaved,auto --repeat R` JSON file.

Each round runs the three modes back to back, so the ratio within a round is what machine noise
disturbs least. Prints, per (mix, workers): interleaved / prefetch and auto / max(interleaved,
prefetch), median and minimum over the rounds, and how many rounds fall below 0.97.
Usage: scripts/auto-ratios.py FILE.jsonl [FILE.jsonl ...]
"""
import collections
import importlib.util
import os
import statistics
import sys

# The rounds are read as scripts/round-ratios.py reads them (one process tells from another).
_spec = importlib.util.spec_from_file_location(
    "round_ratios", os.path.join(os.path.dirname(os.path.abspath(__file__)), "round-ratios.py"))
round_ratios = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(round_ratios)


def main(paths):
    for path in paths:
        print("==", path)
        cells = collections.defaultdict(list)
        for (cfg, _), m in round_ratios.read_rounds(path).items():
            if cfg.bench != "tpcc" or not {"prefetch", "interleaved", "auto"} <= m.keys():
                continue
            il, pf, au = m["interleaved"], m["prefetch"], m["auto"]
            cells[(cfg.work, cfg.threads)].append((il / pf, au / max(il, pf)))
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
