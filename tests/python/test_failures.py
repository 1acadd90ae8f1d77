"""A rank that fails takes the job down loudly: its error text reaches every other rank's
pending and later operations ("rank 1 failed: RuntimeError: boom"), and the job ends
within seconds with a non-zero exit code; a rank killed with SIGKILL mid-allreduce ends
the job too, naming the rank. Each test starts its own 2-rank job (1-rank pass only)."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

import horde.torch as hvd
from _child_job import child_environment

ROOT = Path(__file__).resolve().parents[2]
HORDERUN = ROOT / ".venv" / "bin" / "horderun"

pytestmark = pytest.mark.skipif(hvd.size() != 1,
                                reason="starts its own job: only in the 1-rank run")

PRELUDE = """
import os, sys, time
import torch
import horde.torch as hvd
hvd.init()
rank = hvd.rank()
def say(line):
    os.write(1, f"rank {rank}: {line}\\n".encode())
"""


def run_job(code, timeout=60):
    env = child_environment()
    start = time.monotonic()
    done = subprocess.run([str(ROOT / "scripts" / "mpirun.sh"), "-np", "2", sys.executable,
                           "-c", PRELUDE + code], env=env, capture_output=True, text=True,
                          timeout=timeout)
    return done, time.monotonic() - start


def test_a_rank_that_raises_fails_the_others_with_its_error_and_the_job_ends(tmp_path):
    done, seconds = run_job("""
if rank == 1:
    hvd.allreduce(torch.ones(2), name="warmup")
    raise RuntimeError("boom")
hvd.allreduce(torch.ones(2), name="warmup")
pending = hvd.allreduce_async(torch.ones(2), name="never.on.rank1")
try:
    hvd.synchronize(pending)
    say("pending: no error")
except hvd.HordeInternalError as e:
    say(f"pending: {e}")
try:
    hvd.allreduce(torch.ones(2), name="later")
    say("later: no error")
except hvd.HordeInternalError as e:
    say(f"later: {e}")
time.sleep(30)  # the job must end before this
say("still running")
""")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "rank 0: pending: rank 1 failed: RuntimeError: boom" in out, out
    assert "rank 0: later: rank 1 failed: RuntimeError: boom" in out, out
    assert "RuntimeError: boom" in done.stderr  # rank 1's own traceback
    assert "still running" not in out
    assert seconds < 20, f"the job took {seconds:.1f} s to end\n{out}"


def test_a_rank_killed_mid_allreduce_ends_the_job_with_its_rank_named():
    done, seconds = run_job("""
big = torch.ones(4 << 20)
if rank == 1:
    hvd.allreduce(torch.ones(1), name="ready")
    os.kill(os.getpid(), 9)
hvd.allreduce(torch.ones(1), name="ready")
for step in range(1000):
    hvd.allreduce(big, name="big")
say("finished")
""")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "finished" not in out
    assert "rank 1" in out or "[[" in out, out  # mpirun names the process that died
    assert seconds < 30, f"the job took {seconds:.1f} s to end\n{out}"
