#!/usr/bin/env bash
# The user's path into BraidDB, as the suite checks it: install the library from this build
# tree, build examples/ against the installed CMake package, build one example again against
# the pkg-config file, run every example, and (with --subproject) build the examples with
# BraidDB pulled in by add_subdirectory, as FetchContent does.
#   install_test.sh BUILD_DIR SOURCE_DIR CXX BUILD_TYPE "CXX_FLAGS" [--subproject]
set -euo pipefail
build=$1 src=$2 cxx=$3 type=$4 flags=$5 sub=${6:-}
work=$(mktemp -d /tmp/braid-install-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
say() { echo "install_test: $*"; }

say "cmake --install $build --prefix $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in include/braid/braid.h include/braid/tx.h lib/libbraid.a \
         lib/cmake/BraidDB/BraidDBConfig.cmake lib/pkgconfig/braiddb.pc; do
  [ -f "$work/prefix/$f" ] || { say "missing $f in the install tree"; exit 1; }
done
# The public headers stand alone: nothing under include/ names a private header.
if grep -rn '#include "' "$work/prefix/include/braid"; then
  say "an installed header includes a private header"; exit 1
fi

run_examples() {  # dir
  "$1/bank_transfer" 2 3000
  "$1/bank_coroutines" 2 3000 2
  rm -rf "$work/db"
  "$1/durable_reopen" "$work/db"
  rm -rf "$work/db"
  "$1/sales_report" "$work/db" 20000 2
  rm -rf "$work/db"
  "$1/cold_index" "$work/db" 20000 1
}

say "examples against the installed package (find_package(BraidDB CONFIG))"
cmake -S "$src/examples" -B "$work/examples" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE="$type" -DCMAKE_CXX_FLAGS="$flags -Wall -Wextra -Werror" \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/examples" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
run_examples "$work/examples"

say "an example against the pkg-config file"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
# shellcheck disable=SC2046,SC2086  # the flags are word lists
"$cxx" $flags -Wall -Wextra -Werror $(pkg-config --cflags braiddb) \
  "$src/examples/bank_transfer.cc" -o "$work/bank_transfer_pc" $(pkg-config --libs braiddb)
"$work/bank_transfer_pc" 2 1000

if [ "$sub" = --subproject ]; then
  say "examples with BraidDB as a subproject (add_subdirectory)"
  cmake -S "$src/tests/install/subproject" -B "$work/sub" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_BUILD_TYPE="$type" -DCMAKE_CXX_FLAGS="$flags" -DBRAID_SOURCE_DIR="$src" \
    > "$work/sub-configure.log"
  cmake --build "$work/sub" > "$work/sub-build.log" || { tail -40 "$work/sub-build.log"; exit 1; }
  # Only the library and the examples were built: no tests, no braid-bench.
  if [ -e "$work/sub/braid/bin/braid-bench" ] || find "$work/sub" -name 'btree_test' | grep -q .; then
    say "the subproject built BraidDB's tests or tools"; exit 1
  fi
  run_examples "$work/sub/examples"
fi
say "ok"
