#!/usr/bin/env bash
# Instruction-cache figures (issue 22, STEPS): callgrind with this machine's caches simulated
# (L1-I 32 KiB 8-way, L1-D 32 KiB 8-way, LL 32 MiB 16-way, 64 B lines; branch prediction) on
# fixed runs of
#   * TPC-C, each transaction type alone and the mixes tpcc and tpcc-h (TPC-C + 10 % Q2*),
#     under sequential and interleaved, the latter with each of SCHEDULERS; and the tpcc mix
#     with its types started in the drawn order and grouped by type (--type-order), under
#     pipeline, batch and team;
#   * YCSB read-only and read-modify-write (10 operations per transaction), the same modes;
#   * the STEPS microbenchmark (braid-bench steps: one index fetch by N transactions, as one
#     team and one after another, cold and warm).
# Only the measured runs are instrumented (bench/profile_marks.h); callgrind clears its simulated
# caches whenever instrumentation starts, so each run starts cold and its first touch of every
# code line is a miss: the footprint is reported beside the misses, and the misses past it.
#
#   scripts/icache.sh [OUT]      (default OUT: results/icache/<commit>)
#
# Writes OUT/icache.json, OUT/icache.md and OUT/*.png (scripts/icache.py), and keeps the raw
# callgrind files in OUT/raw. Counts repeat exactly for the same binary and inputs. The build is
# Release with DWARF 4, for -march=ARCH (default x86-64-v3, which valgrind 3.19 decodes).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/icache/$(git rev-parse --short HEAD)}
ARCH=${ARCH:-x86-64-v3}
TXNS=${TXNS:-1000}              # per TPC-C and YCSB run
DECK=${DECK:-250}               # types per deck under --type-order grouped
WAREHOUSES=${WAREHOUSES:-8}     # batch 8: every open transaction has a warehouse of its own
RECORDS=${RECORDS:-1000000}
SCHEDULERS=${SCHEDULERS:-pipeline,team}
MIXES=${MIXES:-new-order,payment,order-status,delivery,stock-level,q2,tpcc,tpcc-h}
STEPS_ARGS=${STEPS_ARGS:-}
BUILD=${BUILD:-build/profile}
WHO=icache
# shellcheck source=scripts/valgrind-build.sh
source scripts/valgrind-build.sh
CG=(valgrind --tool=callgrind --instr-atstart=no --dump-instr=yes --cache-sim=yes --branch-sim=yes
  --I1=32768,8,64 --D1=32768,8,64 --LL=33554432,16,64)

mkdir -p "$OUT/raw"
rm -f "$OUT"/raw/*
run() {  # name, then braid-bench's arguments
  local name=$1
  shift
  echo "icache: $name: braid-bench $*" >&2
  "${CG[@]}" --callgrind-out-file="$OUT/raw/$name.cg" "$BIN" "$@" >"$OUT/raw/$name.log" 2>&1 ||
    { echo "icache: the run failed; see $OUT/raw/$name.log" >&2; exit 1; }
}
# Sequential runs one transaction at a time: its scheduler does not matter.
run tpcc-seq tpcc --warehouses "$WAREHOUSES" --txns "$TXNS" --mix "$MIXES" --mode sequential \
  --scheduler pipeline --reserve-gib 4 --json none
run tpcc-int tpcc --warehouses "$WAREHOUSES" --txns "$TXNS" --mix "$MIXES" --mode interleaved \
  --scheduler "$SCHEDULERS" --reserve-gib 4 --json none
# The mix's types started grouped by type (tpcc --type-order grouped, decks of DECK; TXNS a
# multiple of DECK, so both orders start the same transactions) against the drawn order, under
# each scheduler that admits differently. Each variant is the first run of its own process:
# a run that follows another on the same tables meets leaves the one before already split
# (the load packs them full), ~7 M fewer instructions per 1,000 transactions here.
for order in arrival grouped; do
  run "tpcc-seq-$order" tpcc --warehouses "$WAREHOUSES" --txns "$TXNS" --mix tpcc \
    --mode sequential --type-order "$order" --type-deck "$DECK" --reserve-gib 4 --json none
  for s in pipeline batch team team-over-batch; do
    sched=(--scheduler "$s")
    [ "$s" = team-over-batch ] && sched=(--scheduler team --team-admission batch)
    run "tpcc-int-$order-$s" tpcc --warehouses "$WAREHOUSES" --txns "$TXNS" --mix tpcc \
      --mode interleaved "${sched[@]}" --type-order "$order" --type-deck "$DECK" \
      --reserve-gib 4 --json none
  done
done
# Teams that hold transactions back: 16 open, rounds of at least 8, up to HOLD rounds' wait.
for s in ${SCHEDULERS//,/ }; do
  run "tpcc-int-b16-$s" tpcc --warehouses 16 --txns "$TXNS" --mix tpcc --mode interleaved \
    --scheduler "$s" --batch 16 --team-size 8 --team-wait "${HOLD:-16}" --reserve-gib 4 \
    --json none
done
for w in read rmw; do
  run "ycsb-$w-seq" ycsb --records "$RECORDS" --txns "$TXNS" --ops-per-txn 10 "--$w" 100 \
    --mode sequential --reserve-gib 4 --json none
  for s in ${SCHEDULERS//,/ }; do
    run "ycsb-$w-int-$s" ycsb --records "$RECORDS" --txns "$TXNS" --ops-per-txn 10 "--$w" 100 \
      --mode interleaved --scheduler "$s" --reserve-gib 4 --json none
  done
done
# shellcheck disable=SC2086
run steps steps --reserve-gib 4 --json none $STEPS_ARGS
/usr/bin/python3 scripts/icache.py "$OUT" --txns "$TXNS" --arch "$ARCH" \
  --commit "$(git rev-parse --short HEAD)"
echo "icache: $OUT/icache.md" >&2
