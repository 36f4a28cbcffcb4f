#!/usr/bin/env python3
"""Tables from scripts/profile-ops.sh's callgrind dumps: per case (records x operation x mode),
instructions, L1-I, L1-D and LL misses and branch mispredictions per operation and per
transaction, and the top functions by instructions (self cost) per operation.

    scripts/profile-ops.py OUT --txns N --ops-per-txn K [--arch A] [--commit C] [--l2-kib K]
                           [--top T]
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

EVENTS = ["Ir", "I1mr", "D1mr", "DLmr", "Bcm", "Bim"]


def read_dump(path):
    """(label, totals by event) of one callgrind dump."""
    label, events, totals = None, None, None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("desc: Trigger: Client Request: "):
                label = line.split(": ", 2)[2].split(":", 1)[1].strip()
            elif line.startswith("events: "):
                events = line.split()[1:]
            elif line.startswith("totals: "):
                totals = [int(x) for x in line.split()[1:]]
    if label is None or events is None or totals is None:
        return None, None
    return label, dict(zip(events, totals))


def top_functions(path, top):
    """[(function, {event: self cost})] from callgrind_annotate, by instructions. Code inlined
    from other files, and callgrind's recursion copies (name'2), count for the function."""
    out = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--auto=no", "--show=" + ",".join(EVENTS), "--sort=Ir",
         path], capture_output=True, text=True, check=True).stdout
    cell = r"(?:[\d,]+(?:\s*\(\s*[\d.]+%\))?|\.)\s+"
    costs_by_fn = {}
    started = False
    for line in out.splitlines():
        if line.rstrip().endswith("file:function"):
            started = True
            continue
        if not started or line.startswith("---"):
            continue
        if not line.strip():
            if costs_by_fn:
                break  # the end of the function list
            continue
        # "12,304,099 (34.66%) 0 ... . file:function [binary]"; "." is zero.
        m = re.match(r"\s*((?:" + cell + "){" + str(len(EVENTS)) + r"})(.*)$", line)
        if not m:
            continue
        values = re.findall(r"([\d,]+)(?:\s*\(\s*[\d.]+%\))?|(\.)", m.group(1))
        costs = [0 if dot else int(num.replace(",", "")) for num, dot in values]
        fn = re.sub(r"\s*\[[^\]]*\]\s*$", "", m.group(2))
        fn = fn.split(":", 1)[1] if re.match(r"^[^ ]*\.[a-z]+:", fn) or fn.startswith("???:") else fn
        fn = re.sub(r"'\d+$", "", fn)
        acc = costs_by_fn.setdefault(fn, dict.fromkeys(EVENTS, 0))
        for e, c in zip(EVENTS, costs):
            acc[e] += c
    rows = sorted(costs_by_fn.items(), key=lambda kv: -kv[1]["Ir"])
    return rows[:top]


def short(fn, width=90):
    fn = re.sub(r"\([^()]*(\([^()]*\)[^()]*)*\)", "()", fn)  # drop parameter lists
    fn = fn.replace("braid::", "").replace("(anonymous namespace)::", "")
    fn = re.sub(r"std::basic_string_view<char, std::char_traits<char> >", "string_view", fn)
    return fn if len(fn) <= width else fn[: width - 3] + "..."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--txns", type=int, required=True)
    ap.add_argument("--ops-per-txn", type=int, required=True)
    ap.add_argument("--arch", default="")
    ap.add_argument("--commit", default="")
    ap.add_argument("--l2-kib", type=int, default=0)
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    txns = a.txns
    ops = a.txns * a.ops_per_txn
    cases = {}
    dumps = glob.glob(os.path.join(a.out, "raw", "*.cg.*"))
    # In dump order, so that a mode's last run (the warm round) is the one kept.
    dumps.sort(key=lambda p: (p.rsplit(".", 1)[0], int(p.rsplit(".", 1)[1])))
    for path in dumps:
        m = re.match(r"(\d+)-(\w+)\.cg\.\d+$", os.path.basename(path))
        if not m:
            continue
        mode, totals = read_dump(path)
        if mode is None:
            continue
        case = {"records": int(m.group(1)), "op": m.group(2), "mode": mode, "txns": txns,
                "ops": ops, "file": os.path.relpath(path, a.out)}
        for e in EVENTS:
            case[e + "_per_op"] = totals.get(e, 0) / ops
            case[e + "_per_txn"] = totals.get(e, 0) / txns
        cases[(case["records"], case["op"], mode)] = case
    cases = list(cases.values())
    for case in cases:  # only the kept (warm) dumps are annotated
        case["top"] = [{"function": fn, **{e + "_per_op": c[e] / ops for e in EVENTS}}
                       for fn, c in top_functions(os.path.join(a.out, case["file"]), a.top)]
    if not cases:
        sys.exit("profile-ops.py: no callgrind dumps under " + a.out + "/raw")
    order = {"get": 0, "update": 1, "insert": 2, "scan": 3}
    cases.sort(key=lambda c: (c["records"], order.get(c["op"], 9), c["mode"]))
    meta = {"commit": a.commit, "arch": a.arch, "l2_kib": a.l2_kib, "txns": txns,
            "ops_per_txn": a.ops_per_txn,
            "caches": "I1 32 KiB 8-way, D1 32 KiB 8-way, LL 32 MiB 16-way, 64 B lines"}
    with open(os.path.join(a.out, "profile.json"), "w") as f:
        json.dump({"meta": meta, "cases": cases}, f, indent=1)
    md = ["# Instructions per operation (callgrind)", "",
          f"Commit {a.commit}, -march={a.arch}, trees sized against an L2 of {a.l2_kib} KiB, "
          f"{txns} transactions of {a.ops_per_txn} "
          f"operations per case, 1 worker; {meta['caches']}. Self cost; a scan is one "
          "operation of 10 records. `scripts/profile-ops.sh` regenerates this.", "",
          "| records | op | mode | Ir/op | Ir/txn | I1 miss/txn | D1 miss/op | LL miss/op "
          "| branch miss/op |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for c in cases:
        md.append(f"| {c['records']:,} | {c['op']} | {c['mode']} | {c['Ir_per_op']:.0f} | "
                  f"{c['Ir_per_txn']:.0f} | {c['I1mr_per_txn']:.1f} | {c['D1mr_per_op']:.2f} | "
                  f"{c['DLmr_per_op']:.2f} | {c['Bcm_per_op'] + c['Bim_per_op']:.2f} |")
    for c in cases:
        md += ["", f"## {c['records']:,} records, {c['op']}, {c['mode']}: top functions", "",
               "| Ir/op | D1 miss/op | LL miss/op | branch miss/op | function |",
               "|---:|---:|---:|---:|---|"]
        for t in c["top"]:
            md.append(f"| {t['Ir_per_op']:.1f} | {t['D1mr_per_op']:.3f} | {t['DLmr_per_op']:.3f} "
                      f"| {t['Bcm_per_op'] + t['Bim_per_op']:.3f} | `{short(t['function'])}` |")
    with open(os.path.join(a.out, "profile.md"), "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
