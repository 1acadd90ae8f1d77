"""The host-update signal handler (horde.common.elastic.host_updates) under a burst of
SIGUSR1: a rank can get the signal twice (from mpirun and from horderun's rank wrapper),
and a handler that took a lock deadlocked when the second arrived inside the first."""

import os
import signal
import subprocess
import time

import pytest

from test_elastic_local import PYTHON

pytestmark = pytest.mark.timeout(60)

CHILD = """
import os, time
from horde.common.elastic import host_updates
host_updates.install()
os.write(1, b"ready\\n")
deadline = time.monotonic() + 3
while time.monotonic() < deadline:
    sum(range(100))
os.write(1, f"pending={host_updates.pending()}\\n".encode())
host_updates.clear()
os.write(1, f"cleared={host_updates.pending()}\\n".encode())
"""


def test_a_burst_of_host_update_signals_neither_blocks_nor_is_lost():
    child = subprocess.Popen([PYTHON, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "ready\n"
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        os.kill(child.pid, signal.SIGUSR1)
    try:
        out, _ = child.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        child.kill()
        pytest.fail("the rank stopped in its SIGUSR1 handler (a signal inside the handler)")
    assert child.returncode == 0
    assert out == "pending=True\ncleared=False\n"
