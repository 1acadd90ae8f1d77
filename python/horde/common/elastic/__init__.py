"""The framework-independent side of elastic training under ``horderun
--host-discovery-script``: where commits are kept (:mod:`commit_store`) and how a rank
learns that the hosts changed (:mod:`host_updates`). See the README, "Elastic training".
"""

import os

# The exit code with which every rank leaves a generation that must re-form; horderun
# starts the next generation without blaming a host (launcher/elastic_generation.h).
RESET_EXIT_CODE = 75


def job_directory():
    """The per-job directory horderun gives an elastic job's ranks, or None outside one."""
    return os.environ.get("HORDE_ELASTIC_DIR") or None


def generation():
    """How many times the job has been re-formed before this generation (0 at first)."""
    return int(os.environ.get("HORDE_ELASTIC_GENERATION", "0"))
