#!/usr/bin/env bash
# Installs BraidDB's build and test dependencies from Debian 12 packages, only what is missing.
# fio is for the cold store's I/O comparison (scripts/budget-sweep.sh), not the build;
# liblmdb-dev and librocksdb-dev are the peers of `braid-bench ycsb --engine`; valgrind is for
# scripts/profile-ops.sh (instruction and cache-miss counts; its callgrind.h marks the runs);
# clang-format-19 and clang-tidy-19 are `make lint`'s.
# Run as root (or with sudo available). Idempotent and quiet when everything is present.
set -euo pipefail

packages=(cmake ninja-build make git clang-19 libclang-rt-19-dev g++-12 libgtest-dev liburing-dev
          pkg-config python3 python3-matplotlib fio liblmdb-dev librocksdb-dev valgrind
          clang-format-19 clang-tidy-19)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
