#!/bin/bash
# Pass 11 standing, second part: the scale series again (the first overlapped a build), and a
# second 10^7 interleaved series against 8968361.
cd /work/main
OLD=/tmp/b23/build/bin/braid-bench; NEW=/work/main/build/release/bin/braid-bench; O=/tmp/s11/r
echo "== st-scale-b: ycsb --records 10000000 --seconds 3 --mode interleaved, --threads 1|2 (new)"
timeout 1800 python3 scripts/ab.py --rounds 6 --common 'ycsb --records 10000000 --seconds 3 --mode interleaved' --variant "t1=$NEW --threads 1" --variant "t2=$NEW --threads 2" --out $O/st-scale-b.jsonl 2>&1 | tail -4
echo "== st-y7i-b: ycsb --records 10000000 --seconds 3 --mode interleaved"
timeout 1800 python3 scripts/ab.py --rounds 5 --common 'ycsb --records 10000000 --seconds 3 --mode interleaved' --variant old=$OLD --variant new=$NEW --out $O/st-y7i-b.jsonl 2>&1 | tail -4
