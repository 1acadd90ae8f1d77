"""Checks a job of tests/launcher/topology_job.py from its output and rank 0's timeline.

  python check_topology_job.py OUT TIMELINE RANKS PHASES

Every one of RANKS ranks reported, every check passed, every rank got the same float
bytes, and the timeline's topology phases (TREE_ALLREDUCE, RING_ALLREDUCE, TREE_BROADCAST,
LOCAL_REDUCESCATTER, LOCAL_ALLGATHER) are exactly PHASES (comma-separated, '' for none; a
phase ending in '?' may be there or not; TREE_ALLREDUCE ending in '=plan' must be there
when rank 0's logged plan takes the trees for the job's 4 MiB float32 allreduces and kept
them in its race, and may be there otherwise), or anything with PHASES 'any'. A measured
plan follows what the probe saw, and on a busy machine it can see a higher latency and
move the trees' threshold above the job's sizes; the plan's own unit tests pin its
choices for given links. Prints one line on success; fails with the reason.
"""

import json
import re
import sys

JOB_ALLREDUCE_BYTES = 4 << 20
UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
TOPOLOGY_PHASES = {"TREE_ALLREDUCE", "RING_ALLREDUCE", "TREE_BROADCAST", "LOCAL_REDUCESCATTER",
                   "LOCAL_ALLGATHER"}


def plan_takes_trees(out_text):
    """Whether the logged plan runs the job's float32 allreduces on trees."""
    found = re.search(r"trees win allreduce \(float32\) from (\d+) (KiB|MiB|GiB)", out_text)
    if not found or "allreduce takes the ring instead" in out_text:
        return False
    return int(found.group(1)) * UNITS[found.group(2)] <= JOB_ALLREDUCE_BYTES


def resolve(wanted, out_text):
    """PHASES with each '=plan' entry made required or optional by the logged plan."""
    resolved = []
    for phase in wanted:
        if phase.endswith("=plan"):
            phase = phase[:-len("=plan")] + ("" if plan_takes_trees(out_text) else "?")
        resolved.append(phase)
    return resolved


def main():
    out, timeline, ranks, expected = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    results = {}
    for line in open(out):
        if ": result: " in line:
            rank, _, payload = line.strip().partition(": result: ")
            results[rank.split()[-1]] = json.loads(payload)
    assert len(results) == ranks, f"{len(results)} ranks reported:\n" + open(out).read()
    for rank, got in sorted(results.items()):
        failed = [k for k, v in got.items() if v is False]
        assert not failed, f"rank {rank} failed {failed}"
    assert len({got["floats digest"] for got in results.values()}) == 1, "float results differ"
    text = open(timeline).read().rstrip().rstrip(",")
    names = {e.get("name") for e in json.loads(text if text.endswith("]") else text + "]")
             if isinstance(e, dict) and e.get("name")}
    phases = sorted(names & TOPOLOGY_PHASES)
    if expected != "any":
        wanted = resolve([p for p in expected.split(",") if p], open(out).read())
        needed = sorted(p for p in wanted if not p.endswith("?"))
        allowed = {p.rstrip("?") for p in wanted}
        assert set(needed) <= set(phases) and set(phases) <= allowed, (
            f"expected phases {wanted}, the timeline has {sorted(names)}")
    listed = ", ".join(phases) or "none"
    print(f"  {ranks} ranks right, one float result; topology phases: {listed}")


if __name__ == "__main__":
    main()
