#!/usr/bin/env python3
"""Tables and plots from scripts/icache.sh's callgrind dumps (issue 22, STEPS).

Per run (a dump: one workload in one mode under one scheduler): instructions, L1-I misses,
L1-D and LL misses and branch mispredictions per transaction, and the code footprint: the
distinct 64-byte lines of code the run executed (from --dump-instr=yes: every executed
instruction's address), with the functions that hold most of it. callgrind starts each run with
cold caches, so a run's first touch of each footprint line is a miss; "misses past the
footprint" subtracts those (what a longer run would see per transaction).

    scripts/icache.py OUT --txns N [--arch A] [--commit C]

Writes OUT/icache.json, OUT/icache.md, OUT/icache-footprint.png, OUT/icache-tpcc.png and
OUT/icache-steps.png (the latter when the steps microbenchmark ran).
"""
import argparse
import glob
import importlib.util
import json
import os
import re
import sys

EVENTS = ["Ir", "I1mr", "D1mr", "DLmr", "Bc", "Bcm", "Bi", "Bim"]
LINE = 64
L1I_BYTES = 32 * 1024


def read_dump(path):
    """{label, totals, lines, by_fn} of one callgrind dump made with --dump-instr=yes.

    lines: the set of (object, line) executed; by_fn: function -> set of lines."""
    label, events, totals = None, None, None
    names = {"ob": {}, "fn": {}}
    ob = fn = None
    last = 0
    lines = set()
    by_fn = {}
    after_calls = False
    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line:
                continue
            c = line[0]
            if c in "0123456789+-*":
                tok = line.split(" ", 1)[0]
                if tok.startswith("0x"):
                    addr = int(tok, 16)
                elif tok[0] == "+":
                    addr = last + int(tok[1:], 16 if tok[1:].startswith("0x") else 10)
                elif tok[0] == "-":
                    addr = last - int(tok[1:], 16 if tok[1:].startswith("0x") else 10)
                elif tok == "*":
                    addr = last
                else:
                    addr = int(tok)
                last = addr
                if not after_calls:  # a call's line carries the callee's inclusive cost
                    key = (ob, addr // LINE)
                    lines.add(key)
                    by_fn.setdefault(fn, set()).add(key)
                after_calls = False
                continue
            after_calls = False
            if line.startswith("calls="):
                after_calls = True
            elif line.startswith(("ob=", "fn=")):
                kind, rest = line[:2], line[3:]
                m = re.match(r"\((\d+)\)(?: (.*))?$", rest)
                if m:
                    if m.group(2) is not None:
                        names[kind][m.group(1)] = m.group(2)
                    value = names[kind].get(m.group(1), m.group(1))
                else:
                    value = rest
                if kind == "ob":
                    ob = value
                else:
                    fn = value
            elif line.startswith(("cob=", "cfn=", "cfi=", "cfl=", "fi=", "fe=", "fl=")):
                kind, rest = line.split("=", 1)
                m = re.match(r"\((\d+)\) (.*)$", rest)
                if m and kind in ("cob", "cfn"):  # names defined first in a call's context
                    names[kind[1:]][m.group(1)] = m.group(2)
            elif line.startswith("desc: Trigger: Client Request: "):
                label = line.split(": ", 2)[2].split(":", 1)[1].strip()
            elif line.startswith("events: "):
                events = line.split()[1:]
            elif line.startswith("totals: ") or line.startswith("summary: "):
                totals = [int(x) for x in line.split()[1:]]
    if label is None or events is None or totals is None:
        return None
    return {"label": label, "totals": dict(zip(events, totals)), "lines": lines, "by_fn": by_fn}


def _profile_ops():
    """scripts/profile-ops.py as a module (its name has a dash): its helpers are shared."""
    spec = importlib.util.spec_from_file_location(
        "profile_ops", os.path.join(os.path.dirname(os.path.abspath(__file__)), "profile-ops.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PROFILE_OPS = _profile_ops()


def short(fn, width=70):
    return PROFILE_OPS.short(fn or "?", width)


def case_of(name, label, d, txns):
    t = d["totals"]
    fp = len(d["lines"])
    # "tpcc-int" dumps are labelled mix/mode/scheduler (a list of schedulers) or mix/mode, and
    # the "-order" runs end in /arrival or /grouped (tpcc --type-order).
    parts = label.split("/")
    order = ""
    if parts[-1] in ("arrival", "grouped"):
        order = parts.pop()
    if name.startswith("tpcc"):
        workload, mode = "tpcc " + parts[0], parts[1]
        sched = parts[2] if len(parts) > 2 else ("-" if mode == "sequential" else "pipeline")
        # icache.sh's comparisons run one variant per process, named
        # tpcc-(seq|int)-(arrival|grouped|bN)[-scheduler]: the name says what the label omits.
        m = re.match(r"tpcc-(?:seq|int)-(?:(arrival|grouped)|b(\d+))(?:-(.+))?$", name)
        if m:
            order = m.group(1) or order
            if m.group(3):
                sched = m.group(3).replace("-", " ")
            if m.group(2):
                sched += "@" + m.group(2)
        if order:
            sched = order if sched == "-" else sched + ", " + order
    elif name.startswith("ycsb"):
        m = re.match(r"ycsb-(\w+)-(seq|int)(?:-(.+))?$", name)
        workload = "ycsb " + ("read-only" if m.group(1) == "read" else "rmw")
        mode = parts[0]
        sched = m.group(3) or "-"
    else:
        return None
    merged = {}  # callgrind's recursion copies (name'2) are the same function
    for k, v in d["by_fn"].items():
        merged.setdefault(re.sub(r"'\d+$", "", k or "?"), set()).update(v)
    top = sorted(((len(v), k) for k, v in merged.items()), reverse=True)[:12]
    case = {"workload": workload, "mode": mode, "scheduler": sched, "txns": txns,
            "footprint_lines": fp, "footprint_kib": fp * LINE / 1024.0,
            "top_footprint": [{"function": short(k), "kib": n * LINE / 1024.0} for n, k in top]}
    for e in EVENTS:
        case[e + "_per_txn"] = t.get(e, 0) / txns
    case["I1mr_past_footprint_per_txn"] = max(0, t.get("I1mr", 0) - fp) / txns
    case["branch_miss_per_txn"] = (t.get("Bcm", 0) + t.get("Bim", 0)) / txns
    return case


def steps_cases(d):
    """The microbenchmark's dumps: labelled steps/<order>/<cache>/<n>."""
    parts = d["label"].split("/")
    if len(parts) != 4 or parts[0] != "steps":
        return None
    return {"order": parts[1], "cache": parts[2], "n": int(parts[3]),
            "I1mr": d["totals"].get("I1mr", 0), "Ir": d["totals"].get("Ir", 0),
            "footprint_lines": len(d["lines"])}


def plot(out, cases, steps):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("icache.py: matplotlib is missing; no PNGs", file=sys.stderr)
        return
    seq = [c for c in cases if c["mode"] == "sequential"]
    if seq:
        fig, ax = plt.subplots(figsize=(9, 4))
        names = [c["workload"] for c in seq]
        ax.barh(names, [c["footprint_kib"] for c in seq], color="#4477aa")
        ax.axvline(L1I_BYTES / 1024, color="red", linestyle="--", label="L1-I (32 KiB)")
        ax.set_xlabel("code footprint of the run (KiB of distinct 64-byte lines), sequential")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "icache-footprint.png"), dpi=120)
        plt.close(fig)
    # Per workload, the three runs every workload has: sequential, pipeline, team.
    basic = [("sequential", "-"), ("interleaved", "pipeline"), ("interleaved", "team")]
    tp = [c for c in cases if (c["mode"], c["scheduler"]) in basic]
    if tp:
        workloads = list(dict.fromkeys(c["workload"] for c in tp))
        fig, ax = plt.subplots(figsize=(11, 4.5))
        w = 0.8 / len(basic)
        for vi, (mode, sched) in enumerate(basic):
            ys = []
            for wl in workloads:
                m = [c for c in tp if c["workload"] == wl and c["mode"] == mode and
                     c["scheduler"] == sched]
                ys.append(m[0]["I1mr_past_footprint_per_txn"] if m else 0)
            ax.bar([i + vi * w for i in range(len(workloads))], ys, w,
                   label=mode + ("" if sched == "-" else "/" + sched))
        ax.set_xticks([i + 0.4 - w / 2 for i in range(len(workloads))])
        ax.set_xticklabels(workloads, rotation=30, ha="right")
        ax.set_ylabel("L1-I misses per transaction\n(past the first touch)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "icache-types.png"), dpi=120)
        plt.close(fig)
    # The TPC-C mix under every scheduler and type order, each against pipeline in the drawn
    # order (the baseline): L1-I misses and instructions per transaction.
    mix = [c for c in cases if c["workload"] == "tpcc tpcc" and c["mode"] == "interleaved"]
    base = [c for c in mix if c["scheduler"] == "pipeline, arrival"]
    if mix and base:
        mix.sort(key=lambda c: c["I1mr_past_footprint_per_txn"])
        names = [c["scheduler"] for c in mix]
        fig, axes = plt.subplots(1, 2, figsize=(12, 0.35 * len(mix) + 1.5), sharey=True)
        for ax, key, label in ((axes[0], "I1mr_past_footprint_per_txn", "L1-I misses"),
                               (axes[1], "Ir_per_txn", "instructions")):
            ref = base[0][key]
            ax.barh(names, [c[key] / ref for c in mix],
                    color=["#cc6677" if c["scheduler"].startswith("team") else "#4477aa"
                           for c in mix])
            ax.axvline(1.0, color="black", linewidth=0.8)
            if key.startswith("I1"):
                ax.axvline(0.5, color="red", linestyle="--", label="target: 0.5x")
                ax.legend(loc="lower right")
            ax.set_xlabel(f"{label} per transaction, x pipeline (drawn order)")
        axes[0].invert_yaxis()
        fig.suptitle("TPC-C mix, interleaved, 1 worker, batch 8 (@16: batch 16)")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "icache-tpcc.png"), dpi=120)
        plt.close(fig)
    if steps:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for (order, cache), pts in sorted(steps.items()):
            pts = sorted(pts, key=lambda p: p["n"])
            ax.plot([p["n"] for p in pts], [p["I1mr"] for p in pts], marker="o",
                    label=f"{order}, {cache} cache")
        ax.set_xlabel("transactions fetching (N)")
        ax.set_ylabel("L1-I misses (whole fetch of N)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "icache-steps.png"), dpi=120)
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--txns", type=int, required=True)
    ap.add_argument("--arch", default="")
    ap.add_argument("--commit", default="")
    a = ap.parse_args()
    cases, steps = [], {}
    dumps = glob.glob(os.path.join(a.out, "raw", "*.cg.*"))
    dumps.sort(key=lambda p: (p.rsplit(".", 1)[0], int(p.rsplit(".", 1)[1])))
    for path in dumps:
        name = os.path.basename(path).split(".cg.")[0]
        d = read_dump(path)
        if d is None:
            continue
        if name == "steps":
            s = steps_cases(d)
            if s:
                steps.setdefault((s["order"], s["cache"]), []).append(s)
            continue
        c = case_of(name, d["label"], d, a.txns)
        if c:
            cases.append(c)
    # TPC-C types in the spec's order, then the mixes, then YCSB; sequential first.
    wl_order = ["tpcc new-order", "tpcc payment", "tpcc order-status", "tpcc delivery",
                "tpcc stock-level", "tpcc q2", "tpcc tpcc", "tpcc tpcc-h", "ycsb read-only",
                "ycsb rmw"]
    cases.sort(key=lambda c: (wl_order.index(c["workload"]) if c["workload"] in wl_order else 99,
                              c["mode"] != "sequential", "@" in c["scheduler"], c["scheduler"]))
    if not cases and not steps:
        sys.exit("icache.py: no callgrind dumps under " + a.out + "/raw")
    meta = {"commit": a.commit, "arch": a.arch, "txns": a.txns,
            "caches": "I1 32 KiB 8-way, D1 32 KiB 8-way, LL 32 MiB 16-way, 64 B lines"}
    steps_rows = []
    for (order, cache), pts in sorted(steps.items()):
        for p in sorted(pts, key=lambda p: p["n"]):
            steps_rows.append(p)
    with open(os.path.join(a.out, "icache.json"), "w") as f:
        json.dump({"meta": meta, "cases": cases, "steps": steps_rows}, f, indent=1)
    md = ["# L1-I misses and code footprint (callgrind)", "",
          f"Commit {a.commit}, -march={a.arch}, {a.txns} transactions per run, 1 worker, batch "
          f"8; {meta['caches']}. Footprint: distinct 64-byte code lines the run executed. "
          "`scripts/icache.sh` regenerates this.", "",
          "| workload | mode | scheduler | footprint KiB | Ir/txn | I1 miss/txn | past footprint "
          "| D1 miss/txn | LL miss/txn | branch miss/txn |",
          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for c in cases:
        md.append(f"| {c['workload']} | {c['mode']} | {c['scheduler']} | "
                  f"{c['footprint_kib']:.1f} | {c['Ir_per_txn']:.0f} | {c['I1mr_per_txn']:.1f} | "
                  f"{c['I1mr_past_footprint_per_txn']:.1f} | {c['D1mr_per_txn']:.1f} | "
                  f"{c['DLmr_per_txn']:.1f} | {c['branch_miss_per_txn']:.1f} |")
    if steps_rows:
        md += ["", "## STEPS microbenchmark: one index fetch by N transactions", "",
               "| order | cache | N | L1-I misses | per member past the first | Ir |",
               "|---|---|---:|---:|---:|---:|"]
        for (order, cache), pts in sorted(steps.items()):
            pts = sorted(pts, key=lambda p: p["n"])
            first = pts[0]["I1mr"] if pts and pts[0]["n"] == 1 else None
            for p in pts:
                extra = ("-" if first is None or p["n"] == 1 else
                         f"{(p['I1mr'] - first) / (p['n'] - 1):.1f}")
                md.append(f"| {order} | {cache} | {p['n']} | {p['I1mr']} | {extra} | {p['Ir']} |")
    for c in cases:
        if c["mode"] != "sequential":
            continue
        md += ["", f"## {c['workload']}, sequential: where the footprint lies", "",
               "| KiB | function |", "|---:|---|"]
        for t in c["top_footprint"]:
            md.append(f"| {t['kib']:.1f} | `{t['function']}` |")
    with open(os.path.join(a.out, "icache.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    plot(a.out, cases, steps)


if __name__ == "__main__":
    main()
