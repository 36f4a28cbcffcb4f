#!/usr/bin/env bash
# Issue 20 item 4 (MosaicDB §5, Fig. 10): no background threads (each worker drives its own
# log) against an oversubscribed log flusher (--log-flusher thread: a dedicated thread submits
# and reaps every log), on durable TPC-C and YCSB update-only, at 1 and 2 workers on this
# 2-core machine, in alternated process pairs (the flusher is an open option), without
# checkpoints (a checkpoint after TPC-C's load would run inside the measured seconds). Prints
# medians, minima and ratios; JSON lines in $OUT.
#   PAIRS=5 scripts/flusher-ab.sh
set -euo pipefail
BIN=${BIN:-build/release/bin/braid-bench}
PAIRS=${PAIRS:-5}
SECONDS_PER=${SECONDS_PER:-5}
WAREHOUSES=${WAREHOUSES:-16}
RECORDS=${RECORDS:-1000000}
THREADS=${THREADS:-"1 2"}
DIR=${DIR:-/tmp/braid-flusher-ab}
OUT=${OUT:-results/flusher-ab.jsonl}
mkdir -p "$(dirname "$OUT")"
rm -f "$OUT"
for ((i = 0; i < PAIRS; i++)); do
  for t in $THREADS; do
    for f in none thread; do
      rm -rf "$DIR"
      "$BIN" tpcc --warehouses "$WAREHOUSES" --threads "$t" --seconds "$SECONDS_PER" \
        --mode interleaved --dir "$DIR" --commit durable --checkpoint-mib 0 --log-flusher "$f" \
        --json "$OUT" > /dev/null
      rm -rf "$DIR"
      "$BIN" ycsb --records "$RECORDS" --threads "$t" --seconds "$SECONDS_PER" --update 100 \
        --mode interleaved --dir "$DIR" --commit durable --checkpoint-mib 0 --log-flusher "$f" \
        --json "$OUT" > /dev/null
    done
  done
done
rm -rf "$DIR"
/usr/bin/python3 - "$OUT" <<'PY'
import json, statistics, sys
from collections import defaultdict
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
g = defaultdict(list)
for r in rows:
    g[(r["bench"], r["threads"], r["log_flusher"])].append(r["txn_per_s"])
print("| bench | workers | no background thread (median / min) | flusher thread (median / min) | ratio |")
print("|---|---|---|---|---|")
for (bench, t) in sorted({(b, t) for b, t, _ in g}):
    a, b = g[(bench, t, "none")], g[(bench, t, "thread")]
    if not a or not b:
        continue
    print(f"| {bench} | {t} | {statistics.median(a):,.0f} / {min(a):,.0f} |"
          f" {statistics.median(b):,.0f} / {min(b):,.0f} |"
          f" {statistics.median(a) / statistics.median(b):.2f}x ({len(a)} pairs) |")
PY
