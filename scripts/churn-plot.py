#!/usr/bin/python3
"""Churn figures (scripts/churn-figures.sh): a markdown table on stdout (RSS, index nodes,
live versions, directory size and throughput, first round against the last) and
churn-rss.png / churn-nodes.png / churn-dir.png in the results directory (against keys written, one line per
pattern and place).

  scripts/churn-plot.py results/churn
"""
import json
import os
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "results/churn"
    runs = defaultdict(list)
    for line in open(os.path.join(out, "churn.jsonl")):
        if not line.strip():
            continue
        r = json.loads(line)
        where = "memory" if r["dir"] == "none" else "directory"
        runs[(r["pattern"], where)].append(r)
    print("| pattern | where | RSS r1 → rN (MiB) | ratio | index nodes r1 → rN | ratio "
          "| live versions rN / live | dir rN (MiB) | dir peak r2–rN (MiB) | txn/s r1 → rN "
          "| ratio | med |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (pattern, where), rs in sorted(runs.items(), key=lambda kv: (kv[0][1] != "memory", kv[0][0])):
        rs.sort(key=lambda r: r["round"])
        first = next(r for r in rs if r["round"] == 1)
        last = rs[-1]
        dir_mib = f'{last["dir_mib"]:.0f}' if where == "directory" else "–"
        peaks = [r.get("dir_peak_mib", r["dir_mib"]) for r in rs if r["round"] >= 2]
        peak = f"{min(peaks):.0f}–{max(peaks):.0f}" if where == "directory" and peaks else "–"
        # Rounds 16-20 over rounds 1-5, medians: single rounds vary by +-10 %.
        tps = [r["txn_per_s"] for r in rs if r["round"] >= 1]
        med = (statistics.median(tps[-5:]) / statistics.median(tps[:5])) if len(tps) >= 10 else 0
        print(f'| {pattern} | {where} | {first["rss_mib"]:.0f} → {last["rss_mib"]:.0f} '
              f'| {last["rss_mib"] / first["rss_mib"]:.2f} '
              f'| {first["index_nodes"]:,} → {last["index_nodes"]:,} '
              f'| {last["index_nodes"] / first["index_nodes"]:.2f} '
              f'| {last["live_versions"] / last["live"]:.3f} | {dir_mib} | {peak} '
              f'| {first["txn_per_s"] / 1e3:.0f} K → {last["txn_per_s"] / 1e3:.0f} K '
              f'| {last["txn_per_s"] / first["txn_per_s"]:.2f} | {med:.2f} |')
    for field, name, label in (("rss_mib", "churn-rss.png", "resident memory (MiB)"),
                               ("index_nodes", "churn-nodes.png", "index nodes")):
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        for (pattern, where), rs in sorted(runs.items()):
            xs = [r["keys_written"] / 1e6 for r in rs]
            ax.plot(xs, [r[field] for r in rs], marker="o", markersize=3,
                    label=f"{pattern}, {where}")
        ax.set_xlabel("keys written (millions)")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.set_title(f"constant live set of {rs[0]['live']:,} keys")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=120)
    # The directory: its size at round ends and its peak between them (sampled every 10 ms),
    # against three times the raw keys and values.
    dirs = {k: rs for k, rs in runs.items() if k[1] == "directory"}
    if dirs:
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        for (pattern, _), rs in sorted(dirs.items()):
            xs = [r["keys_written"] / 1e6 for r in rs]
            line, = ax.plot(xs, [r.get("dir_peak_mib", r["dir_mib"]) for r in rs], marker="o",
                            markersize=3, label=f"{pattern}: peak")
            ax.plot(xs, [r["dir_mib"] for r in rs], linestyle=":", color=line.get_color(),
                    label=f"{pattern}: at round ends")
        r0 = next(iter(dirs.values()))[0]
        raw = r0["live"] * (8 + r0["value_bytes"]) / 2**20
        ax.axhline(3 * raw, color="grey", linestyle="--", label="3x the keys and values")
        ax.set_xlabel("keys written (millions)")
        ax.set_ylabel("directory (MiB)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"constant live set of {r0['live']:,} keys, in a directory")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "churn-dir.png"), dpi=120)


if __name__ == "__main__":
    main()
