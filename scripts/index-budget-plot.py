#!/usr/bin/python3
"""The index-out-of-memory issue's sweep (scripts/index-budget-sweep.sh): throughput and peak RSS
of BraidDB under --memory-budget-mib beside RocksDB under --cache-mib, against the bound as a
share of BraidDB's in-memory peak RSS. A table on stdout, $OUT/index-budget.png.

  /usr/bin/python3 scripts/index-budget-plot.py results/index-budget [PNG]

Each point is the median of the runs at that bound, each run's last round (the ones before it
warm the caches).
"""
import json
import os
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def bound_mib(r):
    return r.get("memory_budget_mib", 0) if r["engine"] == "braid" else r.get("cache_mib", 0)


def main(out, png):
    rows = [json.loads(l) for l in open(os.path.join(out, "sweep.jsonl")) if l.strip()]
    rows = [r for r in rows if r["rep"] == r["repeat"] - 1]
    values = sorted({r["value_bytes"] for r in rows})
    fig, axes = plt.subplots(2, len(values), figsize=(6 * len(values), 8), squeeze=False)
    for col, v in enumerate(values):
        vr = [r for r in rows if r["value_bytes"] == v]
        ref = [r for r in vr if r["engine"] == "braid" and bound_mib(r) == 0]
        if not ref:
            print(f"value {v}: no reference run (BraidDB without a budget)")
            continue
        ref_rss = statistics.median(r["peak_rss_mib"] for r in ref)
        ref_tps = statistics.median(r["txn_per_s"] for r in ref)
        print(f"\n{vr[0]['records']:,} records, {v}-byte values; BraidDB in memory: peak RSS "
              f"{ref_rss:.0f} MiB, YCSB-C {ref_tps:,.0f} txn/s")
        print("| bound | share | workload | engine | txn/s (median) | peak RSS MiB | RSS share |")
        print("|---|---|---|---|---|---|---|")
        groups = defaultdict(list)
        for r in vr:
            b = bound_mib(r)
            if b:
                groups[(b, r["workload"], r["engine"])].append(r)
        series = defaultdict(list)
        for (b, w, e), g in sorted(groups.items(), key=lambda x: (-x[0][0], x[0][1], x[0][2])):
            tps = statistics.median(r["txn_per_s"] for r in g)
            rss = statistics.median(r["peak_rss_mib"] for r in g)
            share = b / ref_rss
            series[(e, w)].append((share, tps, rss))
            print(f"| {b} MiB | {100 * share:.0f} % | {w.upper()} | {e} | {tps:,.0f} | {rss:.0f} |"
                  f" {100 * rss / ref_rss:.0f} % |")
        top, bottom = axes[0][col], axes[1][col]
        for (e, w), pts in sorted(series.items()):
            pts.sort()
            style = "-" if e == "braid" else "--"
            label = f"{'BraidDB' if e == 'braid' else 'RocksDB'} YCSB-{w.upper()}"
            top.plot([100 * p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=label)
            bottom.plot([100 * p[0] for p in pts], [p[2] for p in pts], style, marker="o",
                        label=label)
        shares = sorted({100 * s for pts in series.values() for s, _, _ in pts})
        if shares:
            bottom.plot(shares, [s / 100 * ref_rss for s in shares], ":", color="grey",
                        label="the bound")
        bottom.axhline(ref_rss, color="black", linewidth=0.8, label="BraidDB in memory")
        top.set_yscale("log")
        top.set_title(f"{v}-byte values, {vr[0]['records']:,} records")
        top.set_ylabel("txn/s (1 worker / thread)")
        bottom.set_ylabel("peak RSS (MiB)")
        for ax in (top, bottom):
            ax.set_xlabel("bound, % of BraidDB's in-memory peak RSS")
            ax.invert_xaxis()
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"\nwrote {png}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else os.path.join(sys.argv[1],
                                                                         "index-budget.png"))
