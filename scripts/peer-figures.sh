#!/usr/bin/env bash
# BraidDB beside LMDB and RocksDB (issue 24), every engine through braid-bench ycsb with the
# same keys, values and transactions, one process per engine and round, rounds alternated:
#   read10   RECORDS records (default 10 M), 8-byte keys, 100-byte values, uniform, 1 thread,
#            read-only transactions of 10 gets, in memory (peers in a temporary directory,
#            commits not synced); BraidDB in modes plain, sequential, interleaved
#   a, f     YCSB A and F at RECORDS records, async commit, in a directory (BraidDB without
#            checkpoints during the run), 1 op per transaction
#   a..f     YCSB A-F at WL_RECORDS records (default 1 M), async commit, every engine
# Writes $OUT/{read10,af,workloads}.jsonl; plot and tabulate with scripts/peer-plot.py $OUT.
set -euo pipefail
BIN=${BIN:-build/release/bin/braid-bench}
OUT=${OUT:-results/peers}
DIR=${DIR:-/tmp/braid-peers}  # on the file system to measure (not tmpfs)
RECORDS=${RECORDS:-10000000}
WL_RECORDS=${WL_RECORDS:-1000000}
ROUNDS=${ROUNDS:-3}
SECONDS_PER=${SECONDS_PER:-5}
ENGINES=${ENGINES:-"braid lmdb rocksdb"}
PARTS=${PARTS:-"read10 af workloads"}
mkdir -p "$OUT" "$DIR"
common=(--value-bytes 100 --key-bytes 8 --seconds "$SECONDS_PER" --threads 1)
ycsb() {  # jsonl, engine, flags...
  local json=$1 engine=$2
  shift 2
  local extra=()
  [ "$engine" = braid ] || extra=(--engine "$engine")
  rm -rf "$DIR/db"
  "$BIN" ycsb "${common[@]}" "${extra[@]}" --json "$OUT/$json" "$@" >> "$OUT/log.txt" 2>&1 ||
    { echo "peer-figures: $engine $* failed (see $OUT/log.txt)" >&2; exit 1; }
}
for part in $PARTS; do
  rm -f "$OUT/$part.jsonl"
  for round in $(seq "$ROUNDS"); do
    for engine in $ENGINES; do
      modes=()
      [ "$engine" = braid ] && modes=(--mode plain,sequential,interleaved)
      case $part in
        read10) ycsb read10.jsonl "$engine" --records "$RECORDS" --read 100 --ops-per-txn 10 \
                  "${modes[@]}" ;;
        af) for w in a f; do
              braid_only=()
              [ "$engine" = braid ] && braid_only=(--checkpoint-mib 0 --mode sequential,interleaved)
              ycsb af.jsonl "$engine" --records "$RECORDS" --workload $w --commit async \
                --dir "$DIR/db" "${braid_only[@]}"
            done ;;
        workloads) for w in a b c d e f; do
                     braid_only=()
                     [ "$engine" = braid ] && braid_only=(--checkpoint-mib 0 --mode sequential,interleaved)
                     ycsb workloads.jsonl "$engine" --records "$WL_RECORDS" --workload $w \
                       --commit async --dir "$DIR/db" "${braid_only[@]}"
                   done ;;
        *) echo "peer-figures: unknown part $part" >&2; exit 2 ;;
      esac
      echo "peer-figures: $part round $round $engine done" >&2
    done
  done
done
rm -rf "$DIR/db"
echo "peer-figures: results in $OUT" >&2
