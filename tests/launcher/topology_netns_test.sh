#!/usr/bin/env bash
# Topology-aware collectives on real links: 4 hosts of the link test bed
# (scripts/link_testbed.sh), one rank each, started by horderun over ssh with the default
# HORDE_TOPOLOGY=auto, so every job measures its links at init.
#   1. two islands, {host0,host1} and {host2,host3} at 2 Gbit/s, 0.25 Gbit/s between
#      (bench/topologies/islands4.txt): the plan chooses trees, the large allreduces and
#      broadcasts run on them (TREE_ALLREDUCE on the timeline), and every result is right
#      (tests/launcher/topology_job.py) and the same on every rank;
#   2. a switch, every pair at 1 Gbit/s and each NIC at 1 Gbit/s in total
#      (bench/topologies/switch4.txt): the probe sees the shared NIC, the plan keeps MPI's
#      allreduce (no tree phase), the results are right;
#   3. horderun --probe-topology writes the measured matrix, and HORDE_TOPOLOGY=FILE
#      plans from it as auto did.
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
  timeout 240 "$HORDERUN" -np 4 -H "$TESTBED_SLOTS" $TESTBED_SSH \
    --network-interface "$TESTBED_IFACE" "$@"
}
HORDE_LOG_LEVEL=info HORDE_TIMELINE=$TESTBED_DIR/timeline.json run "$PYTHON" "$JOB" \
  >"$OUT_DIR/job.out" 2>&1 || { cat "$OUT_DIR/job.out"; exit 1; }
cp "$TESTBED_DIR/timeline.json" "$OUT_DIR/"
if [ -n "${PROBE:-}" ]; then
  run --probe-topology "$OUT_DIR/links.txt" >"$OUT_DIR/probe.out" 2>&1 ||
    { cat "$OUT_DIR/probe.out"; exit 1; }
  HORDE_TOPOLOGY=$OUT_DIR/links.txt HORDE_TIMELINE=$TESTBED_DIR/timeline-file.json \
    run "$PYTHON" "$JOB" >"$OUT_DIR/job-file.out" 2>&1 || { cat "$OUT_DIR/job-file.out"; exit 1; }
  cp "$TESTBED_DIR/timeline-file.json" "$OUT_DIR/"
fi
'

# check_job OUT TIMELINE TREES(yes|no): every rank's checks passed, one float digest,
# and the tree phase on the timeline or not.
check_job() {
  "$PYTHON" - "$1" "$2" "$3" <<'PY'
import json, sys
out, timeline, trees = sys.argv[1], sys.argv[2], sys.argv[3] == "yes"
results = {}
for line in open(out):
    if ": result: " in line:
        rank, _, payload = line.strip().partition(": result: ")
        results[rank.split()[-1]] = json.loads(payload)
assert len(results) == 4, f"{len(results)} ranks reported:\n" + open(out).read()
for rank, got in sorted(results.items()):
    failed = [k for k, v in got.items() if v is False]
    assert not failed, f"rank {rank} failed {failed}"
assert len({got["floats digest"] for got in results.values()}) == 1, "float results differ"
text = open(timeline).read().rstrip().rstrip(",")
names = {e.get("name") for e in json.loads(text if text.endswith("]") else text + "]")
         if isinstance(e, dict)}
assert ("TREE_ALLREDUCE" in names) == trees, f"trees={trees}, phases {sorted(names)}"
assert ("TREE_BROADCAST" in names) == trees, f"trees={trees}, phases {sorted(names)}"
print(f"  4 ranks right, one float result; tree phases: {'yes' if trees else 'no'}")
PY
}

bed() {  # bed MATRIX OUT_DIR [PROBE]
  mkdir -p "$2"
  timeout 600 scripts/link_testbed.sh -q "$1" -- \
    env OUT_DIR="$2" PROBE="${3:-}" bash -c "$ON_HOST0"
}

echo "== two islands: the plan chooses trees"
out=$(bed bench/topologies/islands4.txt "$T/islands" 1 2>&1) ||
  { echo "$out"; fail "two islands"; }
if grep -q '^SKIP' <<<"$out"; then echo "$out"; exit 0; fi
grep -q "topology: measured the links between 4 hosts in" "$T/islands/job.out" ||
  { cat "$T/islands/job.out"; fail "no measurement in the log"; }
grep -E "topology|tree" "$T/islands/job.out" | sed 's/^/  /' | head -20
check_job "$T/islands/job.out" "$T/islands/timeline.json" yes || fail "two islands"
echo "== the probe's file, planned from: trees again"
sed 's/^/  /' "$T/islands/links.txt"
check_job "$T/islands/job-file.out" "$T/islands/timeline-file.json" yes || fail "FILE"

echo "== a switch: the shared NIC is measured and MPI's allreduce kept"
out=$(bed bench/topologies/switch4.txt "$T/switch" 2>&1) || { echo "$out"; fail "switch"; }
grep -E "topology|tree" "$T/switch/job.out" | sed 's/^/  /' | head -20
check_job "$T/switch/job.out" "$T/switch/timeline.json" no || fail "switch"
echo "topology test passed"
