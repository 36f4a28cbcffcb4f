#!/usr/bin/python3
"""Issue 19's budget sweep (scripts/budget-sweep.sh): throughput against the fraction of the
data's versions the budget holds, per mode, as a table on stdout and $OUT/budget.png.

  scripts/budget-plot.py results/budget

Each point is the median over the alternated rounds; the no-budget run is the 100 % reference.
"""
import json
import os
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(out):
    rows = [json.loads(l) for l in open(os.path.join(out, "sweep.jsonl")) if l.strip()]
    full = max(r["live_version_bytes"] for r in rows if r["memory_budget_mib"] == 0)
    full_mib = full / (1 << 20)
    groups = defaultdict(list)
    for r in rows:
        groups[(r["memory_budget_mib"], r["mode"])].append(r)
    modes = sorted({m for _, m in groups})
    budgets = sorted({b for b, _ in groups}, key=lambda b: -1 if b == 0 else b)
    fio = None
    fio_path = os.path.join(out, "fio.json")
    if os.path.exists(fio_path):
        fio = json.load(open(fio_path))["jobs"][0]["read"]["iops"]
    print(f"data: {full_mib:.0f} MiB of versions, {rows[0]['records']:,} records")
    print("| budget | cached | mode | txn/s (median) | min | hit ratio | cold reads/s | io depth |"
          " peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    series = defaultdict(list)
    for b in sorted(budgets, key=lambda b: 10**12 if b == 0 else -b):
        for m in modes:
            g = groups.get((b, m))
            if not g:
                continue
            tps = [r["txn_per_s"] for r in g]
            frac = 1.0 if b == 0 else min(1.0, b / full_mib)
            med = statistics.median(tps)
            series[m].append((frac, med, b))
            print(f"| {'none' if b == 0 else f'{b} MiB'} | {100 * frac:.0f} % | {m} | {med:,.0f} |"
                  f" {min(tps):,.0f} | {statistics.median(r['hit_ratio'] for r in g):.3f} |"
                  f" {statistics.median(r['cold_reads_per_s'] for r in g):,.0f} |"
                  f" {statistics.median(r['io_depth'] for r in g):.1f} |"
                  f" {max(r['peak_rss_mib'] for r in g):.0f} |")
    if fio is not None:
        print(f"\nfio randread 4 KiB, QD 32, O_DIRECT, io_uring: {fio:,.0f} IOPS")
        best = max((r["cold_reads_per_s"], r["mode"], r["memory_budget_mib"]) for r in rows)
        print(f"highest cold reads/s: {best[0]:,.0f} ({best[1]} at {best[2]} MiB), "
              f"{best[0] / fio:.2f}x fio")
    fig, ax = plt.subplots(figsize=(6, 4))
    for m, pts in series.items():
        pts.sort()
        ax.plot([100 * p[0] for p in pts], [p[1] for p in pts], marker="o", label=m)
    ax.set_xlabel("budget, % of the data's version memory (100 % includes no budget)")
    ax.set_ylabel("txn/s (10 reads/txn)")
    ax.set_title(f"YCSB read-only, {rows[0]['records']:,} records")
    ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "budget.png"), dpi=120)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/budget")
