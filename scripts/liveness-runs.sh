#!/usr/bin/env bash
# Liveness of durable serializable commits, many seeds: the history test's "durable clients"
# configuration (a database in a directory, CommitMode::kDurable, Isolation::kSerializable,
# 2 workers, three blocking-API threads with ~100 us think time and one thread keeping 8
# coroutine transactions in flight through submit()/Pending::wait(), key retirement), each
# seed in every execution mode and scheduler the test lists, each process under a timeout.
# A run that times out is a hang: its output is kept. Prints hangs, failures and the wall time.
# Env: RUNS (200), TXNS per client thread (750: 3 000 transactions per configuration),
#      FIRST_SEED (1), TIMEOUT seconds per process (300), BIN (build/release/bin/history_test),
#      OUT (results/liveness).
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-200}
TXNS=${TXNS:-750}
FIRST_SEED=${FIRST_SEED:-1}
TIMEOUT=${TIMEOUT:-300}
BIN=${BIN:-build/release/bin/history_test}
OUT=${OUT:-results/liveness}
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "liveness-runs: $BIN missing (make release)" >&2; exit 2; }
hangs=0
failures=0
configs=0
start=$(date +%s)
for seed in $(seq "$FIRST_SEED" $((FIRST_SEED + RUNS - 1))); do
  log="$OUT/seed-$seed.log"
  BRAID_HISTORY_SEED=$seed BRAID_CLIENT_TXNS=$TXNS timeout "$TIMEOUT" "$BIN" \
    --gtest_filter='*DurableClients*' >"$log" 2>&1
  rc=$?
  configs=$((configs + $(grep -c '^\[       OK \]' "$log")))
  if [ $rc -eq 124 ]; then
    hangs=$((hangs + 1))
    echo "seed $seed: HANG (no end within ${TIMEOUT} s); $log"
  elif [ $rc -ne 0 ]; then
    failures=$((failures + 1))
    echo "seed $seed: FAILED (exit $rc); $log"
  else
    rm -f "$log"
  fi
done
echo "liveness-runs: $RUNS seeds, $configs configurations passed, $hangs hangs, $failures failures," \
  "$TXNS transactions per client thread, $(( $(date +%s) - start )) s"
[ $hangs -eq 0 ] && [ $failures -eq 0 ]
