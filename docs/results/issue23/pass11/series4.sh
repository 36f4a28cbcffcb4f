#!/bin/bash
# Pass 11 series 4: lines v3 (every level once the leaves outgrow the LLC; inline gate)
# against base (main + --key-order only).
cd /work/main
B=/tmp/w-off/build/bin/braid-bench; L=/tmp/w-lines/build/bin/braid-bench; O=/tmp/s11/r
ab() { name=$1; rounds=$2; shift 2; echo "== $name: $*"; timeout 1500 python3 scripts/ab.py --rounds $rounds --common "$*" --variant base=$B --variant lines=$L --out $O/$name.jsonl 2>&1 | tail -4; }
ab s4-y7i 5 ycsb --records 10000000 --seconds 2 --mode interleaved
ab s4-tpcc-int 6 tpcc --warehouses 16 --seconds 4 --prefault-mib 4096 --mode interleaved
ab s4-y7n 3 ycsb --records 10000000 --seconds 2 --mode nested
ab s4-y6i 3 ycsb --records 1000000 --seconds 2 --mode interleaved
ab s4-y7i-hashed 3 ycsb --records 10000000 --seconds 2 --mode interleaved --key-order hashed
