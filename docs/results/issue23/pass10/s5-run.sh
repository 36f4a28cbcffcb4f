#!/bin/bash
cd /work/main
OLD=/tmp/b23/build/bin/braid-bench
NEW=/tmp/v-b869196
ab() { name=$1; rounds=$2; shift 2; echo "== $name $(date +%H:%M:%S)"; python3 scripts/ab.py --rounds $rounds --common "$*" --variant old=$OLD --variant new=$NEW --out /tmp/s5/s5-$name.jsonl 2>&1 | tail -3; }
ab y4s 4 ycsb --records 10000 --seconds 1 --mode sequential
ab y4i 4 ycsb --records 10000 --seconds 1 --mode interleaved
ab y7s 4 ycsb --records 10000000 --seconds 3 --mode sequential
ab y7i-b 5 ycsb --records 10000000 --seconds 3 --mode interleaved
ab upd 4 ycsb --records 1000000 --seconds 3 --update 100 --mode interleaved
echo "== scale $(date +%H:%M:%S)"
python3 scripts/ab.py --rounds 4 --common "ycsb --records 10000000 --seconds 3 --mode interleaved" --variant t1="$NEW --threads 1" --variant t2="$NEW --threads 2" --out /tmp/s5/s5-scale.jsonl 2>&1 | tail -3
echo "== tpcc-int-pi $(date +%H:%M:%S)"
python3 scripts/ab.py --rounds 3 --common "tpcc --warehouses 16 --seconds 4 --prefault-mib 4096 --mode interleaved" --variant old=$OLD --variant new=$NEW --variant newpi="$NEW --prefault-index-mib 1024" --out /tmp/s5/s5-tpcc-int-pi.jsonl 2>&1 | tail -4
echo "== done $(date +%H:%M:%S)"
