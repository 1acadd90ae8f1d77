#!/usr/bin/env bash
# horde's benchmark suite: builds the native helpers (raw MPI, horde's C++ API) into
# build/bench, runs each part under mpirun with a time limit, and prints the tables.
# Usage: bench/run.sh [--quick | --training | --scaling]
#   --quick: fewer sizes and repetitions, 2 ranks only
#   --training: only the training part (resnet18, resnet50, the transformer encoder)
#   --scaling: only how negotiation cost grows with ranks (2 to 1,024 simulated ranks in
#     one process; CPU clocks and bytes, so it holds on a busy machine too)
# Timings, not tests: run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=""
scaling=""
training_only=""
case "${1:-}" in
  "") ;;
  --quick) quick=--quick ;;
  --training) training_only=1 ;;
  --scaling) scaling=1 ;;
  *) echo "usage: bench/run.sh [--quick | --training | --scaling]" >&2; exit 2 ;;
esac
python=.venv/bin/python
if [[ ! -x $python ]]; then
  echo "bench/run.sh: no .venv here; run scripts/install.sh first" >&2
  exit 2
fi

# The scaling bench needs core's internal headers and the tests' fake transport, so it is
# built in install.sh's tree, configured with the tests.
if [[ -n $scaling ]]; then
  if ! grep -q '^HORDE_BUILD_TESTS:BOOL=ON' build/python/CMakeCache.txt 2>/dev/null; then
    echo "bench/run.sh --scaling: build/python has no tests configured;" \
      "run HORDE_BUILD_TESTS=ON scripts/install.sh first" >&2
    exit 2
  fi
  cmake --build build/python --target negotiation_scaling -j2 >/dev/null
  tensors=$(mktemp)
  trap 'rm -f "$tensors"' EXIT
  # ResNet-50's gradients, named as DistributedOptimizer names them.
  $python -c 'import torchvision
for name, p in torchvision.models.resnet50().named_parameters():
    print("grad." + name, *p.shape)' >"$tensors"
  timeout 900 build/python/tests/cpp/negotiation_scaling "$tensors"
  exit
fi

cmake -S bench -B build/bench -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$($python -c 'import horde; print(horde.cmake_prefix_path)')" >/dev/null
cmake --build build/bench -j2 >/dev/null

# Cores that other processes kept busy over one second (from /proc/stat): timings taken
# beside other work are not comparable, so the report shows it.
busy_cores() {
  { head -1 /proc/stat; sleep 1; head -1 /proc/stat; } | awk -v cores="$(nproc)" '
    { idle = $5 + $6; total = 0; for (i = 2; i <= NF; i++) total += $i }
    NR == 1 { idle0 = idle; total0 = total }
    NR == 2 { printf "%.2f", cores * (1 - (idle - idle0) / (total - total0)) }'
}
BENCH_BUSY_BEFORE=$(busy_cores)
export BENCH_BUSY_BEFORE

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
mkdir "$results/rendezvous"
export BENCH_BUILD_DIR="$PWD/build/bench" BENCH_RESULTS_DIR="$results"
export BENCH_RENDEZVOUS_DIR="$results/rendezvous" PYTHONWARNINGS=ignore

# As horderun does: no binding, so each rank's threads (horde's, gloo's) may use any core.
# A part that fails or overruns its limit is reported and skipped: the others' tables
# still print, and run.sh then exits 1.
failed=()
part() {
  local ranks=$1 script=$2
  shift 2
  echo "== $script $* on $ranks ranks"
  if ! timeout 900 scripts/mpirun.sh -np "$ranks" --bind-to none $python "bench/$script" "$@" $quick; then
    echo "bench/run.sh: $script $* on $ranks ranks failed or ran past 900 s; its rows are missing" >&2
    failed+=("$script $* on $ranks ranks")
  fi
}
# resnet18 and resnet50 at 64x64, and a transformer encoder with many small tensors.
training() {
  part 2 training.py
  part 2 training.py --model transformer
  if [[ -z $quick ]]; then
    part 2 training.py --model resnet50
    # 4 ranks share 2 cores here: one step per timed batch keeps the part within 900 s
    # (three overran it).
    part 4 training.py --model transformer --steps 1
  fi
}
if [[ -n $training_only ]]; then
  training
else
  part 2 allreduce_sweep.py
  part 2 gradient_sets.py
  training
  part 2 idle_cost.py
  part 2 process_set_threads.py
  if [[ -z $quick ]]; then
    part 4 allreduce_sweep.py
    part 4 gradient_sets.py
  fi
fi
echo
BENCH_BUSY_AFTER=$(busy_cores) $python bench/report.py "$results"
if [[ ${#failed[@]} -gt 0 ]]; then
  printf 'bench/run.sh: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
