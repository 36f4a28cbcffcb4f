#!/usr/bin/env bash
# Issue 5's durability measurements, reproducible:
#   1. YCSB update-only (10 blind writes per transaction), 1 and 2 workers, --commit durable vs
#      async, alternated run by run (the machine drifts), REPS rounds;
#   2. the three log sync methods (durable, 1 worker);
#   3. the device's own fdatasync latency (4 KiB write + fdatasync, p50/p99);
#   4. recovery of a log of >= 10 M updates (no checkpoint during the run), by `braid check`.
# Env: OUT (default results/durability), RECORDS (1000000), SECONDS_PER (3), REPS (3),
#      RECOVERY_SECONDS (15), DBROOT (default /var/tmp/braid-durability: a disk, not tmpfs).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=build/release/bin/braid-bench
TOOL=build/release/bin/braid
OUT=${OUT:-results/durability}
RECORDS=${RECORDS:-1000000}
SECONDS_PER=${SECONDS_PER:-3}
REPS=${REPS:-3}
RECOVERY_SECONDS=${RECOVERY_SECONDS:-15}
DBROOT=${DBROOT:-/var/tmp/braid-durability}
mkdir -p "$OUT"
rm -rf "$DBROOT"

for rep in $(seq 1 "$REPS"); do
  for threads in 1 2; do
    for commit in durable async; do
      db="$DBROOT/ycsb-$threads-$commit-$rep"
      "$BENCH" ycsb --records "$RECORDS" --seconds "$SECONDS_PER" --update 100 --threads "$threads" \
        --dir "$db" --commit "$commit" --json "$OUT/durable-vs-async.jsonl" | grep -E "interleaved|syncs/s"
      rm -rf "$db"
    done
  done
done

for rep in $(seq 1 "$REPS"); do
  for sync in fdatasync dsync direct; do
    db="$DBROOT/sync-$sync-$rep"
    "$BENCH" ycsb --records "$RECORDS" --seconds "$SECONDS_PER" --update 100 --dir "$db" \
      --log-sync "$sync" --json "$OUT/log-sync.jsonl" | grep -E "interleaved|syncs/s"
    rm -rf "$db"
  done
done

mkdir -p "$DBROOT"
python3 - "$DBROOT/fsync-probe" <<'PY' | tee "$OUT/fdatasync-latency.txt"
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
buf = os.urandom(4096)
lat = []
for i in range(300):
    os.pwrite(fd, buf, (i % 64) * 4096)
    t = time.perf_counter(); os.fdatasync(fd); lat.append((time.perf_counter() - t) * 1e6)
lat.sort()
print("fdatasync after a 4 KiB write: p50 %.0f us, p99 %.0f us, n=%d" % (lat[len(lat)//2], lat[int(len(lat)*0.99)], len(lat)))
PY
rm -f "$DBROOT/fsync-probe"

db="$DBROOT/recovery"
"$BENCH" ycsb --records "$RECORDS" --seconds "$RECOVERY_SECONDS" --update 100 --dir "$db" \
  --checkpoint-mib 0 --json "$OUT/recovery-run.jsonl" | grep -E "interleaved|syncs/s"
"$TOOL" stats "$db" | tail -3 | tee "$OUT/recovery.txt"
"$TOOL" check "$db" | tee -a "$OUT/recovery.txt"
"$TOOL" check "$db" | tee -a "$OUT/recovery.txt"   # again: recovery of a recovered directory
rm -rf "$DBROOT"
