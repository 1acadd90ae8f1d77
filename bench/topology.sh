#!/usr/bin/env bash
# Allreduce over uneven links: for each topology (a link matrix of bench/topologies/),
# builds the hosts with scripts/link_testbed.sh and runs bench/topology_allreduce.py on
# them, one rank a host, through horderun over ssh, twice: HORDE_TOPOLOGY=off (horde as
# MPI_Allreduce plus its overhead) and HORDE_TOPOLOGY=auto (spanning trees over the
# measured links, where horde's plan predicts them faster). One table per topology:
#
#   | size | MPI_Allreduce ms | horde off ms | horde trees ms | trees vs MPI | bound ms |
#
# MPI_Allreduce is the better of the two jobs' figures (the setting does not touch it);
# "trees vs MPI" is horde trees / MPI_Allreduce (below 1: faster). "bound" is what
# `horde-topology plan MATRIX MIB...` (installed next to horderun) prints as its lower
# bound, in lines "bound_ms SIZE_BYTES MS" or "size_bytes SIZE_BYTES ... bound_ms MS ...";
# '-' where the tool is missing or names no such size.
#
# Usage: bench/topology.sh [--quick] [--results DIR] [--training] [TOPOLOGY...]
#   TOPOLOGY: a name in bench/topologies/ (islands4) or a matrix file; by default
#     homogeneous4 islands4 islands4_crossed slow_host4 homogeneous6 islands6 fragmented6
#   --quick: 1 and 16 MiB only, and the 4-host topologies only (about 3 minutes)
#   --results DIR: keep each job's JSON and output there (TOPOLOGY.off.json, .off.log,
#     TOPOLOGY.auto.json, .auto.log)
#   --training: instead, training steps (bench/training.py --topology --quick: resnet18
#     on 32x32 synthetic images, batch 4 per rank, so that on 2 cores shared by all the
#     hosts the gradients' 45 MB are a visible part of a step) on each topology (default
#     islands4): plain, horde with HORDE_TOPOLOGY=off, horde with trees (auto) and DDP
#     over gloo (about 3 minutes per topology)
# The full run takes about 16 minutes on 2 cores (slow_host4 alone 5.5): sizes 1, 4, 16
# and 64 MiB, best of 3.
# Timings, not tests: run it on an otherwise idle machine (it prints how busy the cores
# were). Needs root (the test bed skips without it), .venv (scripts/install.sh) and
# CMake to build bench/native's libraries into build/bench.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
python=$ROOT/.venv/bin/python
horderun=$ROOT/.venv/bin/horderun
planner=$ROOT/.venv/bin/horde-topology

usage() {
  echo "usage: bench/topology.sh [--quick] [--results DIR] [TOPOLOGY...]" >&2
  exit 2
}
quick=0
training=0
keep=""
topologies=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --results) [ $# -ge 2 ] || usage; keep=$2; shift ;;
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
fi
sizes=1,4,16,64
[ "$quick" -eq 0 ] || sizes=1,16
if [[ ! -x $horderun ]]; then
  echo "bench/topology.sh: no .venv here; run scripts/install.sh first" >&2
  exit 2
fi
matrices=()
for topology in "${topologies[@]}"; do
  matrix=$topology
  [ -f "$matrix" ] || matrix=bench/topologies/$topology.txt
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
# What runs on host0 of each bed: the two jobs, each within 900 s, their output kept in
# a log that is printed if they fail.
cat >"$results/jobs.sh" <<'SH'
set -uo pipefail
read -ra ssh_args <<<"$TESTBED_SSH"
IFS=, read -ra hosts <<<"$TESTBED_HOSTS"
code=0
for setting in off auto; do
  if ! HORDE_TOPOLOGY=$setting timeout 900 "$BENCH_HORDERUN" -np "${#hosts[@]}" \
      -H "$TESTBED_SLOTS" "${ssh_args[@]}" --network-interface "$TESTBED_IFACE" \
      "$BENCH_PYTHON" bench/topology_allreduce.py --sizes-mib "$BENCH_SIZES" \
      --json "$BENCH_OUT.$setting.json" >"$BENCH_OUT.$setting.log" 2>&1; then
    echo "the job with HORDE_TOPOLOGY=$setting failed or ran past 900 s:"
    cat "$BENCH_OUT.$setting.log"
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
      scripts/link_testbed.sh -q "${matrices[$index]}" -- bash "$results/training.sh" ||
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
      BENCH_OUT=$results/$name scripts/link_testbed.sh "$matrix" -- bash "$results/jobs.sh"; then
    failed+=("$name")
  fi
  plan=$results/$name.plan
  if [ -x "$planner" ]; then "$planner" plan "$matrix" ${sizes//,/ } >"$plan" 2>&1 || true; fi
  "$python" - "$results/$name" "$plan" <<'PY'
import json
import os
import sys

out, plan = sys.argv[1:3]
runs = {}
for setting in ("off", "auto"):
    if os.path.exists(f"{out}.{setting}.json"):
        with open(f"{out}.{setting}.json") as f:
            runs[setting] = {row["bytes"]: row for row in json.load(f)["rows"]}
bounds = {}
if os.path.exists(plan):
    with open(plan) as f:
        for line in f:
            # "bound_ms SIZE_BYTES MS", or "size_bytes B ... bound_ms MS ..."
            words = line.split()
            if len(words) == 3 and words[0] == "bound_ms":
                bounds[int(words[1])] = float(words[2])
            elif "size_bytes" in words[:-1] and "bound_ms" in words[:-1]:
                bounds[int(words[words.index("size_bytes") + 1])] = float(
                    words[words.index("bound_ms") + 1])
if not runs:
    print("no results")
    sys.exit()


def ms(value):
    return "-" if value is None else f"{value:.1f}"


print("| size | MPI_Allreduce ms | horde off ms | horde trees ms | trees vs MPI | bound ms |")
print("| ---: | ---: | ---: | ---: | ---: | ---: |")
for size in sorted({b for rows in runs.values() for b in rows}):
    rows = [run[size] for run in runs.values() if size in run]
    mpi = min(row["mpi_ms"] for row in rows)
    off = runs.get("off", {}).get(size, {}).get("horde_ms")
    trees = runs.get("auto", {}).get(size, {}).get("horde_ms")
    ratio = "-" if trees is None else f"{trees / mpi:.2f}"
    print(f"| {size / (1 << 20):g} MiB | {ms(mpi)} | {ms(off)} | {ms(trees)} | {ratio} "
          f"| {ms(bounds.get(size))} |")
PY
  [ -z "$keep" ] || { mkdir -p "$keep"; cp "$results/$name".*.json "$results/$name".*.log "$keep"/ 2>/dev/null || true; }
  echo "($name: $((SECONDS - start)) s)"
done
echo
echo "bench/topology.sh: $(busy_cores) cores busy at the end"
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench/topology.sh: failed: ${failed[*]}" >&2
  exit 1
fi
