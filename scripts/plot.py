#!/usr/bin/python3
"""Draws PNG figures from braid-bench JSON results (matplotlib from Debian's python3-matplotlib).

  scripts/plot.py results/corobase       # fig6.jsonl ... fig12.jsonl -> fig6.png ... fig12.png
  scripts/plot.py results/matrix         # matrix.jsonl -> matrix.png
  scripts/plot.py results/killer         # kn-fig1.jsonl ... (braid-bench probe) -> kn-fig1.png ...
  scripts/plot.py results/tpcc           # tpcc.jsonl (braid-bench tpcc) -> tpcc.png

Each point is the median over repeated runs of the same configuration.
"""
import json
import os
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {
    "plain": ("plain (no coroutines)", "k", ":"),
    "sequential": ("sequential (Naive)", "tab:gray", "-"),
    "prefetch": ("prefetch (ERMIA)", "tab:blue", "-"),
    "nested": ("nested (CoroBase-FN)", "tab:orange", "-"),
    "interleaved": ("interleaved (CoroBase)", "tab:red", "-"),
    "auto": ("auto", "tab:green", "--"),
    "coro-mk": ("CORO-MK", "tab:purple", "-."),
    "coro-fn-mk": ("CORO-FN-MK", "tab:brown", "-."),
    "hybrid": ("Hybrid", "tab:pink", "-."),
}


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def variant(r):
    if r.get("bench") == "tpcc":
        return "hybrid" if r.get("hybrid") and r["mode"] == "interleaved" else r["mode"]
    if r.get("multi_get"):
        if r["batch"] == 1:
            return "coro-fn-mk" if r["mode"] == "nested" else "coro-mk"
        return "hybrid"
    return r["mode"]


def series(rows, x_of, select=lambda r: True):
    """{variant: [(x, median txn/s)]}"""
    acc = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if select(r):
            acc[variant(r)][x_of(r)].append(r["txn_per_s"])
    return {v: sorted((x, statistics.median(ys)) for x, ys in pts.items()) for v, pts in acc.items()}


def draw(ax, data, title, xlabel, normalize_to=None, logx=False):
    base = dict(data.get(normalize_to, [])) if normalize_to else None
    for v, pts in data.items():
        if v not in STYLE:
            continue
        label, color, ls = STYLE[v]
        xs = [x for x, _ in pts if base is None or x in base]
        ys = [y / base[x] if base else y for x, y in pts if base is None or x in base]
        ax.plot(xs, ys, marker="o", color=color, linestyle=ls, label=label)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"throughput / {normalize_to}" if normalize_to else "txn/s")
    if logx:
        ax.set_xscale("log")
    ax.grid(alpha=0.3)


def is_read_only(r):
    return r["read"] == 100


PROBE_STYLE = {
    "naive": ("tab:gray", "-"),
    "gp": ("tab:blue", "-"),
    "amac": ("tab:green", "-"),
    "coro": ("tab:red", "-"),
    "engine": ("tab:purple", "--"),
}


def probe_panel(ax, rows, x_of, y_of, title, xlabel, ylabel, logx=False):
    """One panel of a probe figure: a line per technique, median over repeats."""
    acc = defaultdict(lambda: defaultdict(list))
    for r in rows:
        acc[r["technique"]][x_of(r)].append(y_of(r))
    xs_all = sorted({x for pts in acc.values() for x in pts})
    for tech, pts in acc.items():
        color, ls = PROBE_STYLE.get(tech, ("k", ":"))
        pts = sorted((x, statistics.median(ys)) for x, ys in pts.items())
        if len(pts) == 1 and len(xs_all) > 1:  # naive has no group: a flat reference line
            ax.plot([xs_all[0], xs_all[-1]], [pts[0][1]] * 2, color=color, linestyle=":", label=tech)
        else:
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", markersize=3,
                    color=color, linestyle=ls, label=tech)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log")
    ax.grid(alpha=0.3)


def probe_figures(d, save):
    mps = lambda r: r["probes_per_s"] / 1e6
    per_thread = lambda r: r["probes_per_s"] / 1e6 / r["threads"]
    # figure: (x, y, y label, panel key, x label, log x)
    spec = {
        1: ("group", mps, "M probes/s", "keys", "group size", False),
        2: ("group", mps, "M probes/s", "keys", "group size", False),
        3: ("threads", per_thread, "M probes/s per thread", None, "threads", False),
        4: ("bytes", mps, "M probes/s (all threads)", None, "table bytes", True),
        6: ("group", mps, "M searches/s", "keys", "group size", False),
        7: ("group", mps, "M searches/s", "keys", "group size", False),
        8: ("threads", per_thread, "M searches/s per thread", None, "threads", False),
        10: ("bytes", mps, "M searches/s (all threads)", None, "array bytes", True),
    }
    for n, (xk, y_of, ylabel, pk, xlabel, logx) in spec.items():
        p = os.path.join(d, f"kn-fig{n}.jsonl")
        if not os.path.exists(p):
            continue
        rows = load(p)
        panels = sorted({(r[pk] if pk else 0, r["dist"]) for r in rows})
        fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.8), squeeze=False)
        for ax, (pv, dist) in zip(axes[0], panels):
            sel = [r for r in rows if r["dist"] == dist and (not pk or r[pk] == pv)]
            size = f"{sel[0]['bytes'] / 2**20:.1f} MiB, " if pk else ""
            probe_panel(ax, sel, lambda r: r[xk], y_of,
                        f"Fig. {n}: {sel[0]['structure']}, {size}{dist}", xlabel, ylabel, logx)
        axes[0][0].legend(fontsize=7)
        save(fig, f"kn-fig{n}.png")
    p = os.path.join(d, "kn-fig11.jsonl")
    if os.path.exists(p):
        rows = load(p)
        fig, axes = plt.subplots(1, 4, figsize=(18, 3.8))
        for i, dist in enumerate(("uniform", "zipf")):
            by_group = [r for r in rows if r["dist"] == dist and r["threads"] == 1]
            probe_panel(axes[2 * i], by_group, lambda r: r["group"], mps,
                        f"Fig. 11a: B+-tree 2e7 keys, {dist}", "group size", "M lookups/s")
            by_threads = [r for r in rows if r["dist"] == dist and r["technique"] != "engine"
                          and (r["group"] == 16 or r["technique"] == "naive")]
            probe_panel(axes[2 * i + 1], by_threads, lambda r: r["threads"], per_thread,
                        f"Fig. 11d: B+-tree, {dist}, group 16", "threads", "M lookups/s per thread")
        axes[0].legend(fontsize=7)
        save(fig, "kn-fig11.png")


def bwtree_figure(d, save):
    """Fig. 13: the Bw-tree, (a) group sweep on 1 thread, (b) on all threads, (c) threads at
    group 12, all with 10 % of the keys inserted after the load; (d) that share swept."""
    p = os.path.join(d, "kn-fig13.jsonl")
    if not os.path.exists(p):
        return
    rows = load(p)
    mps = lambda r: r["probes_per_s"] / 1e6
    base = [r for r in rows if r.get("delta_pct") == 10]
    most = max((r["threads"] for r in base), default=1)
    fig, axes = plt.subplots(1, 4, figsize=(18, 3.8))
    probe_panel(axes[0], [r for r in base if r["threads"] == 1], lambda r: r["group"], mps,
                "Fig. 13a: Bw-tree 2e7 keys, 1 thread", "group size", "M lookups/s")
    probe_panel(axes[1], [r for r in base if r["threads"] == most], lambda r: r["group"], mps,
                f"Fig. 13b: Bw-tree, {most} threads", "group size", "M lookups/s")
    probe_panel(axes[2], [r for r in base if r["group"] == 12 or r["technique"] == "naive"],
                lambda r: r["threads"], lambda r: mps(r) / r["threads"],
                "Fig. 13c: Bw-tree, group 12", "threads", "M lookups/s per thread")
    probe_panel(axes[3], [r for r in rows if r["threads"] == 1 and
                          (r["group"] == 16 or r["technique"] == "naive")],
                lambda r: r["delta_pct"], mps, "Bw-tree: % of keys inserted after the load",
                "% inserted (delta records)", "M lookups/s")
    axes[0].legend(fontsize=7)
    save(fig, "kn-fig13.png")


def figures(d):
    made = []
    def save(fig, name):
        path = os.path.join(d, name)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)

    # One-panel figures: (file, x, title, x label, normalized to, log x).
    for name, x_of, title, xlabel, norm, logx in [
            ("fig6", lambda r: r["threads"], "Fig. 6: YCSB read-only, 10 reads/txn", "workers",
             None, False),
            ("fig7", lambda r: r["ops_per_txn"], "Fig. 7: read-only, reads per transaction",
             "operations per transaction", "sequential", False),
            ("fig11", lambda r: r["records"], "Fig. 11: read-only, table size", "records",
             "sequential", True)]:
        p = os.path.join(d, name + ".jsonl")
        if os.path.exists(p):
            fig, ax = plt.subplots(figsize=(6, 4))
            draw(ax, series(load(p), x_of), title, xlabel, normalize_to=norm, logx=logx)
            ax.legend(fontsize=7)
            save(fig, name + ".png")
    # Two-panel figures: (file, [(x, select, title, x label, log x), ...]).
    for name, panels in [
            ("fig8", [(lambda r: r["threads"], lambda r: r["update"] == 100,
                       "Fig. 8a: update-only, 10 blind writes/txn", "workers", False),
                      (lambda r: r["threads"], lambda r: r["rmw"] == 20,
                       "Fig. 8c: 2 RMW + 8 reads", "workers", False)]),
            ("fig10", [(lambda r: r["key_bytes"], lambda r: r["value_bytes"] == 8,
                        "Fig. 10 left: key length", "key bytes", False),
                       (lambda r: r["value_bytes"], lambda r: r["key_bytes"] == 8,
                        "Fig. 10 right: value size", "value bytes", True)])]:
        p = os.path.join(d, name + ".jsonl")
        if os.path.exists(p):
            rows = load(p)
            fig, axes = plt.subplots(1, 2, figsize=(10, 4))
            for ax, (x_of, sel, title, xlabel, logx) in zip(axes, panels):
                draw(ax, series(rows, x_of, sel), title, xlabel, logx=logx)
            axes[0].legend(fontsize=7)
            save(fig, name + ".png")
    p = os.path.join(d, "fig12.jsonl")
    if os.path.exists(p):
        rows = load(p)
        fig, axes = plt.subplots(1, 3, figsize=(14, 4))
        for ax, (title, sel) in zip(axes, [
                ("Fig. 12b: read-only", lambda r: r["read"] == 100),
                ("Fig. 12c: update-only", lambda r: r["update"] == 100),
                ("Fig. 12d: RMW-only", lambda r: r["rmw"] == 100)]):
            draw(ax, series(rows, lambda r: r["theta"], sel), title, "Zipf theta")
        axes[0].legend(fontsize=7)
        save(fig, "fig12.png")
    p = os.path.join(d, "matrix.jsonl")
    if os.path.exists(p):
        rows = load(p)
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, t in zip(axes, (1, 2)):
            draw(ax, series(rows, lambda r: r["records"], lambda r, t=t: r["threads"] == t and is_read_only(r)),
                 f"read-only 10 reads/txn, {t} worker(s)", "records", logx=True)
        axes[0].legend(fontsize=7)
        save(fig, "matrix.png")
    p = os.path.join(d, "tpcc.jsonl")
    if os.path.exists(p):
        tpcc_figure(load(p), save)
    probe_figures(d, save)
    bwtree_figure(d, save)
    return made


def tpcc_figure(rows, save):
    """Throughput by mode (bars) and mix (groups), one panel per worker count: medians."""
    mixes = [m for m in ("tpcc", "tpcc-r", "tpcc-h") if any(r["mix"] == m for r in rows)]
    order = ["sequential", "prefetch", "nested", "interleaved", "hybrid", "auto"]
    threads = sorted({r["threads"] for r in rows})
    fig, axes = plt.subplots(1, len(threads), figsize=(6 * len(threads), 4), squeeze=False)
    for ax, t in zip(axes[0], threads):
        acc = defaultdict(list)
        for r in rows:
            if r["threads"] == t:
                acc[(r["mix"], variant(r))].append(r["txn_per_s"])
        present = [v for v in order if any((m, v) in acc for m in mixes)]
        width = 0.8 / max(1, len(present))
        for i, v in enumerate(present):
            xs = [j + (i - (len(present) - 1) / 2) * width for j in range(len(mixes))]
            ys = [statistics.median(acc[(m, v)]) if (m, v) in acc else 0 for m in mixes]
            label, color, _ = STYLE[v]
            ax.bar(xs, ys, width, label=label, color=color)
        ax.set_xticks(range(len(mixes)))
        ax.set_xticklabels([m.upper() for m in mixes])
        ax.set_ylabel("transactions / s (median)")
        ax.set_title(f"TPC-C mixes, {t} worker(s), {rows[0]['warehouses']} warehouses")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    save(fig, "tpcc.png")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for path in figures(sys.argv[1]):
        print(path)
