#!/usr/bin/python3
"""Summarizes braid-bench JSON lines: min / median / max txn/s over repetitions, grouped by
workload, records and threads, one column per mode, plus ratios of medians.

  scripts/summarize.py results/matrix/matrix.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict

MODES = ["plain", "sequential", "prefetch", "nested", "interleaved", "auto"]


def workload(r):
    mix = "/".join(f"{k}{r[k]}" for k in ("read", "update", "rmw", "scan", "insert") if r.get(k))
    extra = " mg" if r.get("multi_get") else ""
    dist = "" if r.get("dist") == "uniform" else f" zipf{r.get('theta')}"
    return f"{mix} x{r['ops_per_txn']}{dist}{extra}"


def main(paths):
    groups = defaultdict(lambda: defaultdict(list))
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("bench") != "ycsb":
                    continue
                key = (workload(r), r["records"], r["threads"], r.get("batch"), r.get("scheduler"))
                groups[key][r["mode"]].append(r["txn_per_s"])
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2])):
        wl, records, threads, batch, sched = key
        runs = groups[key]
        print(f"\n{wl}, {records:,} records, {threads} worker(s), {sched} batch {batch}")
        print(f"  {'mode':<12} {'runs':>4} {'min':>10} {'median':>10} {'max':>10}")
        med = {}
        for m in MODES:
            if m not in runs:
                continue
            v = sorted(runs[m])
            med[m] = statistics.median(v)
            print(f"  {m:<12} {len(v):>4} {v[0]:>10,.0f} {med[m]:>10,.0f} {v[-1]:>10,.0f}")
        pairs = [("interleaved", "prefetch"), ("interleaved", "sequential"),
                 ("interleaved", "nested"), ("sequential", "plain"), ("auto", "sequential"),
                 ("auto", "interleaved")]
        shown = [f"{a}/{b} {med[a] / med[b]:.2f}" for a, b in pairs if a in med and b in med]
        if shown:
            print("  medians: " + ", ".join(shown))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
