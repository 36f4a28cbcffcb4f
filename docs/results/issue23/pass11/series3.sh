#!/bin/bash
# Pass 11 series 3: lines v2 with the LLC from sysfs (leaves only at 10^7) and "all" (every
# level once the leaves outgrow the LLC) against base (main + --key-order only).
cd /work/main
B=/tmp/w-off/build/bin/braid-bench; L=/tmp/w-lines/build/bin/braid-bench; A=/tmp/w-all/build/bin/braid-bench; O=/tmp/s11/r
ab() { name=$1; rounds=$2; shift 2; echo "== $name: $*"; timeout 1500 python3 scripts/ab.py --rounds $rounds --common "$*" --variant base=$B --variant lines=$L --variant all=$A --out $O/$name.jsonl 2>&1 | tail -5; }
ab s3-y7i 5 ycsb --records 10000000 --seconds 2 --mode interleaved
ab s3-tpcc-int 4 tpcc --warehouses 16 --seconds 4 --prefault-mib 4096 --mode interleaved
ab s3-y7i-hashed 3 ycsb --records 10000000 --seconds 2 --mode interleaved --key-order hashed
