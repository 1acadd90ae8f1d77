"""Helpers for tests that start their own small MPI job (through conftest's run_python):
scenarios that, while a bug is present, fail on some ranks only or hang, and so cannot run
inside the suite's own job without stopping it.

CHILD_PRELUDE starts horde in the child and defines ``say(line)`` (one write per line, so
ranks do not interleave) and ``within(seconds, fn)``, which runs ``fn`` and, if it has not
returned in time (a rank waiting forever for a collective), says so and exits at once, so
the job ends with a non-zero exit code instead of hanging until the test's time limit.
"""

import json
import os
from pathlib import Path

CHILD_PRELUDE = '''
import os
import threading

import torch
import torch.nn.functional as F
from torch import nn

import horde.torch as hvd

hvd.init()
rank = hvd.rank()


def say(line):
    os.write(1, f"rank {rank}: {line}\\n".encode())


def within(seconds, fn):
    done, result = threading.Event(), {}

    def run():
        try:
            result["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - reported by the caller
            result["error"] = e
        done.set()

    threading.Thread(target=run, daemon=True).start()
    if not done.wait(seconds):
        say(f"hung: no result after {seconds} s")
        os._exit(3)
    if "error" in result:
        raise result["error"]
    return result.get("value")
'''


MPIRUN_SH = str(Path(__file__).resolve().parents[2] / "scripts" / "mpirun.sh")

# What an MPI job puts in the environment of its ranks: Open MPI 4 (OMPI_, PMIX_), Open
# MPI 5 (PRTE_ too) and MPICH's Hydra (PMI_, HYDRA_, MPI_LOCALNRANKS/MPI_LOCALRANKID). A
# child that saw them would try to join the outer job. Horde's settings go too.
OUTER_JOB_PREFIXES = ("OMPI_", "PMIX_", "PRTE_", "PMI_", "HYDRA_", "MPI_LOCALNRANKS",
                      "MPI_LOCALRANKID", "HORDE_", "HOROVOD_")


def child_environment(**extra):
    """This process's environment without the outer MPI job's variables or horde's
    settings, root allowed for Open MPI (CI runs as root), plus ``extra``."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(OUTER_JOB_PREFIXES) or key.startswith("OMPI_ALLOW_RUN_AS_ROOT")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **extra)
    return env


def mpirun(ranks):
    """The launcher argument for run_python: an MPI job of ``ranks`` processes, through
    scripts/mpirun.sh (root allowed, oversubscribed, in the words of the MPI on PATH)."""
    return [MPIRUN_SH, "-np", str(ranks)]


def results_by_rank(out):
    """{"rank N": value} from the lines a child job's ranks say as "result: <json>"."""
    results = {}
    for line in out.splitlines():
        if ": result: " in line:
            rank, _, payload = line.partition(": result: ")
            results[rank] = json.loads(payload)
    return results
