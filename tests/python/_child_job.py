"""Helpers for tests that start their own small MPI job (through conftest's run_python):
scenarios that, while a bug is present, fail on some ranks only or hang, and so cannot run
inside the suite's own job without stopping it.

CHILD_PRELUDE starts horde in the child and defines ``say(line)`` (one write per line, so
ranks do not interleave) and ``within(seconds, fn)``, which runs ``fn`` and, if it has not
returned in time (a rank waiting forever for a collective), says so and exits at once, so
the job ends with a non-zero exit code instead of hanging until the test's time limit.
"""

import shutil

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


def mpirun(ranks):
    """The launcher argument for run_python: an MPI job of ``ranks`` processes."""
    return [shutil.which("mpirun"), "-np", str(ranks), "--oversubscribe"]
