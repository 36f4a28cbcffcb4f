#!/usr/bin/env python3
"""Plots scripts/umbra-figures.sh's results: Umbra Figs. 5, 6 and 8 at this machine's scale.

Usage: scripts/umbra-plot.py DIR   (reads DIR/fig5.jsonl, fig6.jsonl, fig8.jsonl, fio-qd*.json;
writes DIR/fig5.png, fig6.png, fig8.png and prints each figure's medians as a table)

Every point is the median over the rounds, with the min and max as an error bar. The device's
own figure from fio on the same file system is drawn on each, converted to the figure's unit:
fig5 and fig6 (scans, which read extents in file order) the rows/s at which fio's best 128 KiB
sequential bandwidth would deliver the bytes the async runs read per row (a ceiling per cached
share in fig6); fig8 (point lookups) fio's best 4 KiB random-read IOPS over the cold lookups'
share.
"""
import glob
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def fio_read(out, prefix="fio-qd", field="iops"):
    """{queue depth: read `field`} from <prefix><D>.json (fio-qd: 4 KiB random reads; fio-seq-qd:
    4 KiB sequential; fio-seq128k-qd: 128 KiB sequential)."""
    got = {}
    for path in glob.glob(os.path.join(out, prefix + "*.json")):
        qd = int(os.path.basename(path)[len(prefix):-len(".json")])
        with open(path) as f:
            text = f.read()
        text = text[text.index("{"):]  # fio may print notes before its JSON
        got[qd] = json.loads(text)["jobs"][0]["read"][field]
    return got


def rows_per_byte(rows):
    """{cached_pct: median rows per byte read from storage} over the async runs that read."""
    groups = {}
    for r in rows:
        if r["io"] == "async" and r.get("read_mib_per_s", 0) > 0:
            groups.setdefault(r["cached_pct"], []).append(
                r["rows_per_s"] / (r["read_mib_per_s"] * 2**20))
    return {pct: statistics.median(v) for pct, v in groups.items()}


def series(rows, key_fn, x_field, y_field):
    """{label: [(x, median, min, max)]} over the rounds of each (label, x)."""
    groups = {}
    for r in rows:
        groups.setdefault((key_fn(r), r[x_field]), []).append(r[y_field])
    out = {}
    for (label, x), ys in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        out.setdefault(label, []).append((x, statistics.median(ys), min(ys), max(ys)))
    return out


def label_of(r):
    return "sync" if r["io"] == "sync" else "async, depth %d" % r["io_depth"]


def draw(ax, data, unit_scale=1.0):
    for label, pts in data.items():
        xs = [p[0] for p in pts]
        ys = [p[1] / unit_scale for p in pts]
        lo = [(p[1] - p[2]) / unit_scale for p in pts]
        hi = [(p[3] - p[1]) / unit_scale for p in pts]
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=label)


def table(title, data, fmt="%.0f"):
    print(title)
    for label, pts in data.items():
        cells = ", ".join(("%s: " + fmt) % (p[0], p[1]) for p in pts)
        print("  %-18s %s" % (label, cells))


def per_thread_figure(out, name, rows, field, ceiling, ceiling_label, log_y, ylabel, title):
    """Figs. 5 and 8: `field` per thread by threads, one line per kind of I/O, and `ceiling`:
    the rate all workers together would reach at the device's fio figure; prints the
    per-thread and the total medians."""
    per_thread = [dict(r, per_thread=r[field] / r["threads"]) for r in rows]
    data = series(per_thread, label_of, "threads", "per_thread")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    draw(ax, data, 1e3)
    if ceiling:
        ax.axhline(ceiling / 1e3, color="grey", linestyle="--", label=ceiling_label)
    ax.set_xscale("log", base=2)
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("threads (workers)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, name + ".png"), dpi=120)
    table("%s: %s per thread, by threads" % (name, field), data)
    table("%s: %s in all, by threads" % (name, field), series(rows, label_of, "threads", field))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    fio = fio_read(out)
    best_fio = max(fio.values()) if fio else None
    seq128 = fio_read(out, "fio-seq128k-qd", "bw_bytes")
    best_bw = max(seq128.values()) if seq128 else None
    bw_label = "fio 128 KiB sequential, best depth, over the bytes read per row"

    fig5 = load(os.path.join(out, "fig5.jsonl"))
    if fig5:
        per_byte = rows_per_byte(fig5)
        ceiling = best_bw * statistics.median(per_byte.values()) if best_bw and per_byte else None
        per_thread_figure(out, "fig5", fig5, "rows_per_s", ceiling, bw_label + " (all workers)",
                          False, "rows/s per thread (thousands)",
                          "q1, 60 % cached (Umbra Fig. 5)")

    fig6 = load(os.path.join(out, "fig6.jsonl"))
    if fig6:
        data = series(fig6, label_of, "cached_pct", "rows_per_s")
        fig, ax = plt.subplots(figsize=(7, 4.5))
        draw(ax, data, 1e3)
        async_zero = [p for label, pts in data.items() if label != "sync" for p in pts
                      if p[0] == 0]
        if async_zero:
            ax.axhline(async_zero[0][1] / 1e3, color="black", linestyle=":",
                       label="async, nothing cached")
        per_byte = rows_per_byte(fig6)
        if best_bw and per_byte:
            xs = sorted(per_byte)
            ax.plot(xs, [best_bw * per_byte[x] / 1e3 for x in xs], color="grey",
                    linestyle="--", marker="x", label=bw_label)
            print("fig6: device ceiling rows/s, by cached %: " +
                  ", ".join("%s: %.0f" % (x, best_bw * per_byte[x]) for x in xs))
        ax.set_yscale("log")
        ax.set_xlabel("cached (%)")
        ax.set_ylabel("rows/s (thousands)")
        ax.set_title("q1, 2 workers (Umbra Fig. 6)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "fig6.png"), dpi=120)
        table("fig6: q1 rows/s, by cached %", data)

    fig8 = load(os.path.join(out, "fig8.jsonl"))
    if fig8:
        cold = 1 - statistics.median(r["cached_pct"] for r in fig8) / 100
        ceiling = best_fio / cold if best_fio and cold > 0 else None
        per_thread_figure(out, "fig8", fig8, "lookups_per_s", ceiling,
                          "fio 4 KiB randread, best depth, over the cold lookups' share "
                          "(all workers)", True, "lookups/s per thread (thousands)",
                          "q14 probes, 60 % of lookups cached (Umbra Fig. 8)")

    if fio:
        print("fio 4 KiB randread IOPS by depth: " +
              ", ".join("%d: %.0f" % (qd, fio[qd]) for qd in sorted(fio)))
    seq = fio_read(out, "fio-seq-qd")
    if seq:
        print("fio 4 KiB sequential read IOPS by depth: " +
              ", ".join("%d: %.0f" % (qd, seq[qd]) for qd in sorted(seq)))
    if seq128:
        print("fio 128 KiB sequential read MiB/s by depth: " +
              ", ".join("%d: %.0f" % (qd, seq128[qd] / 2**20) for qd in sorted(seq128)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
