#!/usr/bin/env bash
# The Debian 13 lane: horde on PyTorch 2.6, Open MPI 5.0 (PRRTE), Python 3.13 and
# pybind11 2.13, in a Debian 13 (trixie) root under build/lanes/debian13/ made with
# debootstrap and the packages of `scripts/install.sh --print-packages trixie` (reused
# while that list is unchanged). In it, with the checkout's files copied to /horde:
# scripts/run_example.sh (the README's install and example, as a Debian 13 user runs
# them), ctest, pytest on 1 and 2 ranks, the Horovod compatibility and chaos suites,
# the examples, the C++ example built against the installed package, the launcher's
# tests (horderun's PRRTE command, --check-build), the elastic tests (in-place recovery
# included: this Open MPI has ULFM) and in-place recovery across two hosts (network
# namespaces: tests/launcher/elastic_in_place_netns_test.sh).
# Not here (Debian 12 only, scripts/test.sh): the other two-host network namespace tests
# and scripts/hardening.sh. Needs root; scripts/test.sh runs it.
#   scripts/test_debian13.sh            the lane
#   scripts/test_debian13.sh --prepare  makes (or checks) the root and builds there
#                                       (scripts/install.sh with the C++ tests), tests nothing
#   scripts/test_debian13.sh --inside   the suite itself (what runs in the root)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--inside" ]; then
  # PyTorch 2.6 starts an OpenMP thread per core in every process (Debian 12's 1.13 one
  # here); with 2 to 4 ranks on 2 cores, those threads spin against each other and the
  # ranks' own, and a step of the autotune test took 27 ms instead of 0.4. One thread
  # per rank, as torchrun also sets for several ranks per machine.
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
  start=$SECONDS
  step() { echo "== debian13: $* ($((SECONDS - start)) s)"; }
  step "$(. /etc/os-release && echo "$PRETTY_NAME"), $(python3 -c 'import sys, torch, pybind11; print(f"Python {sys.version.split()[0]}, PyTorch {torch.__version__}, pybind11 {pybind11.__version__}")'), $(mpirun --version | head -1)"
  # The README's first command (its install builds the C++ tests too, in the same tree).
  step "scripts/run_example.sh: scripts/install.sh (with the C++ tests), then the digits example on 2 ranks by horderun"
  ccache --zero-stats >/dev/null 2>&1 || true
  HORDE_BUILD_TESTS=ON scripts/run_example.sh
  ccache --print-stats 2>/dev/null | awk '$1 ~ /cache_hit$/ {hits += $2} $1 == "cache_miss" {misses = $2}
    END {print "ccache: " hits + 0 " hits, " misses + 0 " misses"}' || true

  step "C++ tests (ctest)"
  ctest --test-dir build/python --output-on-failure --timeout 300
  # 1 rank (where the tests that start jobs of their own run) and 2; the 4-rank pass,
  # the same code on more ranks, runs on Debian 12 (scripts/test.sh).
  for np in 1 2; do
    step "Python tests on $np rank(s)"
    timeout 900 scripts/mpirun.sh -np "$np" \
      .venv/bin/python -m pytest tests/python -q -p no:cacheprovider --color=no
  done
  for np in 2 4; do
    step "Horovod compatibility (tests/compat) on $np ranks"
    timeout 600 scripts/mpirun.sh -np "$np" \
      .venv/bin/python -m pytest tests/compat -q -p no:cacheprovider --color=no
  done
  step "chaos: training through delayed, raising and restarting ranks on 4 ranks"
  HORDE_STALL_CHECK_TIME_SECONDS=2 HORDE_STALL_SHUTDOWN_TIME_SECONDS=1 HORDE_LOG_LEVEL=error \
    timeout 300 scripts/mpirun.sh -np 4 -x HORDE_STALL_CHECK_TIME_SECONDS \
    -x HORDE_STALL_SHUTDOWN_TIME_SECONDS -x HORDE_LOG_LEVEL .venv/bin/python tests/chaos/chaos_training.py
  step "examples on 2 ranks"
  tests/examples/run_examples.sh
  step "C++ example: built against the installed package (find_package), on 2 ranks"
  rm -rf build/example_cpp
  cmake -S examples/cpp -B build/example_cpp -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$(.venv/bin/python -c 'import horde; print(horde.cmake_prefix_path)')" >/dev/null
  cmake --build build/example_cpp -j2 >/dev/null
  timeout 300 scripts/mpirun.sh -np 2 build/example_cpp/train_digits
  step "launcher: horderun with Open MPI 5"
  .venv/bin/horderun --check-build
  .venv/bin/horderun --dry-run -np 3 --tag-output .venv/bin/python train.py | tail -1
  timeout 900 .venv/bin/python -m pytest tests/launcher -q -p no:cacheprovider --color=no
  step "elastic: horderun generations with real SIGKILLs, host updates and failure modes; in-place recovery (ULFM)"
  # This Open MPI has the fault-tolerance extension: the in-place tests must run here.
  HORDE_EXPECT_IN_PLACE=1 timeout 900 .venv/bin/python -m pytest tests/elastic -q -p no:cacheprovider --color=no
  step "elastic across two hosts (network namespaces, ssh): a rank and a whole host lost, in place"
  # The lane runs as root in a mount namespace of its own: the test hosts must come up.
  HORDE_NETNS_REQUIRED=1 timeout 300 tests/launcher/elastic_in_place_netns_test.sh
  step "passed"
  exit 0
fi

# shellcheck source=scripts/lane_root.sh
. scripts/lane_root.sh
lane_setup debian13
start=$SECONDS
mapfile -t packages < <(scripts/install.sh --print-packages trixie)
lane_root_ensure trixie "${packages[@]}"
lane_sync_checkout
if [ "${1:-}" = "--prepare" ]; then
  lane_run "HORDE_BUILD_TESTS=ON scripts/install.sh"
  lane_log "Debian 13 lane prepared in $((SECONDS - start)) s"
  exit 0
fi
lane_run "scripts/test_debian13.sh --inside"
lane_log "Debian 13 lane passed in $((SECONDS - start)) s"
