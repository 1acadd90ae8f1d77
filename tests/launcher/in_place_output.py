"""Checks the stdout of a finished elastic_train.py job that recovered in place, and
measures the recovery (tests/launcher/elastic_in_place_netns_test.sh):

    python in_place_output.py OUT KILLED_AT EPOCHS COMMIT_EVERY FIRST_SIZE LAST_SIZE

OUT holds horderun's stdout with each line stamped as it arrived, `SECONDS<TAB>LINE`
(SECONDS: the Unix time, as bash's EPOCHREALTIME); KILLED_AT is the same clock just before
the SIGKILL. The job must have stayed one generation (gen=0) whose ranks, FIRST_SIZE at
the start, re-formed in place down to LAST_SIZE (through any sizes between, as when the
ranks of a lost host are noticed one after the other): at every size each rank starts
once, from one commit, in a process that was a rank before the loss. Every rank of the
last size must end with the same weights, equal to tests/elastic/reference.py's replay of
those sizes and commits (float64, to 1e-9). Prints one line per size, then
`recovery S` (seconds from KILLED_AT to the first completed step of the survivors);
exits non-zero with the reason otherwise.
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "elastic"))
from reference import check_final_weights  # noqa: E402

START = re.compile(r"^start rank=(\d+) size=(\d+) gen=(\d+) commit=(\d+) .* pid=(\d+)$")
STEP = re.compile(r"^step rank=\d+ size=(\d+) gen=\d+ ")


def stamped_lines(path):
    lines = []
    for raw in open(path).read().splitlines():
        stamp, _, line = raw.partition("\t")
        try:
            lines.append((float(stamp), line))
        except ValueError:
            sys.exit(f"{path}: expected 'SECONDS<TAB>LINE', got {raw!r}")
    return lines


def main():
    path, killed_at, epochs, commit_every, first_size, last_size = sys.argv[1:]
    killed_at, first_size, last_size = float(killed_at), int(first_size), int(last_size)
    lines = stamped_lines(path)
    starts = {}  # size -> [(rank, commit, pid)]
    for _, line in lines:
        if m := START.match(line):
            rank, size, gen, commit, pid = map(int, m.groups())
            if gen != 0:
                sys.exit(f"a new generation started ({line!r}); expected one generation "
                         "recovering in place")
            starts.setdefault(size, []).append((rank, commit, pid))
    sizes = sorted(starts, reverse=True)
    if not sizes or sizes[0] != first_size or sizes[-1] != last_size:
        sys.exit(f"the ranks started with sizes {sizes}, expected {first_size} first and "
                 f"{last_size} last")
    first_pids = {pid for _, _, pid in starts[first_size]}
    plan = []
    for before, size in zip(sizes, sizes[1:] + [None]):
        entries = starts[before]
        if sorted(rank for rank, _, _ in entries) != list(range(before)):
            sys.exit(f"size {before}: expected ranks 0..{before - 1} to start once each, "
                     f"got {entries}")
        if size is None:
            plan.append((before, None))
            continue
        resumed = starts[size]
        if not {pid for _, _, pid in resumed} <= first_pids:
            sys.exit(f"size {size}: a survivor changed its process (pids {resumed}, first "
                     f"{sorted(first_pids)}); expected them to go on in place")
        commits = {commit for _, commit, _ in resumed}
        if len(commits) != 1:
            sys.exit(f"size {size}: the survivors resumed from different commits: {resumed}")
        plan.append((before, commits.pop()))
    error = check_final_weights([line for _, line in lines], last_size, plan, int(epochs),
                                int(commit_every))
    resumed_at = next((stamp for stamp, line in lines
                       if stamp >= killed_at and (m := STEP.match(line))
                       and int(m.group(1)) < first_size), None)
    if resumed_at is None:
        sys.exit("no step of the survivors after the kill")
    for size, commit in plan:
        then = f", then the survivors went on in their processes from commit {commit}" \
            if commit is not None else ""
        print(f"  {size} rank(s){then}")
    print(f"  final weights identical on {last_size} ranks, equal to the reference replay "
          f"(largest relative difference {error:.1e})")
    print(f"recovery {resumed_at - killed_at:.3f}")


if __name__ == "__main__":
    main()
