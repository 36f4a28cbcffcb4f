# BraidDB: thin wrapper over CMake + Ninja. Each mode builds in its own directory; binaries land
# in build/<mode>/bin/.
#   make run      install deps, build release, run braid-bench on its default workload
#   make test     install deps, build debug (ASan+UBSan), tsan and g++-12, run the whole suite:
#                 everything under ASan+UBSan, the lint (format, include graph, clang-tidy), the
#                 concurrency tests under TSan, and the suite again as built by g++-12 (the
#                 second supported compiler)
#   make lint     scripts/lint.sh: clang-format, the include graph of src/ (no cycle), clang-tidy
#   make install PREFIX=/opt/braid   build release and install the library, headers, CMake
#                 package, pkg-config file and the two tools under PREFIX (default /usr/local)
#   make release | debug | tsan | gcc    build one configuration
CXX_COMPILER ?= clang++-19
NATIVE ?= ON
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
CMAKE_COMMON = -G Ninja -DCMAKE_CXX_COMPILER=$(CXX_COMPILER)
# Sanitizer builds: line tables are all a sanitizer's report needs, and full debug information
# is a fifth of their compile time (for a debugger: make debug SAN_FLAGS="-O1 -g").
SAN_FLAGS ?= -O1 -gline-tables-only

.PHONY: all deps release debug tsan gcc run install lint test test-debug test-tsan test-gcc clean

all: release

deps:
	@./scripts/install-deps.sh

build/release/build.ninja: | deps
	cmake -S . -B build/release $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=Release -DBRAID_NATIVE=$(NATIVE) -DBRAID_TESTS=ON

build/debug/build.ninja: | deps
	cmake -S . -B build/debug $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=Debug -DBRAID_SANITIZE=address -DBRAID_DEBUG_CHECKS=ON -DCMAKE_CXX_FLAGS="$(SAN_FLAGS)"

build/tsan/build.ninja: | deps
	cmake -S . -B build/tsan $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=Debug -DBRAID_SANITIZE=thread -DBRAID_DEBUG_CHECKS=ON -DCMAKE_CXX_FLAGS="$(SAN_FLAGS)"

build/gcc/build.ninja: | deps
	cmake -S . -B build/gcc -G Ninja -DCMAKE_CXX_COMPILER=g++-12 -DCMAKE_BUILD_TYPE=Release -DBRAID_TESTS=ON

release: build/release/build.ninja
	cmake --build build/release -j $(JOBS)

debug: build/debug/build.ninja
	cmake --build build/debug -j $(JOBS)

tsan: build/tsan/build.ninja
	cmake --build build/tsan -j $(JOBS)

gcc: build/gcc/build.ninja
	cmake --build build/gcc -j $(JOBS)

run: release
	./build/release/bin/braid-bench ycsb

install: release
	cmake --install build/release --prefix $(PREFIX)

test-debug: debug
	cd build/debug && ctest --output-on-failure -j $(JOBS)
	@grep -h -E "crash-state enumeration|fail-the-Nth-I/O|kill loop|log_fuzz_replay:|directory-damage sweep" build/debug/Testing/Temporary/LastTest.log || true

# Only what the concurrency tests need is built under TSan (the target collects them).
test-tsan: build/tsan/build.ninja
	cmake --build build/tsan -j $(JOBS) --target concurrency_tests
	cd build/tsan && ctest --output-on-failure -j $(JOBS) -L concurrency

test-gcc: gcc
	cd build/gcc && ctest --output-on-failure -j $(JOBS)
	@grep -h -E "crash-state enumeration" build/gcc/Testing/Temporary/LastTest.log || true

lint: debug
	./scripts/lint.sh

test: test-debug lint test-tsan test-gcc

clean:
	rm -rf build
