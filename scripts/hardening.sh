#!/usr/bin/env bash
# Hardening checks, each in its own torch-free build tree and under a time limit:
#   build/asan  the C++ test suite (core, MPI runtime on 2 and 4 ranks, launcher) under
#               AddressSanitizer + UndefinedBehaviorSanitizer, every report fatal
#               (LeakSanitizer's: single-process tests and jobs of 1 and 2 ranks)
#   build/tsan  the multi-rank MPI tests (2 and 4 ranks) under ThreadSanitizer
#   build/fuzz  the wire codec and launcher parsers fuzzers (clang + libFuzzer), each for
#               HORDE_FUZZ_SECONDS (20)
#   the soak test: 10,000 training steps on 2 ranks with the installed package
#               (${PYTHON:-.venv/bin/python}; scripts/install.sh first)
# Usage: scripts/hardening.sh [asan] [tsan] [fuzz] [soak]   (no argument: all four)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(asan tsan fuzz soak)
suppressions=$PWD/tests/sanitizers
fuzz_seconds=${HORDE_FUZZ_SECONDS:-20}

# quietly LOG COMMAND...: runs the command with its output in LOG, shown only if it fails.
quietly() {
  local log=$1; shift
  "$@" >"$log" 2>&1 || {
    local rc=$?
    tail -n 80 "$log"
    echo "FAILED ($rc): $*" >&2
    return "$rc"
  }
}

# build_tree DIR PART CMAKE_ARGS...: configures DIR and builds PART of it (a folder of
# the build tree, e.g. tests/mpi, with what it depends on; "." for everything). Unity
# builds (a few sources compiled as one) take these trees, which nobody edits, in 2/3 of
# the time; the price is that two sources of one target may not define one name twice,
# even in anonymous namespaces.
build_tree() {
  local dir=$1 part=$2; shift 2
  mkdir -p "$dir"
  quietly "$dir/configure.log" timeout 300 \
    cmake -S . -B "$dir" -DHORDE_BUILD_TORCH=OFF -DHORDE_WITH_CUDA=OFF -DCMAKE_UNITY_BUILD=ON "$@"
  quietly "$dir/build.log" timeout 1200 cmake --build "$dir/$part" -j2
}

# sanitized_ctest DIR LOG_NAME CTEST_ARGS...: ctest's output in DIR/LOG_NAME, shown if a
# test fails; its summary line either way.
sanitized_ctest() {
  local dir=$1 log=$1/$2; shift 2
  quietly "$log" timeout 900 ctest --test-dir "$dir" -j2 --output-on-failure "$@"
  grep -E '^[0-9]+% tests passed' "$log"
}

# The multi-rank tests (tests/mpi) are the ctest cases named <suite>.npN.
multi_rank_tests='\.np[0-9]+$'

run_asan() {
  echo "== hardening: C++ tests under ASan + UBSan (build/asan)"
  build_tree build/asan . -DHORDE_SANITIZE=address,undefined
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  export LSAN_OPTIONS=suppressions=$suppressions/lsan_openmpi.supp
  ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
    sanitized_ctest build/asan ctest_single_process.log -E "$multi_rank_tests"
  # Open MPI's leaks are matched on frames deep in the stack (see the suppression file),
  # which only the slow unwinder reaches; it is too slow for the whole suite, and triples
  # the time of the 3- and 4-rank tests. Leaks are looked for on 1 and 2 ranks (the same
  # allocations as on more); on 3 and 4, every other check runs with the fast unwinder.
  ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:fast_unwind_on_malloc=0 \
    sanitized_ctest build/asan ctest_one_and_two_ranks.log -R '\.np[12]$'
  ASAN_OPTIONS=halt_on_error=1:detect_leaks=0 \
    sanitized_ctest build/asan ctest_more_ranks.log -R "$multi_rank_tests" -E '\.np[12]$'
}

run_tsan() {
  echo "== hardening: multi-rank MPI tests under TSan (build/tsan)"
  build_tree build/tsan tests/mpi -DHORDE_SANITIZE=thread
  local tsan_suppressions=$suppressions/tsan_openmpi.supp
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$tsan_suppressions \
    sanitized_ctest build/tsan ctest_multi_rank.log -R "$multi_rank_tests"
}

# fuzz_target NAME SEEDS: runs build/fuzz/tests/fuzz/NAME for fuzz_seconds from SEEDS.
fuzz_target() {
  local name=$1 seeds=$2 fuzz_dir=build/fuzz/tests/fuzz
  mkdir -p "$fuzz_dir/$name.corpus" "$fuzz_dir/crashes"
  # New inputs go to NAME.corpus/ (kept between runs); a crashing input to crashes/.
  quietly "$fuzz_dir/$name.log" timeout $((fuzz_seconds + 120)) "$fuzz_dir/$name" \
    -max_total_time="$fuzz_seconds" -artifact_prefix="$fuzz_dir/crashes/" -print_final_stats=1 \
    "$fuzz_dir/$name.corpus" "$seeds"
  echo "   $name:"
  grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$fuzz_dir/$name.log"
}

run_fuzz() {
  echo "== hardening: the wire codec's and horderun's parsers' fuzzers, ${fuzz_seconds}s each (build/fuzz)"
  build_tree build/fuzz tests/fuzz -DCMAKE_CXX_COMPILER=clang++ -DHORDE_BUILD_FUZZERS=ON
  fuzz_target horde_wire_codec_fuzz build/fuzz/tests/fuzz/wire_codec_seeds
  fuzz_target horde_launcher_parsers_fuzz tests/fuzz/launcher_seeds
}

run_soak() {
  echo "== hardening: soak test, 10,000 training steps on 2 ranks"
  timeout 600 scripts/mpirun.sh -np 2 "${PYTHON:-.venv/bin/python}" tests/soak/soak_training.py
}

for step in "${steps[@]}"; do
  case "$step" in
    asan|tsan|fuzz|soak) SECONDS=0; "run_$step"; echo "   ($step took ${SECONDS}s)" ;;
    *) echo "hardening.sh: unknown step '$step'; expected asan, tsan, fuzz or soak" >&2; exit 2 ;;
  esac
done
echo "== hardening: all checks passed"
