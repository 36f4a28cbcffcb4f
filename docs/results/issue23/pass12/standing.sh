#!/usr/bin/env bash
# This pass's standing against 8968361 (OLD) with a build of this pass (NEW), every row of the
# issue's table, alternated fresh copies (scripts/ab.py); run from the repository's root.
# TAG names the series in the output files: standing.txt/st-* ran 8caa141 (the cut change,
# before the value hints), TAG=final the final build.
set -euo pipefail
OLD=${OLD:-/tmp/s12/bench-old}
NEW=${NEW:-/tmp/s12/bench-new}
D=${D:-docs/results/issue23/pass12}
TAG=${TAG:-}
ab() { local name=$1 rounds=$2; shift 2; python3 scripts/ab.py --rounds "$rounds" "$@" --out "$D/st${TAG:+-$TAG}-$name.jsonl" | tail -4; }
T='tpcc --warehouses 16 --seconds 4 --prefault-mib 4096'
echo "== tpcc sequential, with the oracle"; ab tpcc-seq-b 4 --common "$T --mode sequential" --variant old=$OLD --variant new=$NEW --variant "oracle=$NEW --rehearse"
echo "== tpcc interleaved"; ab tpcc-int-b 4 --common "$T --mode interleaved" --variant old=$OLD --variant new=$NEW
echo "== update-only 10^6 interleaved"; ab upd 3 --common 'ycsb --records 1000000 --seconds 3 --update 100 --mode interleaved' --variant old=$OLD --variant new=$NEW
echo "== 10^4 sequential"; ab y4s 3 --common 'ycsb --records 10000 --seconds 1 --mode sequential' --variant old=$OLD --variant new=$NEW
echo "== 10^7 sequential"; ab y7s 3 --common 'ycsb --records 10000000 --seconds 3 --mode sequential' --variant old=$OLD --variant new=$NEW
echo "== 10^7 interleaved"; ab y7i 5 --common 'ycsb --records 10000000 --seconds 3 --mode interleaved' --variant old=$OLD --variant new=$NEW
echo "== 1 -> 2 workers"; ab scale 4 --common 'ycsb --records 10000000 --seconds 3 --mode interleaved' --variant "t1=$NEW --threads 1" --variant "t2=$NEW --threads 2"
