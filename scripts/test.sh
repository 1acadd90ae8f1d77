#!/usr/bin/env bash
# Installs horde (scripts/install.sh), then runs the whole test suite: the C++ unit
# tests (ctest) and the Python tests under mpirun with 1, 2 and 4 ranks. Every run has
# a time limit, so a hang fails the suite instead of stalling it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh

echo "== C++ tests (ctest)"
cmake -S . -B build/tests -DHORDE_BUILD_TORCH=OFF -DHORDE_BUILD_TESTS=ON >/dev/null
cmake --build build/tests -j "$(nproc)"
ctest --test-dir build/tests --output-on-failure --timeout 300

for np in 1 2 4; do
  echo "== Python tests on $np rank(s)"
  timeout 900 scripts/mpirun.sh -np "$np" \
    .venv/bin/python -m pytest tests/python -q -p no:cacheprovider --color=no
done
echo "== all test suites passed"
