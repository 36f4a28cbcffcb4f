#!/bin/bash
# Pass 11 series 5: lines v4 (hint inlined with a constant whole node unless the tree qualifies;
# the leaf's slot found again when checked) against base (main + --key-order only).
cd /work/main
B=/tmp/w-off/build/bin/braid-bench; L=/tmp/w-lines/build/bin/braid-bench; O=/tmp/s11/r
ab() { name=$1; rounds=$2; shift 2; echo "== $name: $*"; timeout 1500 python3 scripts/ab.py --rounds $rounds --common "$*" --variant base=$B --variant lines=$L --out $O/$name.jsonl 2>&1 | tail -4; }
ab s5-y7i 5 ycsb --records 10000000 --seconds 2 --mode interleaved
ab s5-tpcc-int 6 tpcc --warehouses 16 --seconds 4 --prefault-mib 4096 --mode interleaved
ab s5-y6i 4 ycsb --records 1000000 --seconds 2 --mode interleaved
ab s5-y7n 3 ycsb --records 10000000 --seconds 2 --mode nested
ab s5-y4s 3 ycsb --records 10000 --seconds 1 --mode sequential
ab s5-y7i-hashed 3 ycsb --records 10000000 --seconds 2 --mode interleaved --key-order hashed
