"""Process sets across an in-place recovery (docs/elastic.md): 4 real ranks under
horderun register four sets, real SIGKILLs take ranks away, and after each recovery
every set must hold its live ranks renumbered, with collectives that add exactly its
members (tests/elastic/process_sets_train.py checks that on every rank), or fail with
ValueError saying that it lost all its ranks."""

import os
import time

import pytest

from test_elastic_in_place import needs_in_place
from test_elastic_local import PYTHON, HERE, Job, discovery_script

pytestmark = pytest.mark.timeout(180)

SCRIPT = os.path.join(HERE, "process_sets_train.py")


# How long a job may take (about 10 s when the machine is idle), so that one that
# hangs after a recovery fails well before the file's time limit; and how soon
# horderun must end once every survivor printed its final line: the job's end is its
# ranks' exit (the runtimes' shutdown, MPI_Finalize) and prterun's.
JOB_S = 90
END_S = 30


def run_job(tmp_path, final_size, *args):
    """Runs the job to the end: every one of the `final_size` ranks left prints its final
    line, then horderun must end within END_S with exit code 0."""
    script, _ = discovery_script(tmp_path, "localhost:4\n")
    job = Job(tmp_path, ["-np", "4", "--min-np", "2", "--elastic-mode", "in-place",
                         "--host-discovery-script", script], [PYTHON, SCRIPT, *args])
    job.deadline = time.monotonic() + JOB_S
    job.limit = f"within {JOB_S} s (a job takes about 10 s)"
    finished = set()
    while finished != set(range(final_size)):
        finished.add(int(job.wait_for(rf"^final rank=(\d+) size={final_size} steps=8$").group(1)))
    assert job.finish(within_s=END_S) == 0, job.err()
    return job


def sets_seen(job, size):
    """{rank: the sets line's NAME=RANKS fields} of the lines printed with `size` ranks."""
    lines = job.found(rf"^sets rank=(\d+) size={size} first=\d+ (.*)$")
    return {int(m.group(1)): m.group(2) for m in lines}


def check_sets(job, size, expected):
    seen = sets_seen(job, size)
    assert sorted(seen) == list(range(size)), (
        f"expected a sets line from each of {size} ranks, got {seen}:\n{job.err()}")
    for rank, fields in seen.items():
        assert fields == expected, f"rank {rank} with {size} ranks: {fields}, expected {expected}"


@needs_in_place
def test_process_sets_are_renumbered_over_the_survivors(tmp_path):
    # Rank 1 dies: first ranks 0, 2, 3 are ranks 0, 1, 2 now.
    job = run_job(tmp_path, 3, "--die", "1:3")
    check_sets(job, 4, "loses_one=0+1+2 keeps_all=2+3 one_left=1+3 none_left=1")
    check_sets(job, 3, "loses_one=0+1 keeps_all=1+2 one_left=2 none_left=lost")


@needs_in_place
def test_a_failed_reforming_is_retried_and_keeps_the_process_sets(tmp_path):
    # The first re-forming fails on every rank; the next one starts from the same sets.
    job = run_job(tmp_path, 3, "--die", "1:3", "--bad-setting-once")
    check_sets(job, 3, "loses_one=0+1 keeps_all=1+2 one_left=2 none_left=lost")
    err = job.err()
    assert "horde stays stopped on this rank until a later re-forming succeeds" in err or \
        "re-forming the job from its live ranks, attempt 4 of 4" in err, err


@needs_in_place
def test_a_rank_lost_during_the_recovery_with_process_sets(tmp_path):
    # Rank 1 dies at step 3; rank 3 as the survivors sync after re-forming: 4 -> 2 ranks
    # (first ranks 0 and 2), the sets renumbered twice.
    job = run_job(tmp_path, 2, "--die", "1:3", "--die-at-recovery", "3")
    check_sets(job, 2, "loses_one=0+1 keeps_all=1 one_left=lost none_left=lost")
