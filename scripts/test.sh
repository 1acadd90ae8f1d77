#!/usr/bin/env bash
# Installs horde (scripts/install.sh), then runs the whole test suite: the C++ unit
# tests (ctest) and the Python tests under mpirun with 1, 2 and 4 ranks. Every run has
# a time limit, so a hang fails the suite instead of stalling it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's heading carries the seconds since the suite started, so a slow CI run
# shows where its time went.
stage() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }
# Processes of the suite that outlived their stage (a rank, a launcher, busy-polling MPI)
# would take a core from every later stage: orphans started here, named, then ended.
end_leftovers() {
  local pid found=()
  for pid in $(ps -eo pid=,ppid= | awk '$2 == 1 {print $1}'); do
    if [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$PWD" ] &&
        grep -qE '^(python|mpirun|orterun|prterun|orted|prted|horderun|horde)' "/proc/$pid/comm" 2>/dev/null; then
      found+=("$pid")
    fi
  done
  [ ${#found[@]} -gt 0 ] || return 0
  echo "processes left behind by the stages above, ended now:"
  ps -o pid,etime,pcpu,args -p "$(IFS=,; echo "${found[*]}")" || true
  kill -KILL "${found[@]}" 2>/dev/null || true
}
# The install's CMake tree (build/python) also builds the C++ tests.
stage "install: packages, build, the package into .venv (scripts/install.sh)"
HORDE_BUILD_TESTS=ON scripts/install.sh

# The soak compares its step times early and late: nothing may run beside it, as nothing
# does yet.
stage "hardening: the soak test (scripts/hardening.sh soak)"
scripts/hardening.sh soak

# The test beds of network namespaces measure link rates (shaped to 1 Gbit/s and less)
# and time recoveries: they run first, with nothing beside them.
stage "launcher: a two-host job over ssh between two network namespaces"
timeout 300 tests/launcher/multihost_netns_test.sh

stage "topology: the link test bed (4 network-namespace hosts, per-pair link rates)"
timeout 300 tests/launcher/link_testbed_test.sh
stage "topology: allreduce and broadcast over spanning trees on measured, uneven links"
timeout 600 tests/launcher/topology_netns_test.sh
stage "topology: hosts behind switches (NICs, rack uplinks, two ranks a host)"
timeout 400 tests/launcher/fabric_netns_test.sh
stage "elastic: two hosts (network namespaces): one host's ranks killed, shrink, grow back"
timeout 600 tests/launcher/elastic_netns_test.sh

# The lanes of the other stacks (at the end) are prepared from here on: their Debian
# roots (debootstrap and apt) and their builds, under `timeout`, at idle priority
# (SCHED_IDLE, idle I/O class): they get only what the stages leave of the 2 cores,
# most of the job-starting tests' time. The Debian 13 lane first, then the MPICH lane,
# whose preparation goes on beside the Debian 13 lane (its tests leave CPU time too). A
# failure here only costs time: each lane tries again when its turn comes.
mkdir -p build/lanes
prepare() {  # prepare LANE SECONDS [AFTER_PID]: scripts/test_LANE.sh --prepare in the
  # background, once the process AFTER_PID (another preparation) has ended
  # shellcheck disable=SC2016  # expanded by the inner shell
  chrt --idle 0 ionice -c 3 timeout "$2" bash -c '
    while [ -n "$2" ] && kill -0 "$2" 2>/dev/null; do sleep 5; done
    exec "scripts/test_$1.sh" --prepare' prepare "$1" "${3:-}" \
    >"build/lanes/prepare_$1.log" 2>&1 &
}
prepare debian13 3600
debian13_prepared=$!
prepare mpich 5400 "$debian13_prepared"
mpich_prepared=$!
# A failed stage ends them too (timeout passes the signal on to its whole process group).
trap 'kill -TERM "$debian13_prepared" "$mpich_prepared" 2>/dev/null || true' EXIT
# wait_prepared LANE PID: the lane's preparation ended (its log's tail if it failed).
wait_prepared() {
  stage "the $1 lane's preparation (build/lanes/prepare_$1.log): waiting for its end"
  if ! wait "$2"; then
    tail -n 40 "build/lanes/prepare_$1.log"
    echo "preparing the $1 lane failed; the lane tries again"
  fi
  grep -E "^\[$1 " "build/lanes/prepare_$1.log" || true
}

stage "lint: clang-format, flake8, cppcheck (scripts/lint.sh)"
scripts/lint.sh

stage "C++ tests (ctest)"
ctest --test-dir build/python --output-on-failure --timeout 300

for np in 1 2 4; do
  stage "Python tests on $np rank(s)"
  timeout 900 scripts/mpirun.sh -np "$np" \
    .venv/bin/python -m pytest tests/python -q -p no:cacheprovider --color=no
done
for np in 2 4; do
  stage "Horovod compatibility (tests/compat, imported as horovod) on $np ranks"
  timeout 600 scripts/mpirun.sh -np "$np" \
    .venv/bin/python -m pytest tests/compat -q -p no:cacheprovider --color=no
done
# Every optimizer mode on 2 ranks; on 4, one of each path (plain allreduces, bucket views,
# Adasum's own reduction).
for np in 2 4; do
  modes=(plain groups bucket_view sparse adasum)
  [ "$np" -eq 2 ] || modes=(plain bucket_view adasum)
  for mode in "${modes[@]}"; do
    stage "chaos: training through delayed, raising, failing and restarting ranks on $np ranks ($mode)"
    # The stall reports the delays provoke are expected: only errors are logged.
    HORDE_STALL_CHECK_TIME_SECONDS=2 HORDE_STALL_SHUTDOWN_TIME_SECONDS=1 HORDE_LOG_LEVEL=error \
      timeout 300 scripts/mpirun.sh -np "$np" -x HORDE_STALL_CHECK_TIME_SECONDS \
      -x HORDE_STALL_SHUTDOWN_TIME_SECONDS -x HORDE_LOG_LEVEL .venv/bin/python \
      tests/chaos/chaos_training.py --optimizer "$mode"
  done
done
stage "examples on 2 ranks"
tests/examples/run_examples.sh

stage "C++ example: built against the installed package (find_package), on 2 ranks"
rm -rf build/example_cpp
cmake -S examples/cpp -B build/example_cpp -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$(.venv/bin/python -c 'import horde; print(horde.cmake_prefix_path)')" >/dev/null
cmake --build build/example_cpp -j2 >/dev/null
timeout 300 scripts/mpirun.sh -np 2 build/example_cpp/train_digits

stage "docs: the runnable blocks of README.md and docs/, their links and quoted error messages"
timeout 900 .venv/bin/python -m pytest tests/docs -q -p no:cacheprovider --color=no

stage "launcher: horderun on this machine"
timeout 900 .venv/bin/python -m pytest tests/launcher -q -p no:cacheprovider --color=no

stage "elastic: horderun generations with real SIGKILLs, host updates and failure modes"
timeout 600 .venv/bin/python -m pytest tests/elastic -q -p no:cacheprovider --color=no

end_leftovers
stage "hardening: sanitizers and fuzzers (scripts/hardening.sh)"
scripts/hardening.sh asan tsan fuzz

# The other stacks, each in a Debian root of its own under build/lanes/ (made on the
# first run, reused while its package list is unchanged; both need root and Debian's
# mirror). The Debian 12 suite above has run first, so a failure there shows first.
end_leftovers
wait_prepared debian13 "$debian13_prepared"
stage "Debian 13 lane: PyTorch 2.6, Open MPI 5, Python 3.13 (scripts/test_debian13.sh)"
timeout --foreground 2700 scripts/test_debian13.sh
wait_prepared mpich "$mpich_prepared"
trap - EXIT
stage "MPICH lane: MPICH 4.0 with PyTorch 1.13, jobs started by horderun (scripts/test_mpich.sh)"
timeout --foreground 1800 scripts/test_mpich.sh

stage "all test suites passed"
