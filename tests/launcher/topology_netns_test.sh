#!/usr/bin/env bash
# Topology-aware collectives on real links: 4 hosts of the link test bed
# (scripts/link_testbed.sh), one rank each, started by horderun over ssh with the default
# HORDE_TOPOLOGY=auto, so every job measures its links at init.
#   1. two islands, {host0,host1} and {host2,host3} at 2 Gbit/s, 0.25 Gbit/s between
#      (bench/topologies/islands4.txt): the plan chooses trees, the large allreduces and
#      broadcasts run on them (TREE_ALLREDUCE on the timeline), and every result is right
#      (tests/launcher/topology_job.py) and the same on every rank;
#   2. horderun --probe-topology writes the measured matrix, naming its hosts, and
#      HORDE_TOPOLOGY=FILE plans from it as auto did, with the hosts in reverse order;
#   3. a switch, every pair at 1 Gbit/s and each NIC at 1 Gbit/s in total
#      (bench/topologies/shared_nic4.txt): measured (auto), the results are right whatever
#      the plan; planned from the switch's own matrix (HORDE_TOPOLOGY=FILE), the large
#      allreduces run on horde's ring in rank order (trees only tie it there, and MPI's
#      default may be slower than its ring) and broadcast stays on MPI; with a stale copy of that matrix on one host (each
#      host's /dev/shm holds its own), init fails on every rank.
# Needs root (skips, saying why, where namespaces cannot be made) and .venv. About a
# minute; every job has a time limit.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
HORDERUN=${HORDERUN:-$ROOT/.venv/bin/horderun}
PYTHON=$ROOT/.venv/bin/python
JOB=$ROOT/tests/launcher/topology_job.py
export HORDERUN PYTHON JOB

fail() { echo "FAIL topology test: $*" >&2; exit 1; }
[ -x "$HORDERUN" ] || fail "no $HORDERUN: run scripts/install.sh first"
T=$(mktemp -d /tmp/horde-topology-test.XXXXXX)
trap 'rm -rf "$T"' EXIT

# On host0 of a bed: the job over the 4 hosts, its output in $TESTBED_DIR/job.out and
# rank 0's timeline in $TESTBED_DIR/timeline.json, both copied to OUT_DIR; then, with
# PROBE set, the probe and a job planned from its file.
ON_HOST0='
set -e
run() {
  timeout 240 "$HORDERUN" -np 4 -H "${SLOTS:-$TESTBED_SLOTS}" $TESTBED_SSH \
    --network-interface "$TESTBED_IFACE" "$@"
}
HORDE_LOG_LEVEL=info HORDE_TIMELINE=$TESTBED_DIR/timeline.json run "$PYTHON" "$JOB" \
  >"$OUT_DIR/job.out" 2>&1 || { cat "$OUT_DIR/job.out"; exit 1; }
cp "$TESTBED_DIR/timeline.json" "$OUT_DIR/"
links=${FILE_MATRIX:-}
if [ -n "${PROBE:-}" ]; then
  run --probe-topology "$OUT_DIR/links.txt" >"$OUT_DIR/probe.out" 2>&1 ||
    { cat "$OUT_DIR/probe.out"; exit 1; }
  links=$OUT_DIR/links.txt
fi
if [ -n "$links" ]; then
  # The hosts in reverse order: a matrix that names its hosts maps onto them by name.
  reversed=$(echo "$TESTBED_SLOTS" | tr , "\n" | tac | paste -sd,)
  SLOTS=$reversed HORDE_TOPOLOGY=$links HORDE_TIMELINE=$TESTBED_DIR/timeline-file.json \
    run "$PYTHON" "$JOB" >"$OUT_DIR/job-file.out" 2>&1 ||
    { cat "$OUT_DIR/job-file.out"; exit 1; }
  cp "$TESTBED_DIR/timeline-file.json" "$OUT_DIR/"
fi
if [ -n "${FILE_MATRIX:-}" ]; then
  # Each host its own copy (each host has a /dev/shm of its own), a stale one on host2:
  # init must fail on every rank.
  for host in ${TESTBED_HOSTS//,/ }; do cp "$links" "$TESTBED_DIR/../shm-$host/links.txt"; done
  sed -i "\$ s/1/0.5/" "$TESTBED_DIR/../shm-host2/links.txt"  # its last row
  if HORDE_TOPOLOGY=/dev/shm/links.txt run "$PYTHON" -c "import horde.torch as hvd; hvd.init()" \
      >"$OUT_DIR/stale.out" 2>&1; then
    cat "$OUT_DIR/stale.out"; echo "a stale copy of the matrix on host2 did not fail init"; exit 1
  fi
fi
'

# check_job OUT TIMELINE TREES(yes|ring|no|any): every rank's checks passed, one float
# digest, and the tree phases on the timeline (ring: allreduce on the ring in rank order) or
# not (tests/launcher/check_topology_job.py).
check_job() {
  local phases
  case $3 in
    yes) phases=TREE_ALLREDUCE=plan,TREE_BROADCAST,RING_ALLREDUCE? ;;
    ring) phases=RING_ALLREDUCE ;;
    no) phases="" ;;
    *) phases=any ;;
  esac
  "$PYTHON" tests/launcher/check_topology_job.py "$1" "$2" 4 "$phases"
}

bed() {  # bed MATRIX OUT_DIR probe|FILE: then the probe's matrix, or FILE's, planned from
  mkdir -p "$2"
  local probe='' file=''
  if [ "$3" = probe ]; then probe=1; else file=$ROOT/$3; fi
  timeout 600 scripts/link_testbed.sh -q "$1" -- \
    env OUT_DIR="$2" PROBE="$probe" FILE_MATRIX="$file" bash -c "$ON_HOST0"
}

echo "== two islands: the plan chooses trees"
out=$(bed bench/topologies/islands4.txt "$T/islands" probe 2>&1) ||
  { echo "$out"; fail "two islands"; }
if grep -q '^SKIP' <<<"$out"; then echo "$out"; exit 0; fi
grep -q "topology: measured the links between 4 hosts in" "$T/islands/job.out" ||
  { cat "$T/islands/job.out"; fail "no measurement in the log"; }
grep -E "topology|tree" "$T/islands/job.out" | sed 's/^/  /' | head -20
check_job "$T/islands/job.out" "$T/islands/timeline.json" yes || fail "two islands"
echo "== the probe's file, planned from: trees again"
sed 's/^/  /' "$T/islands/links.txt"
check_job "$T/islands/job-file.out" "$T/islands/timeline-file.json" yes || fail "FILE"

echo "== a switch: measured, right whatever the plan; planned from its matrix, the ring"
out=$(bed bench/topologies/shared_nic4.txt "$T/switch" bench/topologies/shared_nic4.txt 2>&1) ||
  { echo "$out"; fail "switch"; }
grep -E "topology|tree" "$T/switch/job.out" | sed 's/^/  /' | head -20
check_job "$T/switch/job.out" "$T/switch/timeline.json" any || fail "switch, measured"
check_job "$T/switch/job-file.out" "$T/switch/timeline-file.json" ring ||
  fail "switch, FILE"
echo "== a stale copy of the matrix on one host: init fails on every rank"
stale="the copies of the link matrix file '/dev/shm/links.txt' differ between hosts: rank 2 (on host2)"
count=$(grep -c -F "$stale" "$T/switch/stale.out" || true)
[ "$count" -ge 4 ] || { cat "$T/switch/stale.out"; fail "expected '$stale' from 4 ranks, found $count"; }
grep -m1 -F "$stale" "$T/switch/stale.out" | sed 's/^/  /'
echo "topology test passed"
