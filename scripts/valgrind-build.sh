# Sourced by the valgrind scripts (profile-ops.sh, icache.sh): builds braid-bench as valgrind
# needs it — Release, DWARF 4, -march=$ARCH (valgrind 3.19 decodes AVX2, not AVX-512) — in
# $BUILD and sets BIN. Needs ARCH, BUILD and WHO (the caller's name, for messages).
command -v valgrind >/dev/null || { echo "$WHO: valgrind is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBRAID_NATIVE=OFF -DBRAID_TESTS=OFF \
  -DCMAKE_CXX_COMPILER="${CXX:-clang++-19}" "-DCMAKE_CXX_FLAGS=-g -gdwarf-4 -march=$ARCH" >/dev/null
ninja -C "$BUILD" braid-bench >/dev/null
BIN=$BUILD/bin/braid-bench
