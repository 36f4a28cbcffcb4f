#!/usr/bin/env bash
# Issue 51's churn figures: a constant live set, each transaction removing the oldest (fifo) or
# random live keys and inserting as many new ones, in memory and in a database directory.
# Writes $OUT/churn.jsonl (one line per round and configuration); plot with
# scripts/churn-plot.py $OUT.
set -euo pipefail
BIN=${BIN:-build/release/bin/braid-bench}
OUT=${OUT:-results/churn}
DIR=${DIR:-/tmp/braid-churn}  # on the file system to measure (not tmpfs)
LIVE=${LIVE:-1000000}
ROUNDS=${ROUNDS:-20}
EXTRA=${EXTRA:-}  # e.g. "--checkpoint-mib 64" for the directory runs
mkdir -p "$OUT"
rm -f "$OUT/churn.jsonl"
for where in memory directory; do
  for pattern in fifo random; do
    flags=()
    if [ "$where" = directory ]; then
      rm -rf "$DIR"
      flags=(--dir "$DIR")
      # shellcheck disable=SC2206
      flags+=($EXTRA)
    fi
    "$BIN" churn --live "$LIVE" --rounds "$ROUNDS" --pattern "$pattern" \
      --json "$OUT/churn.jsonl" "${flags[@]}"
  done
done
rm -rf "$DIR"
