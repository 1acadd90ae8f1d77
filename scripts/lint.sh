#!/usr/bin/env bash
# Checks the tree's habits, and says how to fix what it finds:
#   - clang-format (.clang-format) over every tracked *.cc, *.h and *.cu;
#   - flake8 (.flake8) over every tracked *.py;
#   - cppcheck over core/, topology/, mpi_ops/ and gpu_ops/ (the checks below).
#   scripts/lint.sh          checks; exits non-zero if any check fails
#   scripts/lint.sh --fix    applies clang-format to the whole tree first, then checks
# The tools come from Debian's clang-format, flake8 and cppcheck (scripts/install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  *) echo "usage: scripts/lint.sh [--fix]; got '$1'" >&2; exit 2 ;;
esac

for tool in clang-format flake8 cppcheck; do
  command -v "$tool" >/dev/null || {
    echo "lint: '$tool' is not installed; scripts/install.sh installs it" >&2
    exit 2
  }
done
# Versions format differently; the tree is kept formatted by Debian 12's clang-format 14.
clang_major="$(clang-format --version | sed -n 's/.*version \([0-9]*\).*/\1/p')"
if [ "$clang_major" != 14 ]; then
  echo "lint: note: clang-format $clang_major here; the tree is formatted with clang-format 14" \
    "(Debian 12), so a few lines may differ" >&2
fi

mapfile -t cxx_files < <(git ls-files '*.cc' '*.h' '*.cu')
mapfile -t py_files < <(git ls-files '*.py')
# cppcheck reads the GPU sources (cuda_*.cc, nccl_*.cc) without CUDA's headers, which it
# does not need; *.cu is CUDA C++ (<<<...>>> launches), which it cannot parse.
mapfile -t cppcheck_files < <(git ls-files 'core/*.cc' 'topology/*.cc' 'mpi_ops/*.cc' 'gpu_ops/*.cc')

if [ "$fix" = 1 ]; then
  echo "lint: clang-format -i over ${#cxx_files[@]} files"
  printf '%s\0' "${cxx_files[@]}" | xargs -0 -P2 -n 32 clang-format -i
fi

failed=()

echo "== clang-format (${#cxx_files[@]} files)"
unformatted=()
for file in "${cxx_files[@]}"; do
  clang-format "$file" | cmp -s "$file" - || unformatted+=("$file")
done
if [ ${#unformatted[@]} -gt 0 ]; then
  for file in "${unformatted[@]}"; do
    echo "$file: $(clang-format "$file" | diff "$file" - | grep -c '^>') changed lines"
  done
  echo "fix: scripts/lint.sh --fix (all files), or clang-format -i FILE; see: clang-format FILE | diff FILE -"
  failed+=(clang-format)
fi

echo "== flake8 (${#py_files[@]} files)"
if ! flake8 "${py_files[@]}"; then
  echo "fix: by hand (flake8 fixes nothing itself); the settings are in .flake8"
  failed+=(flake8)
fi

echo "== cppcheck (${#cppcheck_files[@]} files in core/, topology/, mpi_ops/ and gpu_ops/)"
# warning: likely bugs; performance: needless copies; portability. Left out: style (its
# useStlAlgorithm and shadowFunction reports were all noise here). Suppressed:
# identicalConditionAfterEarlyExit in timeline.cc, its double-checked active() flag (an
# atomic read again under the mutex, which cppcheck takes for a plain bool).
cppcheck_log="$(mktemp)"
trap 'rm -f "$cppcheck_log"' EXIT
cppcheck --quiet --std=c++17 --language=c++ -I . -j2 \
  --enable=warning,performance,portability --error-exitcode=1 --inline-suppr \
  --suppress=identicalConditionAfterEarlyExit:core/timeline.cc \
  --template='{file}:{line}: {severity} ({id}): {message}' \
  "${cppcheck_files[@]}" 2>"$cppcheck_log" || true
if [ -s "$cppcheck_log" ]; then
  sort -u "$cppcheck_log"
  echo "fix: the code (each report names the check in parentheses); a false positive:" \
    "a '// cppcheck-suppress ID' comment on the line, with the reason"
  failed+=(cppcheck)
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: FAILED: ${failed[*]}"
  exit 1
fi
echo "lint: clean"
