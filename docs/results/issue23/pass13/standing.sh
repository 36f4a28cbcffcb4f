#!/usr/bin/env bash
# This pass's standing against 8968361 (OLD) with this pass's final build (NEW, d8c463a): pass
# 12's script, every row of the issue's table, its files written here; run from the
# repository's root as `TAG=final docs/results/issue23/pass13/standing.sh`.
set -euo pipefail
export OLD=${OLD:-/tmp/s13/old} NEW=${NEW:-/tmp/s13/new5} D=${D:-docs/results/issue23/pass13}
exec docs/results/issue23/pass12/standing.sh
