#!/usr/bin/env bash
# BraidDB beside MosaicDB on MosaicDB's own cold mix across the share of storage-bound
# transactions: a 10 M-record hot table, a 1 M-record cold table never cached, cold-pct % of
# transactions read 2 cold + 8 hot records, the rest 10 hot; 1 worker, no SQPOLL. Rounds
# alternate the systems; within a round BraidDB runs every cold-pct and scheduler from one
# loaded database, MosaicDB one process per cold-pct and variant (each loads its tables).
#
#   PEERS=/tmp/peers scripts/mosaic-coldpct.sh     (MosaicDB built as ../shared/peers/README.md
#                                                   says, in $PEERS/src/mosaicdb-small)
#   /usr/bin/python3 scripts/mosaic-coldpct-plot.py results/mosaic-coldpct
#
# Writes $OUT/runs.jsonl: one line per run, {"system","variant","cold_pct","round","txn_per_s"}
# (BraidDB's own JSON lines go to $OUT/braid.jsonl). MosaicDB is only measured here: nothing of
# its code is in BraidDB.
set -euo pipefail
P=${PEERS:?set PEERS to the folder MosaicDB was built in (../shared/peers/README.md)}
BIN=${BIN:-build/release/bin/braid-bench}
OUT=${OUT:-results/mosaic-coldpct}
DIR=${DIR:-/tmp/braid-mosaic-coldpct}  # on the file system to measure (not tmpfs)
PCTS=${PCTS:-1 2 5 10 20 50 100}
ROUNDS=${ROUNDS:-3}
RUN_S=${RUN_S:-6}
HOT=${HOT:-10000000}
COLD=${COLD:-1000000}
MOSAIC_VARIANTS=${MOSAIC_VARIANTS:-"hybrid-dualq hybrid-pipeline hybrid-dualq@64"}
# Cold queue sizes of BraidDB's dual-queue; 16 is MosaicDB's (and both engines' default), 64
# what this device needs in flight to reach its peak (a variant dual-queue@64, and
# hybrid-dualq@64 for MosaicDB).
COLD_SLOTS=${COLD_SLOTS:-"16 64"}
BATCH=8
NODE_GB=4
MO=$P/src/mosaicdb-small/build/benchmarks/ycsb/ycsb_SI_hybrid_coro
MLOG=${MLOG:-$P/mlog}  # MosaicDB's log directory: must allow O_DIRECT; wiped each run
[ -x "$MO" ] || { echo "mosaic-coldpct: $MO is missing (build MosaicDB first)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "mosaic-coldpct: $BIN is missing (make release)" >&2; exit 1; }
mkdir -p "$OUT" "$MLOG" "$P/glog" "$DIR"
export GLOG_log_dir=$P/glog

# MosaicDB reserves its node memory in 2 MiB huge pages.
hp_before=$(cat /proc/sys/vm/nr_hugepages)
trap 'echo "$hp_before" > /proc/sys/vm/nr_hugepages' EXIT
need=$((NODE_GB * 512 + 100))
[ "$hp_before" -ge "$need" ] || echo "$need" > /proc/sys/vm/nr_hugepages

emit() {  # system variant pct round tps
  printf '{"system":"%s","variant":"%s","cold_pct":%s,"round":%s,"txn_per_s":%s}\n' \
    "$1" "$2" "$3" "$4" "$5" >> "$OUT/runs.jsonl"
  printf '%-9s %-16s cold %3s%%  round %s  %10s txn/s\n' "$1" "$2" "$3" "$4" "$5"
}

commas=$(tr ' ' ',' <<<"$PCTS")
for round in $(seq 1 "$ROUNDS"); do
  rm -rf "$DIR/db"
  touch "$OUT/braid.jsonl"
  before=$(wc -l < "$OUT/braid.jsonl")
  "$BIN" coldmix --hot-records "$HOT" --cold-records "$COLD" --cold-pct "$commas" \
    --cache-cold off --mode interleaved --scheduler dual-queue,pipeline --seconds "$RUN_S" \
    --cold-slots "$(tr ' ' ',' <<<"$COLD_SLOTS")" --dir "$DIR/db" --json "$OUT/braid.jsonl" \
    > /dev/null
  tail -n +"$((before + 1))" "$OUT/braid.jsonl" | /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    q = r.get("cold_slots", 0)
    v = r["scheduler"] + (f"@{q}" if r["scheduler"] == "dual-queue" and q not in (0, 16) else "")
    print(v, r["cold_pct"], int(r["txn_per_s"]))' |
    while read -r sched pct tps; do emit braiddb "$sched" "$pct" "$round" "$tps"; done
  for pct in $PCTS; do
    hot=$(/usr/bin/python3 -c "print(round(1 - $pct / 100, 4))")
    for v in $MOSAIC_VARIANTS; do
      case $v in
        hybrid-dualq) s="-coro_scheduler=2 -coro_cold_queue_size=$((2 * BATCH)) -coro_check_cold_tx_interval=$BATCH" ;;
        hybrid-dualq@*) s="-coro_scheduler=2 -coro_cold_queue_size=${v#*@} -coro_check_cold_tx_interval=$BATCH" ;;
        hybrid-pipeline) s="-coro_scheduler=1 -coro_cold_tx_threshold=$BATCH" ;;
        *) echo "mosaic-coldpct: unknown MosaicDB variant $v" >&2; exit 2 ;;
      esac
      # MosaicDB sometimes dies before its window opens (SIGSEGV as it starts its worker):
      # such a run is tried once more, and a second failure is recorded as 0 txn/s with its
      # log kept, not taken for a measurement.
      tps=
      for try in 1 2; do
        rm -rf "${MLOG:?}"/*
        log="$OUT/mosaicdb-$v-$pct-r$round-t$try.log"
        # shellcheck disable=SC2086
        w=$(python3 "$P/cpuwin.py" "$log" -- "$MO" -verbose=1 -log_data_dir="$MLOG" \
          -node_memory_gb=$NODE_GB -ycsb_workload=C -ycsb_hot_table_size="$HOT" \
          -ycsb_ops_per_tx=10 -ycsb_ops_per_hot_tx=10 -ycsb_cold_table_size="$COLD" \
          -ycsb_cold_ops_per_tx=2 -ycsb_hot_tx_percent="$hot" -seconds="$RUN_S" -threads=1 \
          -ycsb_read_tx_type=hybrid-coro -coro_batch_size=$BATCH $s) || true
        tps=$(sed -n 's/.*agg_throughput=\([0-9]*\).*/\1/p' <<<"$w")
        [ -n "$tps" ] && break
        echo "mosaic-coldpct: MosaicDB $v at $pct % failed (try $try): $(tail -n 1 "$log")" >&2
      done
      emit mosaicdb "$v" "$pct" "$round" "${tps:-0}"
    done
  done
done
rm -rf "${MLOG:?}"/* "$DIR/db"
