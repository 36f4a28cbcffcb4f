#!/usr/bin/env bash
# The tree's hygiene, as `make lint` (part of `make test`) checks it:
#   1. every C++ file is formatted as .clang-format says (clang-format-19; `scripts/lint.sh
#      --fix` rewrites them in place);
#   2. the include graph of src/ has no cycle among layers or modules (scripts/include-graph.py);
#   3. clang-tidy-19 finds nothing .clang-tidy asks about in src/ (compile commands of BUILD,
#      default build/debug, which `make debug` configures).
# Exit status: 0 clean, 1 a finding (each is printed), 2 a tool is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/debug}
FORMAT=${CLANG_FORMAT:-clang-format-19}
TIDY=${RUN_CLANG_TIDY:-run-clang-tidy-19}
for tool in "$FORMAT" "$TIDY"; do
  command -v "$tool" >/dev/null || { echo "lint: $tool missing (scripts/install-deps.sh)" >&2; exit 2; }
done
# Tracked files and new ones not yet added (a new file is formatted before its first commit).
files=$( (git ls-files '*.h' '*.cc' '*.inc'; git ls-files --others --exclude-standard '*.h' '*.cc' '*.inc') |
  grep -v '^tests/storage/corpus/')
status=0

if [ "${1:-}" = "--fix" ]; then
  echo "$files" | xargs "$FORMAT" -i
  echo "lint: formatted $(echo "$files" | wc -l) files"
  exit 0
fi

if ! echo "$files" | xargs "$FORMAT" --dry-run --Werror 2>/tmp/braid-lint-format.txt; then
  grep -E "^[^ ].*(warning|error):" /tmp/braid-lint-format.txt | head -40
  echo "lint: formatting differs from .clang-format in $(grep -cE "(warning|error):" /tmp/braid-lint-format.txt) places (scripts/lint.sh --fix)"
  status=1
else
  echo "lint: formatting clean ($(echo "$files" | wc -l) files)"
fi

if ! python3 scripts/include-graph.py >/dev/null; then
  status=1
fi

if [ ! -f "$BUILD/compile_commands.json" ]; then
  echo "lint: $BUILD/compile_commands.json missing (configure it: make debug)" >&2
  exit 2
fi
if ! "$TIDY" -p "$BUILD" -quiet -j "$(nproc)" '^'"$PWD"'/src/' >/tmp/braid-lint-tidy.txt 2>&1; then
  grep -E "(warning|error):" /tmp/braid-lint-tidy.txt | sort -u | head -40
  echo "lint: clang-tidy findings in src/ (full output: /tmp/braid-lint-tidy.txt)"
  status=1
else
  echo "lint: clang-tidy clean (src/)"
fi
exit $status
