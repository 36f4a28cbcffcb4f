#!/usr/bin/env bash
# Reproduces the Killer-Nanoseconds paper's (PVLDB 2018) Figures 1-4, 6-8, 10 and 11 at this
# machine's scale with `braid-bench probe`, one JSON line per (point, technique) in
# $OUT/kn-fig<N>.jsonl; then `scripts/plot.py $OUT` draws kn-fig<N>.png. Measures the roof first
# (braid-bench roof) so every result carries its fraction of it.
#
#   scripts/killer-figures.sh                   # defaults: minutes on a 2-core machine
#   FIGURES="1 6" SECONDS_PER=2 scripts/killer-figures.sh
#
# The paper's figures and what stands in for them here:
#   1  hash probe, 1 thread, group size 1..64: small (0.13 M keys, ~0.5 MiB) and large (10 M)
#      tables, uniform and Zipf keys (clang build)
#   2  the same with the second compiler (the paper: MSVC; here g++-12, build/gcc, if built)
#   3  hash probe, threads 1..N, group 30, large table
#   4  hash probe, table size 1 M .. 50 M keys, group 30, all threads
#   6  binary search, 1 thread, group size 1..64: 0.5 MiB and 1 GiB arrays, uniform and Zipf
#   7  the same with g++-12 (the paper: MSVC)
#   8  binary search, threads 1..N, group 20, 1 GiB
#   10 binary search, array size 0.5 MiB .. 4 GiB, group 20, all threads
#   11 the paper's Masstree figure, on BraidDB's B+-tree (2e7 keys, uniform and Zipf):
#      (a) group size 1..64 on 1 thread, with the engine's interleaved path beside the
#      techniques, (d) threads 1..N
#   13 the paper's Bw-tree figure (25 M keys there, 2e7 here, 10 % of them inserted after the
#      bulk load so lookups meet delta chains): (a) group size 1..64 on 1 thread, (b) the same
#      on all threads, (c) group 12, threads 1..N; and (d), not in the paper: the share inserted
#      after the load (0 = no deltas), group 16, 1 thread
set -euo pipefail

BIN=${BIN:-build/release/bin/braid-bench}
BIN_GCC=${BIN_GCC:-build/gcc/bin/braid-bench}
OUT=${OUT:-results/killer}
SECONDS_PER=${SECONDS_PER:-0.5}
FIGURES=${FIGURES:-"1 2 3 4 6 7 8 10 11 13"}
CORES=$(nproc)
THREADS=${THREADS:-$(seq -s, 1 "$CORES")}
GROUPS_SWEEP=${GROUPS_SWEEP:-1,2,4,6,8,10,12,16,20,24,32,40,48,64}
HASH_LARGE=${HASH_LARGE:-10000000}
BTREE_KEYS=${BTREE_KEYS:-20000000}
BW_DELTAS=${BW_DELTAS:-0,10,30}
BIN_LARGE=$((1 << 28))      # 1 GiB of 4-byte keys
BIN_SMALL=$((1 << 17))      # 0.5 MiB
HASH_SMALL=130000           # the paper's small table (~0.5 MiB of keys)
# 0.5 MiB .. 4 GiB of 4-byte keys (2^17 .. 2^30)
BIN_SIZES=${BIN_SIZES:-131072,1048576,4194304,16777216,67108864,268435456,1073741824}
HASH_SIZES=${HASH_SIZES:-1000000,5000000,10000000,50000000}
TECH=naive,gp,amac,coro

[ -x "$BIN" ] || { echo "killer-figures: $BIN not built (make release)" >&2; exit 1; }
mkdir -p "$OUT"
ROOF=$OUT/roof.json
[ -f "$ROOF" ] || "$BIN" roof --save "$ROOF" --json "$OUT/roof.jsonl"

probe() {  # probe <figure> <binary> <flags...>
  local fig=$1 bin=$2
  shift 2
  echo "kn-fig $fig: $*" >&2
  "$bin" probe --seconds "$SECONDS_PER" --roof "$ROOF" --json "$OUT/kn-fig$fig.jsonl" "$@" >&2
}

# group_sweep <figure> <structure> <small keys> <large keys>: the single-thread group-size
# figures; the second of each pair (2, 7) uses the g++-12 build, as the paper's used MSVC.
group_sweep() {
  local fig=$1 structure=$2 bin=$BIN
  if [ "$fig" = 2 ] || [ "$fig" = 7 ]; then
    [ -x "$BIN_GCC" ] || { echo "kn-fig $fig: $BIN_GCC not built (make gcc); skipped" >&2; return; }
    bin=$BIN_GCC
  fi
  for keys in "$3" "$4"; do
    for dist in uniform zipf; do
      probe "$fig" "$bin" --structure "$structure" --keys "$keys" --dist "$dist" --technique $TECH --group "$GROUPS_SWEEP"
    done
  done
}

for fig in $FIGURES; do
  case $fig in
    1|2) group_sweep "$fig" hash $HASH_SMALL $HASH_LARGE ;;
    3)
      for dist in uniform zipf; do
        probe 3 "$BIN" --structure hash --keys "$HASH_LARGE" --dist "$dist" --technique $TECH --group 30 --threads "$THREADS"
      done ;;
    4)
      for dist in uniform zipf; do
        probe 4 "$BIN" --structure hash --keys "$HASH_SIZES" --dist "$dist" --technique $TECH --group 30 --threads "$CORES"
      done ;;
    6|7) group_sweep "$fig" binsearch $BIN_SMALL $BIN_LARGE ;;
    8)
      for dist in uniform zipf; do
        probe 8 "$BIN" --structure binsearch --keys "$BIN_LARGE" --dist "$dist" --technique $TECH --group 20 --threads "$THREADS"
      done ;;
    10)
      for dist in uniform zipf; do
        probe 10 "$BIN" --structure binsearch --keys "$BIN_SIZES" --dist "$dist" --technique $TECH --group 20 --threads "$CORES"
      done ;;
    11)
      for dist in uniform zipf; do
        probe 11 "$BIN" --structure btree --keys "$BTREE_KEYS" --dist "$dist" --technique $TECH,engine --group "$GROUPS_SWEEP"
        probe 11 "$BIN" --structure btree --keys "$BTREE_KEYS" --dist "$dist" --technique $TECH --group 16 --threads "$THREADS"
      done ;;
    13)
      probe 13 "$BIN" --structure bwtree --keys "$BTREE_KEYS" --technique $TECH --group "$GROUPS_SWEEP"
      probe 13 "$BIN" --structure bwtree --keys "$BTREE_KEYS" --technique $TECH --group "$GROUPS_SWEEP" --threads "$CORES"
      probe 13 "$BIN" --structure bwtree --keys "$BTREE_KEYS" --technique $TECH --group 12 --threads "$THREADS"
      for delta in ${BW_DELTAS//,/ }; do
        probe 13 "$BIN" --structure bwtree --keys "$BTREE_KEYS" --technique $TECH --group 16 --delta-pct "$delta"
      done ;;
    *) echo "killer-figures: no figure $fig" >&2; exit 2 ;;
  esac
done
echo "results in $OUT; plot with scripts/plot.py $OUT" >&2
