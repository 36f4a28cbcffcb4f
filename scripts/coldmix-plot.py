#!/usr/bin/python3
"""MosaicDB's cold-mix figures (scripts/coldmix-figures.sh): tables on stdout (markdown) and PNGs
in the results directory (fig6, fig7, fig8, fig10, fig11, contention = Fig. 12).

  scripts/coldmix-plot.py results/coldmix

fig6/fig7: total, hot and cold txn/s, IOPS and hot p99 latency against the percentage of
storage-bound transactions, per variant (sequential; interleaved x scheduler). fig8: dual-queue
total txn/s against the cold queue size. contention.jsonl (braid-bench contention): txn/s and
the backoff share against the worker count. Each point is the median over alternated rounds;
the tables also give the minimum.
"""
import json
import os
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def save(fig, out, filename):
    fig.tight_layout()
    fig.savefig(os.path.join(out, filename), dpi=120)


def load(out, name):
    path = os.path.join(out, name + ".jsonl")
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.strip()]


def variant(r):
    if r["scheduler"] == "none":
        return r["mode"]
    flat = "+flattened" if r.get("storage_path") == "flattened" else ""
    return r["mode"] + flat + "/" + r["scheduler"]


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def sweep(out, name, fio):
    rows = load(out, name)
    if not rows:
        return
    groups = defaultdict(list)
    for r in rows:
        groups[(variant(r), r["cold_pct"])].append(r)
    variants = sorted({v for v, _ in groups}, key=lambda v: (v != "sequential", v))
    pcts = sorted({p for _, p in groups})
    kind = "read-write" if rows[0]["rw"] else "read-only"
    print(f"\n### {name}: {kind}, {rows[0]['hot_records']:,} hot + {rows[0]['cold_records']:,} "
          f"cold records, cold cached: {rows[0]['cache_cold']}, {rows[0]['repeat']} rounds\n")
    print("| cold % | variant | txn/s median | min | hot/s | cold/s | IOPS | io depth |"
          " hot p50/p99 us | cold p50/p99 us | vs sequential |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for p in pcts:
        seq = groups.get(("sequential", p))
        seq_tps = med(seq, "txn_per_s") if seq else None
        for v in variants:
            g = groups.get((v, p))
            if not g:
                continue
            tps = med(g, "txn_per_s")
            vs = f"{tps / seq_tps:.2f}x" if seq_tps else "-"
            print(f"| {p} | {v} | {tps:,.0f} | {min(r['txn_per_s'] for r in g):,.0f} |"
                  f" {med(g, 'hot_txn_per_s'):,.0f} | {med(g, 'cold_txn_per_s'):,.0f} |"
                  f" {med(g, 'iops'):,.0f} | {med(g, 'io_depth'):.1f} |"
                  f" {med(g, 'hot_p50_us'):.0f}/{med(g, 'hot_p99_us'):.0f} |"
                  f" {med(g, 'cold_p50_us'):.0f}/{med(g, 'cold_p99_us'):.0f} | {vs} |")
    if fio is not None:
        best = max(med(g, "iops") for g in groups.values())
        print(f"\nhighest median IOPS {best:,.0f} = {best / fio:.2f}x fio ({fio:,.0f})")
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    xs = list(range(len(pcts)))
    for v in variants:
        for ax, key in zip(axes, ["txn_per_s", "hot_txn_per_s", "iops", "hot_p99_us"]):
            ys = [med(groups[(v, p)], key) if (v, p) in groups else float("nan") for p in pcts]
            if key != "iops":  # log scales: a class with no transactions has no point
                ys = [y if y > 0 else float("nan") for y in ys]
            ax.plot(xs, ys, marker="o", label=v)
    titles = ["total txn/s", "hot (memory-bound) txn/s", "cold reads/s (IOPS)", "hot p99 (us)"]
    for ax, t in zip(axes, titles):
        ax.set_xticks(xs)
        ax.set_xticklabels([str(p) for p in pcts])
        ax.set_xlabel("storage-bound transactions (%)")
        ax.set_title(t)
        ax.grid(alpha=0.3)
    if fio is not None:
        axes[2].axhline(fio, color="gray", linestyle="--", label="fio QD32")
    axes[3].set_yscale("log")
    axes[0].set_yscale("log")
    axes[1].set_yscale("log")
    axes[2].legend(fontsize=7)
    fig.suptitle(f"coldmix {kind} (MosaicDB Fig. {6 if name == 'fig6' else 7}), 1 worker")
    save(fig, out, name + ".png")


def fig8(out):
    rows = load(out, "fig8")
    if not rows:
        return
    groups = defaultdict(list)
    for r in rows:
        groups[(r["cold_slots"], r["cold_pct"])].append(r)
    sizes = sorted({s for s, _ in groups})
    pcts = sorted({p for _, p in groups})
    print("\n### fig8: dual-queue cold queue size\n")
    print("| cold % | " + " | ".join(f"QS {s}" for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    fig, ax = plt.subplots(figsize=(6, 4))
    for p in pcts:
        vals = [med(groups[(s, p)], "txn_per_s") if (s, p) in groups else float("nan")
                for s in sizes]
        print(f"| {p} | " + " | ".join(f"{v:,.0f}" for v in vals) + " |")
        ax.plot(sizes, vals, marker="o", label=f"{p} % cold")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("cold queue size")
    ax.set_ylabel("txn/s")
    ax.set_title("dual-queue: cold queue size (MosaicDB Fig. 8)")
    ax.legend()
    ax.grid(alpha=0.3)
    save(fig, out, "fig8.png")


def fig11(out):
    rows = load(out, "fig11")
    if not rows:
        return
    groups = defaultdict(list)
    for r in rows:
        name = {"nested (all)": "fully nested", "nested": "selectively nested",
                "flattened": "flattened"}[r["storage_path"]]
        groups[(name, r["cold_pct"])].append(r)
    names = ["flattened", "selectively nested", "fully nested"]
    pcts = sorted({p for _, p in groups})
    print("\n### fig11: coroutine structure of the storage path (dual-queue)\n")
    print("| cold % | structure | txn/s median | min | vs selectively nested |")
    print("|---|---|---|---|---|")
    fig, ax = plt.subplots(figsize=(6, 4))
    width = 0.25
    for i, n in enumerate(names):
        vals = []
        for p in pcts:
            g = groups.get((n, p))
            base = groups.get(("selectively nested", p))
            if not g:
                vals.append(float("nan"))
                continue
            m = med(g, "txn_per_s")
            vals.append(m)
            ratio = f"{m / med(base, 'txn_per_s'):.2f}x" if base else "-"
            print(f"| {p} | {n} | {m:,.0f} | {min(r['txn_per_s'] for r in g):,.0f} | {ratio} |")
        ax.bar([x + i * width for x in range(len(pcts))], vals, width, label=n)
    ax.set_xticks([x + width for x in range(len(pcts))])
    ax.set_xticklabels([f"{p} % cold" for p in pcts])
    ax.set_ylabel("txn/s")
    ax.set_title("storage path structure (MosaicDB Fig. 11)")
    ax.legend()
    save(fig, out, "fig11.png")


def contention(out):
    rows = load(out, "contention")
    if not rows:
        return
    groups = defaultdict(list)
    for r in rows:
        label = r["mode"] if r["mode"] in ("sequential", "prefetch") else f"{r['mode']}@{r['batch']}"
        groups[(label, r["workers"])].append(r)
    labels = sorted({l for l, _ in groups}, key=lambda l: (l != "sequential", l))
    workers = sorted({w for _, w in groups})
    print(f"\n### contention: single inserts, increasing keys, {rows[0]['cores']} cores\n")
    print("| workers | variant | txn/s median | min | restarts/txn | backoff share |")
    print("|---|---|---|---|---|---|")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for l in labels:
        for w in workers:
            g = groups.get((l, w))
            if g:
                print(f"| {w} | {l} | {med(g, 'txn_per_s'):,.0f} |"
                      f" {min(r['txn_per_s'] for r in g):,.0f} |"
                      f" {med(g, 'restarts_per_txn'):.3f} | {100 * med(g, 'wait_share'):.2f} % |")
        ws = [w for w in workers if (l, w) in groups]
        axes[0].plot(ws, [med(groups[(l, w)], "txn_per_s") for w in ws], marker="o", label=l)
        axes[1].plot(ws, [100 * med(groups[(l, w)], "wait_share") for w in ws], marker="o",
                     label=l)
    cores = rows[0]["cores"]
    for ax, t in zip(axes, ["txn/s", "time backing off (%)"]):
        ax.axvline(cores, color="gray", linestyle="--")
        ax.set_xlabel("workers (dashed: cores; right of it oversubscribed)")
        ax.set_title(t)
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("contention (MosaicDB Fig. 12)")
    save(fig, out, "contention.png")


def flusher(out):
    rows = load(out, "flusher-ab")
    if not rows:
        return
    g = defaultdict(list)
    for r in rows:
        g[(r["bench"], r["threads"], r["log_flusher"])].append(r["txn_per_s"])
    cells = sorted({(b, t) for b, t, _ in g})
    print("\n### fig10: no background threads vs an oversubscribed log flusher\n")
    print("| bench | workers | no background thread | flusher thread | ratio |")
    print("|---|---|---|---|---|")
    fig, ax = plt.subplots(figsize=(7, 4))
    labels, a_vals, b_vals = [], [], []
    for b, t in cells:
        a, f = g.get((b, t, "none"), []), g.get((b, t, "thread"), [])
        if not a or not f:
            continue
        ma, mf = statistics.median(a), statistics.median(f)
        print(f"| {b} | {t} | {ma:,.0f} (min {min(a):,.0f}) | {mf:,.0f} (min {min(f):,.0f}) |"
              f" {ma / mf:.2f}x ({len(a)} pairs) |")
        labels.append(f"{b}\n{t} worker{'s' if t > 1 else ''}")
        a_vals.append(ma / mf)
        b_vals.append(1.0)
    xs = list(range(len(labels)))
    ax.bar([x - 0.2 for x in xs], b_vals, 0.4, label="flusher thread (1.0)")
    ax.bar([x + 0.2 for x in xs], a_vals, 0.4, label="no background thread")
    ax.set_xticks(xs)
    ax.set_xticklabels(labels)
    ax.set_ylabel("txn/s relative to the flusher thread")
    ax.set_title("durable commits: no background threads vs a flusher (MosaicDB Fig. 10)")
    ax.legend()
    save(fig, out, "fig10.png")


def main(out):
    fio = None
    fio_path = os.path.join(out, "fio.json")
    if os.path.exists(fio_path):
        fio = json.load(open(fio_path))["jobs"][0]["read"]["iops"]
    sweep(out, "fig6", fio)
    sweep(out, "fig7", fio)
    fig8(out)
    flusher(out)
    fig11(out)
    contention(out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
