#!/usr/bin/env python3
"""A/B of braid-bench variants in alternated processes (the only comparison worth quoting on a
machine whose memory speed drifts): every round runs each variant once as its own process, the
order reversed every other round, and the report gives per variant the min / median / max of
txn_per_s and, against the first variant, the ratio of medians and the median of the per-round
ratios (paired: both measured in the same round, minutes apart at most).

  scripts/ab.py --rounds 5 --common 'tpcc --warehouses 16 --seconds 4 --prefault-mib 4096' \
      --variant 'pipeline=build/release/bin/braid-bench --scheduler pipeline' \
      --variant 'team=/tmp/base/build/bin/braid-bench --scheduler team'

A variant is NAME=BINARY [ARGS...]; --common's arguments follow the sub-command-less binary
(so --common begins with the sub-command) and the variant's own arguments come last. Each
process must produce exactly one result (one mode, one scheduler); its JSON line is kept in
--out (default: none kept). Exit status 1 if a run fails.

Each process runs a fresh copy of its variant's binary (unless --same-file): on this project's
VM a binary's speed follows in part where its file's pages sit in the page cache. The same
file ran TPC-C interleaved at 0.63x for every run of a quarter hour while a copy of it ran at
full speed, and `echo 1 > /proc/sys/vm/drop_caches` ended the spell (docs/results.md, "Node
search"). Run from one file, a variant's every round shares one
placement, and a spell biases the whole series; a copy per process makes the placement one
more per-process draw. What matters is where the file's executable text sits in physical
memory: dropping a fallen copy's text from the page cache cured it, its read-only data did not
("Issue 23, eleventh pass"). It is not the whole story: in some spells fresh copies of one
build fell in most rounds while another build's did not, so look at the per-round figures,
not only the medians.
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile


def run_one(binary, common, extra, json_path, fresh_copy):
    exe = binary
    try:
        if fresh_copy:
            exe = json_path + ".bin"
            shutil.copy2(binary, exe)
        cmd = [exe] + common + extra + ["--json", json_path]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        raise SystemExit(f"ab: cannot run {binary}: {e.strerror}")
    finally:
        if exe != binary and os.path.exists(exe):
            os.remove(exe)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        raise SystemExit(f"ab: failed ({proc.returncode}): {shlex.join(cmd)}")
    with open(json_path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if len(lines) != 1:
        raise SystemExit(f"ab: {shlex.join(cmd)} gave {len(lines)} results, want 1")
    return lines[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--common", default="", help="arguments every variant gets (sub-command first)")
    ap.add_argument("--variant", action="append", required=True, help="NAME=BINARY [ARGS...]")
    ap.add_argument("--field", default="txn_per_s")
    ap.add_argument("--out", help="append every run's JSON here, with its variant and round")
    ap.add_argument("--same-file", action="store_true",
                    help="run each variant's binary itself, not a fresh copy per process")
    a = ap.parse_args()
    if a.rounds < 1:
        raise SystemExit("ab: --rounds must be at least 1")
    variants = []
    for v in a.variant:
        name, sep, rest = v.partition("=")
        words = shlex.split(rest)
        if not sep or not name or not words:
            raise SystemExit(f"ab: --variant wants NAME=BINARY [ARGS...], got {v!r}")
        variants.append((name, words[0], words[1:]))
    common = shlex.split(a.common)
    got = {name: [] for name, _, _ in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = variants if r % 2 == 0 else list(reversed(variants))
            row = {}
            for name, binary, extra in order:
                path = os.path.join(tmp, f"{r}-{name}.jsonl")
                res = run_one(binary, common, extra, path, not a.same_file)
                got[name].append(res[a.field])
                row[name] = res[a.field]
                if a.out:
                    res["ab_variant"], res["ab_round"] = name, r
                    with open(a.out, "a") as f:
                        f.write(json.dumps(res) + "\n")
            print(f"round {r}: " + "  ".join(f"{n} {row[n]:,.0f}" for n, _, _ in variants),
                  flush=True)
    base = variants[0][0]
    print(f"\n{'variant':<24}{'min':>12}{'median':>12}{'max':>12}{'ratio':>8}{'paired':>8}")
    for name, _, _ in variants:
        xs = got[name]
        med = statistics.median(xs)
        ratio = med / statistics.median(got[base])
        paired = statistics.median(x / b for x, b in zip(xs, got[base]))
        print(f"{name:<24}{min(xs):>12,.0f}{med:>12,.0f}{max(xs):>12,.0f}{ratio:>8.3f}{paired:>8.3f}")


if __name__ == "__main__":
    main()
