#!/usr/bin/env bash
# Issue 19's "nothing cold costs nothing" check: YCSB read-only with no budget against a budget
# of 100 % of the data's versions, in alternated process pairs (one process per run: the budget
# is an open option), sequential and interleaved in each. Prints the medians and their ratios.
#   RECORDS=2000000 PAIRS=9 LOAD=txn scripts/budget-ab.sh
# LOAD: how the budgeted process loads (txn | bulk); the unbudgeted one loads through
# transactions. BUDGET_MIB: 100 % of the data (default: 40 B per 8-byte record, rounded up).
set -euo pipefail
BIN=${BIN:-build/release/bin/braid-bench}
RECORDS=${RECORDS:-2000000}
PAIRS=${PAIRS:-9}
LOAD=${LOAD:-txn}
SECONDS_PER=${SECONDS_PER:-3}
DIR=${DIR:-/tmp/braid-budget-ab}
BUDGET_MIB=${BUDGET_MIB:-$(( (RECORDS * 40 + (1 << 20) - 1) >> 20 ))}
OUT=${OUT:-results/budget-ab.jsonl}
# The budget covers the versions, the index kept beside it (--page-index 0), as when the check
# was first run; PAGE_INDEX=1 counts the index in the budget too.
PAGE_INDEX=${PAGE_INDEX:-0}
mkdir -p "$(dirname "$OUT")"
rm -f "$OUT"
for ((i = 0; i < PAIRS; i++)); do
  for v in none budget; do
    rm -rf "$DIR"
    extra=()
    [[ $v == budget ]] && extra=(--memory-budget-mib "$BUDGET_MIB" --load "$LOAD" --page-index "$PAGE_INDEX")
    "$BIN" ycsb --records "$RECORDS" --seconds "$SECONDS_PER" --mode sequential,interleaved \
      --batch 32 --dir "$DIR" --checkpoint-mib 0 --commit async "${extra[@]}" --json "$OUT" \
      > /dev/null
  done
done
rm -rf "$DIR"
/usr/bin/python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
med = {}
for mode in ("sequential", "interleaved"):
    for b in (False, True):
        xs = [r["txn_per_s"] for r in rows if r["mode"] == mode and (r["memory_budget_mib"] != 0) == b]
        med[(mode, b)] = statistics.median(xs)
    print(f"{mode}: none {med[(mode, False)]:,.0f}  budget {med[(mode, True)]:,.0f}  "
          f"ratio {med[(mode, True)] / med[(mode, False)]:.3f}  ({len(xs)} pairs)")
PY
