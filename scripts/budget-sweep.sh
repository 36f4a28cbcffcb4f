#!/usr/bin/env bash
# Issue 19's budget sweep: YCSB read-only (10 reads/txn, uniform) over RECORDS records in a
# database directory, with the memory budget at 100 % of the records' version memory down to
# ~5 %, each mode in alternated rounds (--repeat), plus fio's 4 KiB random-read IOPS at queue
# depth 32 on the same file system. Writes $OUT/sweep.jsonl and $OUT/fio.json; plot with
#   scripts/budget-plot.py $OUT
# The version memory of the data is measured first, by a run without a budget.
set -euo pipefail
BIN=${BIN:-build/release/bin/braid-bench}
OUT=${OUT:-results/budget}
DIR=${DIR:-/tmp/braid-budget-sweep}  # on the file system to measure (not tmpfs)
RECORDS=${RECORDS:-2000000}
REPEAT=${REPEAT:-3}
SECONDS_PER=${SECONDS_PER:-3}
MODES=${MODES:-sequential,interleaved}
PCTS=${PCTS:-"100 75 50 25 10 5"}
BATCH=${BATCH:-32}
# The budget here is a share of the records' version memory, with the index kept whole beside
# it, as when the sweep's figures were taken (--page-index 0); PAGE_INDEX=1 counts the index in
# the budget too, so the same figures then hold far fewer records in memory.
PAGE_INDEX=${PAGE_INDEX:-0}
mkdir -p "$OUT"
rm -rf "$DIR"
run() {  # budget_mib
  rm -rf "$DIR/db"
  local paging=()
  [[ $1 != 0 ]] && paging=(--page-index "$PAGE_INDEX")
  "$BIN" ycsb --records "$RECORDS" --seconds "$SECONDS_PER" --mode "$MODES" --repeat "$REPEAT" \
    --batch "$BATCH" --dir "$DIR/db" --memory-budget-mib "$1" --checkpoint-mib 0 \
    "${paging[@]}" --json "$OUT/sweep.jsonl"
}
# The data's version memory: a run with no budget reports live_version_bytes.
rm -f "$OUT/sweep.jsonl"
run 0
full=$(python3 -c "import json,sys; print(max(json.loads(l)['live_version_bytes'] for l in open('$OUT/sweep.jsonl')))")
full_mib=$(( (full + (1 << 20) - 1) >> 20 ))
echo "budget-sweep: the data's versions take $full_mib MiB" >&2
for pct in $PCTS; do
  mib=$(( full_mib * pct / 100 ))
  (( mib < 1 )) && mib=1
  echo "budget-sweep: $pct % = $mib MiB" >&2
  run "$mib"
done
rm -rf "$DIR/db"
mkdir -p "$DIR"
"$(dirname "$0")/fio-randread.sh" "$DIR" "$OUT/fio.json"
echo "budget-sweep: results in $OUT/sweep.jsonl" >&2
