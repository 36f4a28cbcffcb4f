#!/usr/bin/env bash
# Issue 20's MosaicDB figures at this machine's scale, with braid-bench coldmix (one loaded
# database per figure, every combination alternated --repeat times):
#   fig6  read-only, cold table never cached, cold-pct 0..100: sequential and every scheduler
#   fig7  the same, read-write (50 % read-only, 50 % RMW), async commit
#   fig8  dual-queue's cold queue size (8, 16, 32, 64) at 5, 10, 20, 50 % cold
#   fig10 no background threads vs an oversubscribed log flusher (scripts/flusher-ab.sh:
#         durable TPC-C and YCSB update-only, 1 and 2 workers, alternated process pairs)
#   fig11 coroutine structure: flattened, selectively nested (interleaved) and fully nested
#         (nested) storage paths, dual-queue, in memory (0 %) and 10 % cold
#   fig12 braid-bench contention: one hot leaf, 1..4x the cores in workers
# plus fio's 4 KiB random-read IOPS at queue depth 32 on the same file system. Writes
# $OUT/<fig>.jsonl and $OUT/fio.json; plot with scripts/coldmix-plot.py $OUT.
set -euo pipefail
BIN=${BIN:-build/release/bin/braid-bench}
OUT=${OUT:-results/coldmix}
DIR=${DIR:-/tmp/braid-coldmix}  # on the file system to measure (not tmpfs)
HOT=${HOT:-20000000}
COLD=${COLD:-2000000}
REPEAT=${REPEAT:-3}
SECONDS_PER=${SECONDS_PER:-3}
PCTS=${PCTS:-0,1,2,5,10,20,50,100}
FIGS=${FIGS:-"fig6 fig7 fig8 fig10 fig11 fig12"}
mkdir -p "$OUT" "$DIR"
run() {  # name, extra flags...
  local name=$1
  shift
  rm -rf "$DIR/db" "$OUT/$name.jsonl"
  "$BIN" coldmix --hot-records "$HOT" --cold-records "$COLD" --seconds "$SECONDS_PER" \
    --repeat "$REPEAT" --cache-cold off --dir "$DIR/db" --json "$OUT/$name.jsonl" "$@"
}
for fig in $FIGS; do
  case $fig in
    fig6) run fig6 --cold-pct "$PCTS" --mode sequential,interleaved --scheduler all ;;
    fig7) run fig7 --rw --commit async --checkpoint-mib 0 --cold-pct "$PCTS" \
            --mode sequential,interleaved --scheduler all ;;
    fig8) run fig8 --cold-pct 5,10,20,50 --mode interleaved --scheduler dual-queue \
            --cold-slots 8,16,32,64 ;;
    fig11) run fig11 --cold-pct 0,10 --mode nested,interleaved --scheduler dual-queue \
             --storage-path all ;;
    fig10) OUT_AB="$OUT/flusher-ab.jsonl"
           BIN="$BIN" OUT="$OUT_AB" DIR="$DIR/ab" "$(dirname "$0")/flusher-ab.sh" \
             > "$OUT/flusher-ab.txt" ;;
    fig12) rm -f "$OUT/contention.jsonl"
           "$BIN" contention --repeat "$REPEAT" --json "$OUT/contention.jsonl" \
             > "$OUT/contention.txt" ;;
    *) echo "coldmix-figures: unknown figure $fig" >&2; exit 2 ;;
  esac
done
rm -rf "$DIR/db"
"$(dirname "$0")/fio-randread.sh" "$DIR" "$OUT/fio.json"
echo "coldmix-figures: results in $OUT" >&2
