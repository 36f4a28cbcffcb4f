#!/usr/bin/env python3
"""Per-round ratio of two modes in `braid-bench ycsb|tpcc --mode A,B --repeat R` JSON files.

A round runs the listed modes back to back in one process, so the ratio within a round is what
this machine's drifting memory speed disturbs least. Rounds are matched by process (a file may
collect several processes), configuration and repetition. Prints, per configuration, the
median, minimum and maximum of NUM / DEN over the rounds and the median of each mode.
Usage: scripts/round-ratios.py NUM DEN FILE.jsonl [FILE.jsonl ...]
  e.g. scripts/round-ratios.py interleaved nested results/ratio.jsonl
"""
import collections
import json
import statistics
import sys


Config = collections.namedtuple("Config", "bench work size threads scheduler batch")


def config(r):
    work = r.get("mix") or "/".join(
        f"{k}{r[k]}" for k in ("read", "update", "rmw", "scan", "insert") if r.get(k))
    return Config(r["bench"], work, r["records"] if "records" in r else r.get("warehouses"),
                  r["threads"], r["scheduler"], r["batch"])


def read_rounds(path):
    """{(config, run): {mode: txn/s}} of one JSON file; a run is one round of one process."""
    rounds = collections.defaultdict(dict)
    process = 0
    last_rep = None
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("bench") not in ("ycsb", "tpcc"):
                continue
            if last_rep is not None and r["rep"] < last_rep:
                process += 1  # a new process appended to the same file
            last_rep = r["rep"]
            mode = "hybrid" if r.get("hybrid") else r["mode"]
            # A process loads once: its seed and load time tell processes with one round apart.
            run = (process, r.get("seed"), r.get("load_s"), r["rep"])
            rounds[(config(r), run)][mode] = r["txn_per_s"]
    return rounds


def main(num, den, paths):
    for path in paths:
        print("==", path)
        rounds = read_rounds(path)
        cells = collections.defaultdict(lambda: ([], [], []))
        for (cfg, _), modes in rounds.items():
            if num in modes and den in modes and modes[den] > 0:
                ratios, nums, dens = cells[cfg]
                ratios.append(modes[num] / modes[den])
                nums.append(modes[num])
                dens.append(modes[den])
        if not cells:
            print(f"  no round ran both {num} and {den}")
        for cfg, (ratios, nums, dens) in sorted(cells.items(), key=str):
            bench, work, size, threads, scheduler, batch = cfg
            print(f"  {bench} {work} size {size} threads {threads} {scheduler} batch {batch}: "
                  f"{num}/{den} median {statistics.median(ratios):.3f} "
                  f"(min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} rounds); "
                  f"{num} {statistics.median(nums):,.0f}, {den} {statistics.median(dens):,.0f} "
                  f"txn/s")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
