#!/bin/bash
# Pass 11 standing series: 8968361 (the baseline) against the pass's final build.
cd /work/main
OLD=/tmp/b23/build/bin/braid-bench; NEW=/work/main/build/release/bin/braid-bench; O=/tmp/s11/r
ab() { name=$1; rounds=$2; shift 2; echo "== $name: $*"; timeout 1800 python3 scripts/ab.py --rounds $rounds --common "$*" --variant old=$OLD --variant new=$NEW --out $O/$name.jsonl 2>&1 | tail -4; }
ab st-y7i 6 ycsb --records 10000000 --seconds 3 --mode interleaved
ab st-y7s 3 ycsb --records 10000000 --seconds 3 --mode sequential
ab st-y4s 3 ycsb --records 10000 --seconds 1 --mode sequential
ab st-y4i 3 ycsb --records 10000 --seconds 1 --mode interleaved
ab st-upd 3 ycsb --records 1000000 --seconds 3 --update 100 --mode interleaved
ab st-tpcc-int 4 tpcc --warehouses 16 --seconds 4 --prefault-mib 4096 --mode interleaved
ab st-tpcc-seq 3 tpcc --warehouses 16 --seconds 4 --prefault-mib 4096 --mode sequential
echo "== st-scale: ycsb --records 10000000 --seconds 3 --mode interleaved, --threads 1|2 (new)"
timeout 1800 python3 scripts/ab.py --rounds 5 --common 'ycsb --records 10000000 --seconds 3 --mode interleaved' --variant "t1=$NEW --threads 1" --variant "t2=$NEW --threads 2" --out $O/st-scale.jsonl 2>&1 | tail -4
