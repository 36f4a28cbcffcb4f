#!/usr/bin/env bash
# The index-out-of-memory issue's measuring stick: BraidDB under a memory budget beside RocksDB
# under a cache of the same size, YCSB C and B (1 operation per transaction, Zipf 0.99), 8- and
# 100-byte values, the bound swept from 100 % down to 5 % of BraidDB's in-memory peak RSS.
#
#   scripts/index-budget-sweep.sh && /usr/bin/python3 scripts/index-budget-plot.py results/index-budget
#
# Per value size: one BraidDB run without a budget (in a directory, the same data) gives the
# reference RSS R; then for each percentage P and workload, alternating the engines, BraidDB runs
# with --memory-budget-mib P*R and RocksDB with --cache-mib P*R (block cache, index and filter
# blocks and memtables in one cache, direct reads: bench/peer_rocksdb.cc); BraidDB pages its index
# under a budget (PAGE_INDEX). Each run is its own
# process (a fresh load), so its peak RSS is its own. Commits are asynchronous for both engines
# (neither waits for the log's sync). Each run makes REPEAT rounds of SECONDS_PER on its data and
# the plot takes the last: the first warms the caches (RocksDB's block cache starts empty after
# its load; BraidDB's budget holds the keys loaded first, and the hot keys are scattered over
# all of them). Writes $OUT/sweep.jsonl.
#
# RECORDS defaults to the 20 M; a sweep at that size takes hours on 2 cores (every run
# loads its data), so RECORDS=2000000 gives a first picture in about half an hour.
set -euo pipefail
BIN=${BIN:-build/release/bin/braid-bench}
OUT=${OUT:-results/index-budget}
DIR=${DIR:-/tmp/braid-index-budget}  # on the file system to measure (not tmpfs: direct reads)
RECORDS=${RECORDS:-20000000}
VALUES=${VALUES:-"8 100"}
WORKLOADS=${WORKLOADS:-"c b"}
PCTS=${PCTS:-"100 50 25 10 5"}
ENGINES=${ENGINES:-"braid rocksdb"}
# BraidDB's scheduler for storage-bound work: the default batch scheduler holds a batch until
# its slowest transaction ends, so one cold read stalls eight (20 M records at a 50 % budget:
# 245 K txn/s at a mean depth of 0.9, against 1.15 M with these at 4.5).
BRAID_ARGS=${BRAID_ARGS:-"--scheduler pipeline --batch 32"}
# RocksDB's own flags, e.g. ROCKS_ARGS="--threads 8" for more reads in flight than one
# application thread's one (default: one thread, as BraidDB runs one worker).
ROCKS_ARGS=${ROCKS_ARGS:-}
# How far BraidDB's budgeted runs page the index (--page-index 0|1|2; empty: the engine's
# default, leaves and inner nodes; the reference run, with no budget, cannot).
PAGE_INDEX=${PAGE_INDEX:-}
SECONDS_PER=${SECONDS_PER:-10}
REPEAT=${REPEAT:-2}
mkdir -p "$OUT"
rm -f "$OUT/sweep.jsonl"
run() {  # engine value workload bound_mib (0: none)
  rm -rf "$DIR"
  local bound=()
  if [[ $4 != 0 ]]; then
    if [[ $1 == braid ]]; then bound=(--memory-budget-mib "$4"); else bound=(--cache-mib "$4"); fi
  fi
  local extra=()
  # shellcheck disable=SC2206  # BRAID_ARGS is a list of flags
  [[ $1 == braid ]] && extra=(--checkpoint-mib 0 $BRAID_ARGS)
  [[ $1 == braid && $4 != 0 && -n $PAGE_INDEX ]] && extra+=(--page-index "$PAGE_INDEX")
  # shellcheck disable=SC2206
  [[ $1 == rocksdb ]] && extra=($ROCKS_ARGS)
  "$BIN" ycsb --engine "$1" --records "$RECORDS" --value-bytes "$2" --workload "$3" \
    --seconds "$SECONDS_PER" --repeat "$REPEAT" --dir "$DIR" --commit async "${bound[@]}" "${extra[@]}" \
    --json "$OUT/sweep.jsonl" > "$OUT/last.out" 2>&1 || {
    echo "index-budget-sweep: $1 value $2 workload $3 bound $4 failed:" >&2
    tail -5 "$OUT/last.out" >&2
    return 1
  }
  grep -E "^  (interleaved|rocksdb) " "$OUT/last.out" | tail -1 >&2
}
for v in $VALUES; do
  echo "index-budget-sweep: $RECORDS records of $v bytes, BraidDB in memory (the reference)" >&2
  run braid "$v" c 0
  rss=$(/usr/bin/python3 -c "
import json
rows = [json.loads(l) for l in open('$OUT/sweep.jsonl')]
print(int([r for r in rows if r['engine'] == 'braid' and r['value_bytes'] == $v][-1]['peak_rss_mib']))")
  echo "index-budget-sweep: BraidDB's in-memory peak RSS: $rss MiB" >&2
  for pct in $PCTS; do
    mib=$(( rss * pct / 100 ))
    (( mib < 1 )) && mib=1
    for w in $WORKLOADS; do
      for e in $ENGINES; do
        echo "index-budget-sweep: value $v, workload $w, $e bound $pct % = $mib MiB" >&2
        run "$e" "$v" "$w" "$mib"
      done
    done
  done
done
rm -rf "$DIR"
echo "index-budget-sweep: results in $OUT/sweep.jsonl" >&2
