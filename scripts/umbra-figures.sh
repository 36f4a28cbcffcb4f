#!/usr/bin/env bash
# Umbra's micro-benchmarks (§3) at this machine's scale, with braid-bench scan. Every variant is
# its own process (a fresh database: load, cache --cached-pct, run); the variants of a figure
# run round-robin --repeat times, so rounds alternate in one window.
#   fig5  q1, 60 % cached: --threads 1,2,4,8 by sync and async at io depths 1,4,16,64
#   fig6  q1, 2 workers (the cores): cached 0..100 %, sync against async at depth $FIG6_DEPTH
#         (the bench's default: docs/results.md, "Sixteen morsels in flight")
#   fig8  q14 with every lineitem row probing (--q14-days 2526), 60 % of the parts cached:
#         --threads 1,2,4,8,16 by sync and async at depth 64 (lookups per second)
# plus fio on the same file system: 4 KiB random and sequential reads at depths 1 to 64 (the
# lookups' reads), and 128 KiB sequential reads at depths 8 and 32 (a scan's extents).
# Writes $OUT/<fig>.jsonl, $OUT/fio-qd<D>.json, $OUT/fio-seq-qd<D>.json and
# $OUT/fio-seq128k-qd<D>.json; plot with scripts/umbra-plot.py $OUT.
set -euo pipefail
BIN=${BIN:-build/release/bin/braid-bench}
OUT=${OUT:-results/umbra}
DIR=${DIR:-/tmp/braid-umbra}  # on the file system to measure (not tmpfs)
ROWS=${ROWS:-600000}
Q14_ROWS=${Q14_ROWS:-300000}
PARTS=${PARTS:-1000000}
REPEAT=${REPEAT:-3}
FIG6_DEPTH=${FIG6_DEPTH:-16}
FIGS=${FIGS:-"fig5 fig6 fig8 fio"}
SCAN_ARGS=${SCAN_ARGS:-}  # more braid-bench scan flags for every run, e.g. "--page-rows 32"
mkdir -p "$OUT" "$DIR"
run() {  # figure, flags...
  local fig=$1
  shift
  rm -rf "$DIR/db"
  # shellcheck disable=SC2086  # SCAN_ARGS is a list of flags
  "$BIN" scan --dir "$DIR/db" --repeat 1 --json "$OUT/$fig.jsonl" $SCAN_ARGS "$@" | grep -E '^  q1'
}
for fig in $FIGS; do
  case $fig in
    fig5)
      rm -f "$OUT/fig5.jsonl"
      for rep in $(seq "$REPEAT"); do
        for t in 1 2 4 8; do
          run fig5 --query q1 --rows "$ROWS" --cached-pct 60 --threads "$t" --io sync
          for d in 1 4 16 64; do
            run fig5 --query q1 --rows "$ROWS" --cached-pct 60 --threads "$t" --io async \
              --io-depth "$d"
          done
        done
      done ;;
    fig6)
      rm -f "$OUT/fig6.jsonl"
      for rep in $(seq "$REPEAT"); do
        for p in 0 20 40 60 80 90 100; do
          run fig6 --query q1 --rows "$ROWS" --cached-pct "$p" --threads 2 --io sync
          run fig6 --query q1 --rows "$ROWS" --cached-pct "$p" --threads 2 --io async \
            --io-depth "$FIG6_DEPTH"
        done
      done ;;
    fig8)
      rm -f "$OUT/fig8.jsonl"
      for rep in $(seq "$REPEAT"); do
        for t in 1 2 4 8 16; do
          for io in sync async; do
            depth=1
            [ "$io" = async ] && depth=64
            run fig8 --query q14 --q14-days 2526 --rows "$Q14_ROWS" --parts "$PARTS" \
              --cached-pct 60 --threads "$t" --io "$io" --io-depth "$depth"
          done
        done
      done ;;
    fio)
      if ! command -v fio >/dev/null; then
        echo "umbra-figures: fio is missing (scripts/install-deps.sh installs it)" >&2
        continue
      fi
      # Random reads (the lookups' pattern), and sequential ones (a scan's, in file order).
      for qd in 1 16 32 64; do
        fio --name=randread --filename="$DIR/fio.dat" --size=1G --rw=randread --bs=4k \
          --direct=1 --iodepth="$qd" --ioengine=io_uring --runtime=8 --time_based \
          --output-format=json --output="$OUT/fio-qd$qd.json"
        fio --name=seqread --filename="$DIR/fio.dat" --size=1G --rw=read --bs=4k \
          --direct=1 --iodepth="$qd" --ioengine=io_uring --runtime=8 --time_based \
          --output-format=json --output="$OUT/fio-seq-qd$qd.json"
      done
      for qd in 8 32; do
        fio --name=seqread128k --filename="$DIR/fio.dat" --size=1G --rw=read --bs=128k \
          --direct=1 --iodepth="$qd" --ioengine=io_uring --runtime=8 --time_based \
          --output-format=json --output="$OUT/fio-seq128k-qd$qd.json"
      done
      rm -f "$DIR/fio.dat" ;;
    *) echo "umbra-figures: unknown figure $fig" >&2; exit 2 ;;
  esac
done
rm -rf "$DIR/db"
