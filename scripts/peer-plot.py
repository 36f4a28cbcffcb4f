#!/usr/bin/python3
"""Tables (markdown, on stdout) and PNGs of scripts/peer-figures.sh's results.

usage: scripts/peer-plot.py DIR   (reads DIR/read10.jsonl, af.jsonl, workloads.jsonl if present)
Each cell: the median over rounds of txn/s (min-max), and the largest peak RSS seen.
"""
import collections
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def label(d):
    return d["engine"] if d["engine"] != "braid" else "braid " + d["mode"]


def load(path):
    cells = collections.defaultdict(list)
    rss = collections.defaultdict(float)
    if not os.path.exists(path):
        return None, None
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            key = (d.get("workload") or "read10", label(d))
            cells[key].append(d["txn_per_s"])
            rss[key] = max(rss[key], d["peak_rss_mib"])
    return cells, rss


def table(title, cells, rss, out_png):
    workloads = sorted({w for w, _ in cells})
    labels = sorted({lab for _, lab in cells}, key=lambda s: (not s.startswith("braid"), s))
    print(f"### {title}\n")
    print("| workload | " + " | ".join(labels) + " | best braid / best peer |")
    print("|---" * (len(labels) + 2) + "|")
    for w in workloads:
        row, med = [], {}
        for lab in labels:
            v = cells.get((w, lab))
            if not v:
                row.append("-")
                continue
            med[lab] = statistics.median(v)
            row.append(f"{med[lab]:,.0f} ({min(v):,.0f}-{max(v):,.0f}; {rss[(w, lab)]:,.0f} MiB)")
        braid = max((m for lab, m in med.items() if lab.startswith("braid")), default=0)
        peers = {lab: m for lab, m in med.items() if not lab.startswith("braid")}
        best = max(peers.values(), default=0)
        ratio = ", ".join(f"{braid / m:.1f}x {lab}" for lab, m in sorted(peers.items()) if m)
        row.append(f"{braid / best:.1f}x ({ratio})" if best else "-")
        print(f"| {w} | " + " | ".join(row) + " |")
    print()
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(workloads) * len(labels) / 2), 4))
    width = 0.8 / len(labels)
    for i, lab in enumerate(labels):
        xs, ys, lo, hi = [], [], [], []
        for j, w in enumerate(workloads):
            v = cells.get((w, lab))
            if not v:
                continue
            m = statistics.median(v)
            xs.append(j + i * width)
            ys.append(m)
            lo.append(m - min(v))
            hi.append(max(v) - m)
        ax.bar(xs, ys, width, yerr=[lo, hi], label=lab, capsize=2)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(workloads))])
    ax.set_xticklabels(workloads)
    ax.set_ylabel("txn/s (median of rounds, min-max)")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    parts = [("read10", "Read-only, 10 gets per transaction, 1 thread, in memory"),
             ("af", "YCSB A and F, async commit, 1 thread"),
             ("workloads", "YCSB A-F, async commit, 1 thread")]
    for name, title in parts:
        cells, rss = load(os.path.join(d, name + ".jsonl"))
        if cells:
            table(title, cells, rss, os.path.join(d, name + ".png"))


if __name__ == "__main__":
    main()
