#!/usr/bin/env bash
# Allreduce over uneven links and real fabrics. For each topology, builds the hosts and
# runs bench/topology_allreduce.py on them through horderun over ssh, one job per
# contender, on the same bed:
#   - a link matrix of bench/topologies/ (direct wires between hosts, one rank a host):
#     scripts/link_testbed.sh;
#   - a fabric of bench/fabrics/ (hosts behind switches: NICs and rack uplinks shaped
#     both ways, one or several ranks a host): scripts/fabric_testbed.sh.
# The jobs: HORDE_TOPOLOGY=auto (horde's default: the probe, then trees where its plan
# predicts them faster), HORDE_TOPOLOGY=FILE with the bed's own matrix (the plan from
# the true links; with several ranks a host, the hosts'), HORDE_TOPOLOGY=off (horde on
# MPI_Allreduce), and, with Open MPI, one job for each of its tuned allreduce algorithms
# (recursive doubling, ring, segmented ring, Rabenseifner: --mca
# coll_tuned_allreduce_algorithm 3, 4, 5, 6), the algorithms a user can choose with one
# flag. Every job times raw MPI_Allreduce too: the default job's is "MPI default", the
# forced jobs' the algorithms. One table per topology:
#
#   | size | MPI default | best MPI (which) | horde off | horde auto | horde file
#   | auto vs best MPI | bound |
#
# all in ms; "auto vs best MPI" is horde auto / the best MPI figure (below 1: faster).
# "bound" is what `horde-topology plan MATRIX MIB...` (installed next to horderun) prints
# as its lower bound for the bed's matrix (with a fabric: its NICs and uplinks; ranks of
# one host reduce over memory, so the matrix is the hosts'); '-' where it is missing.
#
# Usage: bench/topology.sh [--quick] [--sizes MIB,...] [--repeat N] [--results DIR]
#                          [--training] [TOPOLOGY...]
#   TOPOLOGY: a name in bench/topologies/ or bench/fabrics/ (islands4, racks2x2), or a
#     file; by default the link matrices homogeneous4 islands4 islands4_crossed slow_host4
#     homogeneous6 islands6 fragmented6 and every fabric of bench/fabrics/
#   --quick: 16 MiB only, and the 4-host link matrices and the fabrics (17 minutes on
#     2 cores, 2026-11-28; the full run, four sizes and every topology, is longer)
#   --sizes: the sizes in MiB (default 1,4,16,64)
#   --repeat N: timed rounds per job, the best kept (default 3); more rounds narrow the
#     spread between runs (about 10% with 3 here) for little time at one size
#   --results DIR: keep each job's JSON and output there (TOPOLOGY.JOB.json, .log)
#   --training: instead, training steps (bench/training.py --topology --quick: resnet18
#     on 32x32 synthetic images, batch 4 per rank, so that on 2 cores shared by all the
#     hosts the gradients' 45 MB are a visible part of a step) on each topology (default
#     islands4): plain, horde with HORDE_TOPOLOGY=off, horde with trees (auto) and DDP
#     over gloo (about 3 minutes per topology)
# Timings, not tests: run it on an otherwise idle machine (it prints how busy the cores
# were). Needs root (the test beds skip without it), .venv (scripts/install.sh) and
# CMake to build bench/native's libraries into build/bench.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
python=$ROOT/.venv/bin/python
horderun=$ROOT/.venv/bin/horderun
planner=$ROOT/.venv/bin/horde-topology

usage() {
  echo "usage: bench/topology.sh [--quick] [--sizes MIB,...] [--repeat N] [--results DIR]" \
    "[--training] [TOPOLOGY...]" >&2
  exit 2
}
quick=0
sizes=""
repeat=3
training=0
keep=""
topologies=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --results) [ $# -ge 2 ] || usage; keep=$2; shift ;;
    --sizes) [ $# -ge 2 ] || usage; sizes=$2; shift ;;
    --repeat) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; repeat=$2; shift ;;
    --training) training=1 ;;
    -*) usage ;;
    *) topologies+=("$1") ;;
  esac
  shift
done
if [ ${#topologies[@]} -eq 0 ] && [ "$training" -eq 1 ]; then
  topologies=(islands4)
elif [ ${#topologies[@]} -eq 0 ]; then
  topologies=(homogeneous4 islands4 islands4_crossed slow_host4)
  [ "$quick" -eq 1 ] || topologies+=(homogeneous6 islands6 fragmented6)
  for fabric in bench/fabrics/*.txt; do topologies+=("$(basename "$fabric" .txt)"); done
fi
if [ -z "$sizes" ]; then
  sizes=1,4,16,64
  [ "$quick" -eq 0 ] || sizes=16
fi
if [[ ! -x $horderun ]]; then
  echo "bench/topology.sh: no .venv here; run scripts/install.sh first" >&2
  exit 2
fi
matrices=()
for topology in "${topologies[@]}"; do
  matrix=$topology
  [ -f "$matrix" ] || matrix=bench/topologies/$topology.txt
  [ -f "$matrix" ] || matrix=bench/fabrics/$topology.txt
  [ -f "$matrix" ] || { echo "bench/topology.sh: no topology '$topology'" >&2; exit 2; }
  matrices+=("$matrix")
done

# The native libraries the harness loads (raw MPI; horde's C++ API), against the
# installed horde package, as bench/run.sh builds them.
cmake -S bench -B build/bench -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$($python -c 'import horde; print(horde.cmake_prefix_path)')" >/dev/null
cmake --build build/bench --target mpi_bench horde_cpp_bench -j2 >/dev/null

# Cores that other processes kept busy over one second (from /proc/stat), as bench/run.sh
# reports it: the hosts share this machine's cores, so other work slows every link.
busy_cores() {
  { head -1 /proc/stat; sleep 1; head -1 /proc/stat; } | awk -v cores="$(nproc)" '
    { idle = $5 + $6; total = 0; for (i = 2; i <= NF; i++) total += $i }
    NR == 1 { idle0 = idle; total0 = total }
    NR == 2 { printf "%.2f", cores * (1 - (idle - idle0) / (total - total0)) }'
}
echo "bench/topology.sh: $(nproc) cores, $(busy_cores) busy before the start"

results=$(mktemp -d /tmp/horde-topology-bench.XXXXXX)
trap 'rm -rf "$results"' EXIT
# The bed that a topology file is for: a fabric names its NICs, a link matrix has rows.
bed_of() {  # bed_of FILE
  if grep -qE '^[[:space:]]*racks[[:space:]]' "$1" && ! grep -qE '^[[:space:]]*[-0-9.]' "$1"; then
    echo scripts/fabric_testbed.sh
  else
    echo scripts/link_testbed.sh
  fi
}
# Open MPI's tuned allreduce algorithms that a user can force, by number.
declare -A ALGORITHMS=([3]="recursive doubling" [4]=ring [5]="segmented ring" [6]=Rabenseifner)
algorithms=""
if command -v ompi_info >/dev/null; then algorithms="${!ALGORITHMS[*]}"; fi

# What runs on the first host of each bed: the jobs, each within 600 s, their output kept
# in a log that is printed if they fail. A job is "auto", "off", "file" or "mpiK".
cat >"$results/jobs.sh" <<'SH'
set -uo pipefail
read -ra ssh_args <<<"$TESTBED_SSH"
IFS=, read -ra hosts <<<"$TESTBED_HOSTS"
ranks=0
for slot in ${TESTBED_SLOTS//,/ }; do ranks=$((ranks + ${slot##*:})); done
cp "$TESTBED_MATRIX" "$BENCH_OUT.matrix"
jobs=(auto off file)
for k in $BENCH_ALGORITHMS; do jobs+=("mpi$k"); done
code=0
for job in "${jobs[@]}"; do
  setting=$job mpi_args=()
  case $job in
    file) setting=$TESTBED_MATRIX ;;
    mpi*) setting=off
          mpi_args=(--mpi-args "--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm ${job#mpi}") ;;
  esac
  if ! HORDE_TOPOLOGY=$setting timeout 600 "$BENCH_HORDERUN" -np "$ranks" \
      -H "$TESTBED_SLOTS" "${ssh_args[@]}" --network-interface "$TESTBED_IFACE" "${mpi_args[@]}" \
      "$BENCH_PYTHON" bench/topology_allreduce.py --sizes-mib "$BENCH_SIZES" \
      --repeat "$BENCH_REPEAT" --json "$BENCH_OUT.$job.json" >"$BENCH_OUT.$job.log" 2>&1; then
    echo "the $job job failed or ran past 600 s:"
    cat "$BENCH_OUT.$job.log"
    code=1
  fi
done
exit "$code"
SH

# Training instead: one job per topology, every contender in it (bench/training.py).
cat >"$results/training.sh" <<'SH'
set -uo pipefail
read -ra ssh_args <<<"$TESTBED_SSH"
IFS=, read -ra hosts <<<"$TESTBED_HOSTS"
mkdir -p "$TESTBED_DIR/rendezvous"
BENCH_BUILD_DIR=$PWD/build/bench BENCH_RENDEZVOUS_DIR=$TESTBED_DIR/rendezvous \
  BENCH_RESULTS_DIR=$TESTBED_DIR GLOO_SOCKET_IFNAME=$TESTBED_IFACE timeout 1200 \
  "$BENCH_HORDERUN" -np "${#hosts[@]}" -H "$TESTBED_SLOTS" "${ssh_args[@]}" \
  --network-interface "$TESTBED_IFACE" \
  --mpi-args "-x BENCH_BUILD_DIR -x BENCH_RENDEZVOUS_DIR -x BENCH_RESULTS_DIR -x GLOO_SOCKET_IFNAME" \
  "$BENCH_PYTHON" bench/training.py --topology --model resnet18 --image-size 32 \
  --batch-size 4 --quick
SH
if [ "$training" -eq 1 ]; then
  for index in "${!topologies[@]}"; do
    echo
    echo "== training on $(basename "${topologies[$index]}" .txt): ${matrices[$index]}"
    BENCH_HORDERUN=$horderun BENCH_PYTHON=$python \
      "$(bed_of "${matrices[$index]}")" -q "${matrices[$index]}" -- bash "$results/training.sh" ||
      { echo "bench/topology.sh: the training job failed" >&2; exit 1; }
  done
  exit 0
fi

failed=()
for index in "${!topologies[@]}"; do
  name=$(basename "${topologies[$index]}" .txt)
  matrix=${matrices[$index]}
  echo
  echo "== $name: $matrix"
  start=$SECONDS
  if ! BENCH_HORDERUN=$horderun BENCH_PYTHON=$python BENCH_SIZES=$sizes \
      BENCH_REPEAT=$repeat BENCH_ALGORITHMS=$algorithms BENCH_OUT=$results/$name \
      "$(bed_of "$matrix")" "$matrix" -- bash "$results/jobs.sh"; then
    failed+=("$name")
  fi
  plan=$results/$name.plan
  if [ -x "$planner" ] && [ -f "$results/$name.matrix" ]; then
    "$planner" plan "$results/$name.matrix" ${sizes//,/ } >"$plan" 2>&1 || true
  fi
  "$python" bench/topology_table.py "$results/$name" "$plan"
  [ -z "$keep" ] || { mkdir -p "$keep"; cp "$results/$name".* "$keep"/ 2>/dev/null || true; }
  echo "($name: $((SECONDS - start)) s)"
done
echo
echo "bench/topology.sh: $(busy_cores) cores busy at the end"
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench/topology.sh: failed: ${failed[*]}" >&2
  exit 1
fi
