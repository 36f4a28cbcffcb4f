#!/usr/bin/env bash
# fio's 4 KiB random-read IOPS at queue depth 32 (O_DIRECT, io_uring) on the file system of DIR,
# the yardstick of the cold store's reads: scripts/fio-randread.sh DIR OUT.json
set -euo pipefail
dir=$1
out=$2
if ! command -v fio >/dev/null; then
  echo "fio-randread: fio is missing (scripts/install-deps.sh installs it); no IOPS baseline" >&2
  exit 0
fi
mkdir -p "$dir"
fio --name=randread --filename="$dir/fio.dat" --size=1G --rw=randread --bs=4k --direct=1 \
  --iodepth=32 --ioengine=io_uring --runtime=10 --time_based --output-format=json \
  --output="$out"
rm -f "$dir/fio.dat"
