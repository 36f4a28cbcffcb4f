#!/usr/bin/env bash
# Where the instructions go (issue 23): callgrind on small fixed runs of braid-bench ycsb —
# {10^4, 10^6} records x {get, update, insert, scan} x {sequential, interleaved}, 10 operations
# per transaction, TXNS transactions each — with I1/D1/LL caches simulated as this machine's
# (32 KiB 8-way L1s, 32 MiB 16-way L3) and branch prediction. Only the measured runs are
# instrumented (bench/profile_marks.h), so the load costs nothing in the profile; the mode list
# runs twice and the second round is reported (the simulated caches start cold when
# instrumentation starts: the first round warms them).
#
#   scripts/profile-ops.sh [OUT]      (default OUT: results/profile/<commit>)
#
# Writes OUT/profile.json and OUT/profile.md (instructions, L1-I, L1-D and LL misses, branch
# mispredictions per operation and per transaction, and the top functions by instructions),
# and keeps the raw callgrind files in OUT/raw for callgrind_annotate. Instruction counts
# repeat exactly for the same binary and inputs, whatever else the machine does: quote them
# before and after a change. The build is Release with DWARF 4 for valgrind, for -march=ARCH
# (default x86-64-v3: AVX2, which valgrind 3.19 decodes; -march=native here would emit
# AVX-512, which it does not). The runs are sized against this machine's L2 (--l2-kib, from
# getconf outside valgrind): under valgrind sysconf reports 256 KiB, and a 10^4-record tree
# (~270 KiB) then counted as outgrowing the cache, so sequential gets ran the node prefetches
# a native run does not (~90 instructions per get).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/profile/$(git rev-parse --short HEAD)}
ARCH=${ARCH:-x86-64-v3}
TXNS=${TXNS:-2000}
SIZES=${SIZES:-"10000 1000000"}
OPS=${OPS:-"get update insert scan"}
MODES=${MODES:-"sequential,interleaved"}
BUILD=${BUILD:-build/profile}
WHO=profile-ops
# shellcheck source=scripts/valgrind-build.sh
source scripts/valgrind-build.sh

L2_KIB=$(( $(getconf LEVEL2_CACHE_SIZE 2>/dev/null || echo 0) / 1024 ))
if [ "$L2_KIB" -lt 64 ]; then L2_KIB=1024; fi  # getconf without an answer: a common size

mkdir -p "$OUT/raw"
rm -f "$OUT"/raw/*
for n in $SIZES; do
  for op in $OPS; do
    case $op in
      get) mix="--read 100" ;;
      update) mix="--update 100" ;;
      insert) mix="--insert 100" ;;
      scan) mix="--scan 100 --scan-length 10" ;;
      *) echo "profile-ops: unknown operation $op" >&2; exit 2 ;;
    esac
    echo "profile-ops: $n records, $op, $MODES, $TXNS transactions each" >&2
    # shellcheck disable=SC2086
    valgrind --tool=callgrind --instr-atstart=no --cache-sim=yes --branch-sim=yes \
      --I1=32768,8,64 --D1=32768,8,64 --LL=33554432,16,64 \
      --callgrind-out-file="$OUT/raw/$n-$op.cg" \
      "$BIN" ycsb --records "$n" --txns "$TXNS" --ops-per-txn 10 $mix --mode "$MODES" --repeat 2 \
      --reserve-gib 4 --l2-kib "$L2_KIB" --json none >"$OUT/raw/$n-$op.log" 2>&1 ||
      { echo "profile-ops: the run failed; see $OUT/raw/$n-$op.log" >&2; exit 1; }
  done
done
python3 scripts/profile-ops.py "$OUT" --txns "$TXNS" --ops-per-txn 10 --arch "$ARCH" --l2-kib "$L2_KIB" \
  --commit "$(git rev-parse --short HEAD)"
echo "profile-ops: $OUT/profile.md" >&2
