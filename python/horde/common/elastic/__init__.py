"""The framework-independent side of elastic training under ``horderun
--host-discovery-script``: where commits are kept (:mod:`commit_store`) and how a rank
learns that the hosts changed (:mod:`host_updates`). See docs/elastic.md.
"""

import os

# The exit code with which every rank leaves a generation that must re-form; horderun
# starts the next generation without blaming a host (launcher/elastic_generation.h).
RESET_EXIT_CODE = 75

# The exit code with which every rank leaves a generation in which no rank holds a commit
# although an earlier generation held one: starting over would silently lose the
# training done, so horderun stops the job.
NO_COMMIT_EXIT_CODE = 76


def job_directory():
    """The per-job directory horderun gives an elastic job's ranks, or None outside one."""
    return os.environ.get("HORDE_ELASTIC_DIR") or None


def job_id():
    """What tells this job's commits from any other's: the job directory's name."""
    directory = job_directory()
    return os.path.basename(os.path.normpath(directory)) if directory else ""


def generation():
    """How many times the job has been re-formed before this generation (0 at first)."""
    return int(os.environ.get("HORDE_ELASTIC_GENERATION", "0"))


def in_place_requested():
    """Whether horderun started this generation for in-place recovery (``--elastic-mode``
    in-place, or auto where the MPI has the fault-tolerance extension)."""
    return os.environ.get("HORDE_ELASTIC_IN_PLACE") == "1"


def min_np():
    """horderun's --min-np: fewer survivors than this leave for a restart (1 if unset)."""
    return int(os.environ.get("HORDE_ELASTIC_MIN_NP") or 1)


def expected_commit():
    """The newest commit an earlier generation held (horderun passes it on), or None when
    no generation has held one yet."""
    return os.environ.get("HORDE_ELASTIC_EXPECT_COMMIT") or None
