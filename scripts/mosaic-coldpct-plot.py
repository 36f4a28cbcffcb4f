#!/usr/bin/env python3
"""Plots scripts/mosaic-coldpct.sh's runs: throughput against cold-pct, BraidDB and MosaicDB.

    /usr/bin/python3 scripts/mosaic-coldpct-plot.py results/mosaic-coldpct [OUT.png]

Prints a Markdown table of the medians over rounds (each system's variants and its best, and
BraidDB's best over MosaicDB's best) and draws OUT.png (default DIR/mosaic-coldpct.png): one
line per system and variant, log-scaled cold-pct.
"""
import json
import statistics
import sys
from collections import defaultdict


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    folder = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else folder + "/mosaic-coldpct.png"
    runs = defaultdict(list)  # (system, variant, pct) -> [txn/s]
    try:
        with open(folder + "/runs.jsonl") as f:
            for line in f:
                r = json.loads(line)
                if r["txn_per_s"] > 0:
                    runs[(r["system"], r["variant"], r["cold_pct"])].append(r["txn_per_s"])
    except OSError as e:
        print(f"mosaic-coldpct-plot: {e}", file=sys.stderr)
        return 1
    med = {k: statistics.median(v) for k, v in runs.items()}
    pcts = sorted({k[2] for k in med})
    series = sorted({(k[0], k[1]) for k in med})
    systems = sorted({s for s, _ in series})

    def best(system, pct):
        vals = [med[(s, v, p)] for (s, v, p) in med if s == system and p == pct]
        return max(vals) if vals else None

    head = ["cold %"] + [f"{s} {v}" for s, v in series] + [f"{s} best" for s in systems]
    if {"braiddb", "mosaicdb"} <= set(systems):
        head.append("BraidDB best / MosaicDB best")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for p in pcts:
        row = [str(p)]
        for s, v in series:
            k = (s, v, p)
            row.append(f"{med[k] / 1000:.1f} K ({len(runs[k])})" if k in med else "–")
        bests = {s: best(s, p) for s in systems}
        row += [f"{bests[s] / 1000:.1f} K" if bests[s] else "–" for s in systems]
        if "braiddb" in bests and "mosaicdb" in bests and bests["braiddb"] and bests["mosaicdb"]:
            row.append(f"{bests['braiddb'] / bests['mosaicdb']:.2f}×")
        print("| " + " | ".join(row) + " |")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    colors = {"braiddb": "tab:blue", "mosaicdb": "tab:orange"}
    styles = ["-", "--", ":", "-."]
    for s in systems:
        variants = [v for (sys_, v) in series if sys_ == s]
        for i, v in enumerate(variants):
            xs = [p for p in pcts if (s, v, p) in med]
            ax.plot(xs, [med[(s, v, p)] / 1000 for p in xs], styles[i % len(styles)],
                    marker="o", color=colors.get(s), label=f"{s} {v}")
    ax.set_xscale("log")
    ax.set_xticks(pcts)
    ax.set_xticklabels([str(p) for p in pcts])
    ax.set_xlabel("storage-bound transactions (%)")
    ax.set_ylabel("txn/s (thousands), median of rounds")
    ax.set_title("MosaicDB's cold mix, 1 worker: 10 M hot, 1 M cold uncached")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
