#!/usr/bin/env bash
# The issue-3 matrix: every mode x {10^4, 10^6, 2*10^7} records x {1, 2} workers (read-only,
# 10 reads per transaction), plus update-only (10 blind writes) and 2 RMW + 8 reads at 2*10^7,
# REPS times each, into $OUT/matrix.jsonl. Summarize with scripts/summarize.py.
set -euo pipefail
BIN=${BIN:-build/release/bin/braid-bench}
OUT=${OUT:-results/matrix}
REPS=${REPS:-3}
SECONDS_PER=${SECONDS_PER:-2}
SIZES=${SIZES:-"10000 1000000 20000000"}
THREADS=${THREADS:-"1 2"}
mkdir -p "$OUT"
for rep in $(seq "$REPS"); do
  for n in $SIZES; do
    for t in $THREADS; do
      echo "rep $rep: read-only $n records, $t workers" >&2
      "$BIN" ycsb --records "$n" --threads "$t" --seconds "$SECONDS_PER" --mode all \
        --seed "$rep" --json "$OUT/matrix.jsonl" >/dev/null
    done
  done
  for t in $THREADS; do
    for mix in "--update 100" "--rmw 20 --read 80"; do
      echo "rep $rep: $mix at 20000000 records, $t workers" >&2
      # shellcheck disable=SC2086
      "$BIN" ycsb --records 20000000 --threads "$t" --seconds "$SECONDS_PER" --mode all $mix \
        --seed "$rep" --json "$OUT/matrix.jsonl" >/dev/null
    done
  done
done
echo "ycsb-matrix: results in $OUT/matrix.jsonl" >&2
