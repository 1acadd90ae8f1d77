"""Checks the stdout of a finished elastic_train.py job against the reference rule:

    python check_output.py OUT EPOCHS COMMIT_EVERY SIZE SIZE...

SIZE... are the rank counts the generations must have had, in order (3 1 3). Every
generation's ranks must report the same resumed commit, and every rank of the last one
the same final weights, equal to reference.replay() of those generations. Prints one
line per generation; exits non-zero with the reason otherwise. For jobs that tests
outside pytest run (tests/launcher/elastic_netns_test.sh).
"""

import re
import sys

from reference import check_final_weights

START = re.compile(r"^start rank=(\d+) size=(\d+) gen=(\d+) commit=(\d+) ")


def generations(lines):
    """{gen: (size, resumed commit)}, checking that each has all its ranks, which agree."""
    starts = {}
    for match in filter(None, map(START.match, lines)):
        rank, size, gen, commit = map(int, match.groups())
        starts.setdefault(gen, []).append((rank, size, commit))
    found = {}
    for gen, entries in sorted(starts.items()):
        sizes = {size for _, size, _ in entries}
        commits = {commit for _, _, commit in entries}
        ranks = sorted(rank for rank, _, _ in entries)
        size = min(sizes)
        if len(sizes) != 1 or ranks != list(range(size)) or len(commits) != 1:
            sys.exit(f"generation {gen}: expected every rank once with one size and one "
                     f"resumed commit, got {entries}")
        found[gen] = (size, commits.pop())
    return found


def main():
    path, epochs, commit_every, *sizes = sys.argv[1:]
    lines = open(path).read().splitlines()
    gens = generations(lines)
    got = [gens[gen][0] for gen in sorted(gens)]
    if got != [int(size) for size in sizes]:
        sys.exit(f"generation sizes {got}, expected {sizes}")
    order = sorted(gens)
    plan = [(gens[gen][0], gens[nxt][1]) for gen, nxt in zip(order, order[1:])]
    plan.append((gens[order[-1]][0], None))
    error = check_final_weights(lines, got[-1], plan, int(epochs), int(commit_every))
    for gen in order:
        print(f"  generation {gen}: {gens[gen][0]} rank(s), resumed from commit {gens[gen][1]}")
    print(f"  final weights identical on {got[-1]} ranks, equal to the reference replay "
          f"(largest relative difference {error:.1e})")


if __name__ == "__main__":
    main()
