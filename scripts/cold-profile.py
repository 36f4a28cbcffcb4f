#!/usr/bin/env python3
"""Where a worker's time goes on the storage path: a per-stage profile of braid-bench coldmix.

Runs one coldmix configuration under `perf record -e cpu-clock` (this VM has no hardware
counters), keeps the samples of the worker thread after the load, sorts every symbol into a
stage of the cold read (submission and doorbell, completion reaping, the load table,
verification, version install, waking, scheduler bookkeeping) or of the transaction itself, and
prints each stage's share of the worker's samples and its worker time per storage-bound
transaction (share x worker CPU seconds / storage-bound commits in the window).

    scripts/cold-profile.py [--bin build/release/bin/braid-bench] [--dir /tmp/braid-cold-profile]
        [--mode interleaved] [--scheduler dual-queue] [--cold-pct 10] [--seconds 8]
        [--hot-records 10000000] [--cold-records 1000000] [--top 0]

The sort is by symbol name (regular expressions below); --top N also lists the N heaviest
symbols with their stage, to check it. Needs perf and a release build with symbols.

--engine also turns on the engine's own per-stage profile in the same run
(`braid-bench coldmix --profile-stages`, ExecStats::storage_stage_ns: the worker's wall time
charged to each stage by clock reads at its boundaries) and prints it beside perf's; its clock
reads then show in perf's "clock reads" stage. --no-perf prints the engine's profile alone
(perf not needed, nothing perturbs the run but the profile's own clock reads).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# First match wins. Kernel symbols are from a 6.x kernel with virtio-blk under KVM.
STAGES = [
    ("submission + doorbell", [
        r"io_uring_submit", r"__io_uring_enter", r"io_submit_sqes", r"io_issue_sqe", r"io_read",
        r"io_prep_r", r"blk_", r"virtqueue", r"virtio", r"iowrite", r"vp_notify", r"__iomap_dio",
        r"iomap_", r"ext4_file_read_iter", r"ext4_dio", r"gup_", r"pin_user_pages", r"bio_",
        r"submit_bio", r"__blk", r"dio_", r"ColdReader::issue", r"ColdReader::submit",
        r"Worker::submit\b", r"IoRing::Port::submit", r"UringQueue::submit",
        r"ColdStore::prepare", r"FileTable::acquire",
    ]),
    ("completion reaping", [
        r"UringQueue::poll", r"IoRing::collect", r"IoRing::reap", r"IoRing::Port::poll",
        r"ColdReader::reap", r"ColdReader::service", r"io_uring_peek", r"io_uring_get_events",
        r"__io_uring_get_cqe", r"io_uring_wait", r"tctx_task_work", r"io_req_", r"io_cq",
        r"__io_commit_cqring", r"io_complete_rw", r"io_rw_", r"task_work", r"__io_submit_flush",
    ]),
    ("load table", [
        r"ColdStore::join", r"ColdStore::release", r"ColdStore::outcome", r"FileTable::release",
        r"ColdStore::load_sync", r"ColdStore::fetch_sync", r"ColdFetch::step", r"cold_fetch",
    ]),
    ("verification + decode", [
        r"crc32c", r"extend_sse42", r"ColdStore::verify", r"decode_record", r"RecordView",
    ]),
    ("version install / drop", [
        r"ColdStore::complete", r"ColdStore::drop", r"ColdStore::fail", r"VersionHeap::",
        r"Protocol::install", r"retire", r"free_before",
    ]),
    ("waking", [r"wake_io_slots", r"unpark_io", r"Worker::park", r"IoPark"]),
    ("scheduler bookkeeping", [
        r"order_round", r"Worker::round", r"service_cold", r"service_log", r"DualQueue",
        r"Pipeline", r"StorageBatch", r"Batch::", r"Worker::admit", r"set_state", r"sched::",
        r"Worker::main", r"checkpoint_step", r"LogWriter::poll", r"StallWatch", r"turn",
    ]),
    ("clock reads", [r"clock_gettime", r"steady_clock", r"vdso"]),
    ("transaction (memory path)", [
        r"get_op", r"put_op", r"write_op", r"Lookup::", r"Descent::", r"lower_bound",
        r"node_search", r"visible_version", r"Protocol::", r"TxnTable::", r"coro::run",
        r"finish_txn", r"begin", r"commit", r"op_ready", r"Coldmix", r"bench::",
        r"memmove", r"memcpy", r"memset", r"Txn", r"Transaction",
    ]),
    ("kernel: interrupts, scheduling", [
        r"irqentry", r"_raw_spin", r"finish_task_switch", r"schedule", r"do_syscall",
        r"entry_SYSCALL", r"syscall_exit", r"exit_to_user", r"sched_yield", r"__x64_sys",
    ]),
]
COMPILED = [(name, [re.compile(p) for p in pats]) for name, pats in STAGES]


def stage_of(sym):
    for name, pats in COMPILED:
        if any(p.search(sym) for p in pats):
            return name
    return "other"


ENGINE_STAGES = ["other", "submit", "reap", "complete", "load_table", "drop", "wake",
                 "sync_wait"]


def print_engine(a, run):
    ns = {st: run.get(f"stage_{st}_ns", 0) for st in ENGINE_STAGES}
    total = sum(ns.values())
    reads = run.get("cold_reads_reaped", 0)
    if total == 0:
        sys.exit("cold-profile: the run reported no stage profile (a build before "
                 "--profile-stages?)")
    print(f"engine profile, coldmix {a.mode}/{a.scheduler} cold-pct {a.cold_pct}: "
          f"{run['txn_per_s']:.0f} txn/s, {reads} cold reads reaped by the worker in "
          f"{run.get('cold_reaps', 0)} passes, {run.get('cold_reads_issued', 0)} issued with "
          f"{run.get('cold_read_submissions', 0)} kernel entries")
    print(f"{'stage':34s} {'share':>7s} {'us per cold read':>18s}")
    path = 0
    for st in ENGINE_STAGES:
        per = ns[st] / reads / 1000 if reads else float("nan")
        print(f"{st.replace('_', ' '):34s} {100 * ns[st] / total:6.1f}% {per:18.2f}")
        if st != "other":
            path += ns[st]
    per = path / reads / 1000 if reads else float("nan")
    print(f"{'storage path (all but other)':34s} {100 * path / total:6.1f}% {per:18.2f}")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/release/bin/braid-bench")
    ap.add_argument("--dir", default="/tmp/braid-cold-profile")
    ap.add_argument("--mode", default="interleaved")
    ap.add_argument("--scheduler", default="dual-queue")
    ap.add_argument("--cold-pct", default="10")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--hot-records", default="10000000")
    ap.add_argument("--cold-records", default="1000000")
    ap.add_argument("--freq", type=int, default=4000)
    ap.add_argument("--top", type=int, default=0)
    ap.add_argument("--engine", action="store_true")
    ap.add_argument("--no-perf", action="store_true")
    a = ap.parse_args()
    if a.no_perf:
        a.engine = True
    if not a.no_perf and shutil.which("perf") is None:
        sys.exit("cold-profile: perf is not installed (apt-get install linux-perf)")
    if not os.access(a.bin, os.X_OK):
        sys.exit(f"cold-profile: {a.bin} is not an executable (make release)")
    work = tempfile.mkdtemp(prefix="braid-cold-profile-")
    data = os.path.join(work, "perf.data")
    js = os.path.join(work, "run.json")
    shutil.rmtree(a.dir, ignore_errors=True)
    cmd = [a.bin, "coldmix", "--dir", a.dir, "--hot-records", a.hot_records, "--cold-records",
           a.cold_records, "--cold-pct", a.cold_pct, "--cache-cold", "off", "--mode", a.mode,
           "--scheduler", a.scheduler, "--seconds", str(a.seconds), "--json", js]
    if a.engine:
        cmd.append("--profile-stages")
    if a.no_perf:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    else:
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(a.freq), "-o", data,
                        "--"] + cmd, check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(a.dir, ignore_errors=True)
    run = json.loads(open(js).read().splitlines()[-1])
    if a.engine:
        print_engine(a, run)
    if a.no_perf:
        shutil.rmtree(work, ignore_errors=True)
        return
    # The worker is the thread with the most samples inside the run's window: the run is the
    # last `run_s` seconds before the last sample (the load comes before it).
    out = subprocess.run(["perf", "script", "-i", data, "-F", "tid,time,ip,sym"],
                         capture_output=True, text=True, check=True).stdout
    samples = []
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)\s+([\d.]+):\s+[0-9a-f]+\s*(.*)$", line)
        if m:
            samples.append((int(m.group(1)), float(m.group(2)), m.group(3).strip()))
    if not samples:
        sys.exit("cold-profile: perf recorded no samples")
    end = max(t for _, t, _ in samples)
    start = end - run["run_s"]
    window = [(tid, sym) for tid, t, sym in samples if t >= start]
    counts = {}
    for tid, _ in window:
        counts[tid] = counts.get(tid, 0) + 1
    worker = max(counts, key=counts.get)
    syms = {}
    for tid, sym in window:
        if tid == worker:
            syms[sym or "[unknown]"] = syms.get(sym or "[unknown]", 0) + 1
    total = sum(syms.values())
    cpu_s = total / a.freq
    cold_commits = run["cold_commits"]
    stages = {}
    for sym, n in syms.items():
        st = stage_of(sym)
        stages[st] = stages.get(st, 0) + n
    print(f"coldmix {a.mode}/{a.scheduler} cold-pct {a.cold_pct}: {run['txn_per_s']:.0f} txn/s, "
          f"{run['iops']:.0f} cold reads/s at depth {run['io_depth']:.1f}; worker on CPU "
          f"{cpu_s:.2f} s of {run['run_s']:.1f} s; {cold_commits} storage-bound commits")
    print(f"{'stage':34s} {'share':>7s} {'us per storage-bound txn':>26s}")
    for name, _ in STAGES + [("other", None)]:
        n = stages.get(name, 0)
        if n == 0:
            continue
        per = (n / a.freq) / cold_commits * 1e6 if cold_commits else float("nan")
        print(f"{name:34s} {100 * n / total:6.1f}% {per:26.2f}")
    cold = sum(stages.get(s, 0) for s in ["submission + doorbell", "completion reaping",
                                           "load table", "verification + decode",
                                           "version install / drop", "waking"])
    if cold_commits:
        print(f"{'storage path (first six stages)':34s} {100 * cold / total:6.1f}% "
              f"{(cold / a.freq) / cold_commits * 1e6:26.2f}  "
              f"({(cold / a.freq) / (2 * cold_commits) * 1e6:.2f} us per cold read)")
    if a.top:
        print()
        for sym, n in sorted(syms.items(), key=lambda kv: -kv[1])[:a.top]:
            print(f"{100 * n / total:6.2f}%  {stage_of(sym):30s} {sym}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
