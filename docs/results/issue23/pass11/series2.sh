#!/bin/bash
# Pass 11 series 2 (lines v2: beyond-LLC levels, sampled checks): interpolated node lines (w-lines) against its parent (w-off: the same
# commit with only the --key-order flag), alternated fresh copies.
cd /work/main
B=/tmp/w-off/build/bin/braid-bench; L=/tmp/w-lines/build/bin/braid-bench; O=/tmp/s11/r
ab() { name=$1; rounds=$2; shift 2; echo "== $name: $*"; timeout 1500 python3 scripts/ab.py --rounds $rounds --common "$*" --variant base=$B --variant lines=$L --out $O/$name.jsonl 2>&1 | tail -4; }
ab s2-y7i 4 ycsb --records 10000000 --seconds 2 --mode interleaved
ab s2-y7i-hashed 3 ycsb --records 10000000 --seconds 2 --mode interleaved --key-order hashed
ab s2-y6i 4 ycsb --records 1000000 --seconds 2 --mode interleaved
ab s2-y4i 4 ycsb --records 10000 --seconds 1 --mode interleaved
ab s2-tpcc-int 4 tpcc --warehouses 16 --seconds 4 --prefault-mib 4096 --mode interleaved
