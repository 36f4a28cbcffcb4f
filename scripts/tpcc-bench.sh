#!/usr/bin/env bash
# Issue 6's TPC-C measurements, reproducible: TPC-C, TPC-CR and TPC-CH at the default scale
# (16 warehouses), 1 and 2 workers, modes sequential / prefetch / interleaved / hybrid / auto
# round-robin inside one process per (mix, workers) — a fresh load each, so one mix's inserts
# do not slow the next — REPS rounds of SECONDS_PER each; then the plot.
# Env: OUT (default results/tpcc), WAREHOUSES (16), SECONDS_PER (3), REPS (3),
#      MODES (sequential,prefetch,interleaved,hybrid,auto), BATCH (8), SCHEDULER (pipeline, tpcc's default),
#      PREFAULT_MIB (6144: version memory made resident at open, enough for the largest run here
#      (TPC-C, 2 workers, ~6 GiB peak), so no mode pays first-touch page faults mid-run; 0: off),
#      PREFAULT_INDEX_MIB (1024: the same for index nodes; 0: off).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=build/release/bin/braid-bench
OUT=${OUT:-results/tpcc}
WAREHOUSES=${WAREHOUSES:-16}
SECONDS_PER=${SECONDS_PER:-3}
REPS=${REPS:-3}
MODES=${MODES:-sequential,prefetch,interleaved,hybrid,auto}
BATCH=${BATCH:-8}
SCHEDULER=${SCHEDULER:-pipeline}
PREFAULT_MIB=${PREFAULT_MIB:-6144}
PREFAULT_INDEX_MIB=${PREFAULT_INDEX_MIB:-1024}
mkdir -p "$OUT"
for threads in 1 2; do
  for mix in tpcc tpcc-r tpcc-h; do
    echo "== $mix, $threads worker(s)"
    "$BENCH" tpcc --warehouses "$WAREHOUSES" --threads "$threads" --mix "$mix" --mode "$MODES" \
      --seconds "$SECONDS_PER" --repeat "$REPS" --batch "$BATCH" --scheduler "$SCHEDULER" \
      --prefault-mib "$PREFAULT_MIB" --prefault-index-mib "$PREFAULT_INDEX_MIB" \
      --json "$OUT/tpcc.jsonl" | sed -n '/summary/,$p'
  done
done
/usr/bin/python3 scripts/plot.py "$OUT"
