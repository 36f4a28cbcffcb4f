#!/usr/bin/env bash
# Reproduces CoroBase (VLDB 2021) Figures 6, 7, 8, 10, 11 and 12 at this machine's scale with
# braid-bench ycsb, appending one JSON line per (figure, point, mode) to $OUT/<figure>.jsonl.
# Then `scripts/plot.py $OUT` draws the PNGs.
#
#   scripts/corobase-figures.sh                 # defaults: minutes on a 2-core machine
#   RECORDS=50000000 THREADS="1 2 4 8 16" SECONDS_PER=10 scripts/corobase-figures.sh
#   FIGURES="6 11" scripts/corobase-figures.sh  # a subset
#
# Mapping of the paper's variants onto BraidDB's modes (one binary, same data):
#   Naive -> sequential, ERMIA -> prefetch, CoroBase-FN -> nested, CoroBase -> interleaved,
#   CORO-MK -> interleaved --batch 1 --multi-get 1, CORO-FN-MK -> nested --batch 1 --multi-get 1,
#   Hybrid -> interleaved --multi-get 1; plus plain (no workers, no coroutines) and auto.
set -euo pipefail

BIN=${BIN:-build/release/bin/braid-bench}
OUT=${OUT:-results/corobase}
RECORDS=${RECORDS:-20000000}       # the paper's large-table size, scaled to this machine's memory
SMALL_RECORDS=${SMALL_RECORDS:-2000000}  # for the key/value-size sweeps (64 B keys, 1 KiB values)
THREADS=${THREADS:-"1 $(nproc)"}
SECONDS_PER=${SECONDS_PER:-2}
SIZES=${SIZES:-"10000 100000 1000000 10000000 $RECORDS"}
FIGURES=${FIGURES:-"6 7 8 10 11 12"}

[ -x "$BIN" ] || { echo "corobase-figures: $BIN not built (make release)" >&2; exit 1; }
mkdir -p "$OUT"

run() {  # run <figure> <flags...>
  local fig=$1
  shift
  echo "fig $fig: $*" >&2
  "$BIN" ycsb --seconds "$SECONDS_PER" --json "$OUT/fig$fig.jsonl" "$@" | tail -n +3 >&2
}

for fig in $FIGURES; do
  case $fig in
    6)  # read-only, 10 reads per transaction, throughput vs threads
      for t in $THREADS; do
        run 6 --records "$RECORDS" --threads "$t" --mode all
        run 6 --records "$RECORDS" --threads "$t" --mode interleaved --batch 1 --multi-get 1
        run 6 --records "$RECORDS" --threads "$t" --mode nested --batch 1 --multi-get 1
        run 6 --records "$RECORDS" --threads "$t" --mode interleaved --multi-get 1
      done ;;
    7)  # read-only, operations per transaction 1..16
      for k in 1 2 4 8 16; do
        run 7 --records "$RECORDS" --threads 1 --ops-per-txn "$k" --mode all
        run 7 --records "$RECORDS" --threads 1 --ops-per-txn "$k" --mode interleaved --batch 1 --multi-get 1
      done ;;
    8)  # update-only (10 blind writes) and 2 RMW + 8 reads, vs threads
      for t in $THREADS; do
        run 8 --records "$RECORDS" --threads "$t" --update 100 --mode all
        run 8 --records "$RECORDS" --threads "$t" --rmw 20 --read 80 --mode all
      done ;;
    10)  # read-only: key length, then value size
      for kb in 8 16 32 64; do
        run 10 --records "$SMALL_RECORDS" --key-bytes "$kb" --mode all
      done
      for vb in 8 64 256 1024; do
        run 10 --records "$SMALL_RECORDS" --value-bytes "$vb" --mode all
      done ;;
    11)  # read-only: table size
      for n in $SIZES; do
        run 11 --records "$n" --mode all
      done ;;
    12)  # skew: read-only, update-only, RMW-only
      for theta in 0 0.5 0.8 0.9 0.99; do
        run 12 --records "$RECORDS" --dist zipf --theta "$theta" --mode all
        run 12 --records "$RECORDS" --dist zipf --theta "$theta" --update 100 --mode all
        run 12 --records "$RECORDS" --dist zipf --theta "$theta" --rmw 100 --mode all
      done ;;
    *) echo "corobase-figures: no figure $fig" >&2; exit 2 ;;
  esac
done
echo "corobase-figures: results in $OUT; plot with scripts/plot.py $OUT" >&2
