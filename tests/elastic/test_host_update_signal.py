"""The host-update signal handler (horde.common.elastic.host_updates) under a burst of
SIGUSR1: a rank can get the signal twice (from mpirun and from horderun's rank wrapper),
and a handler that took a lock deadlocked when the second arrived inside the first; and
as a finished rank exits, when Python has given the signal its default action back."""

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


EXITING_CHILD = """
import os
from horde.common.elastic import host_updates
host_updates.install()
os.write(1, b"ready\\n")
garbage = [str(i) for i in range(300000)]  # freed at exit: a longer shutdown
"""


def test_a_host_update_as_a_finished_rank_exits_neither_kills_it_nor_prints():
    # Python restores SIGUSR1's default action (end the process) while it shuts down;
    # horderun would take the killed rank for a reset and form the finished job again.
    for _ in range(5):
        child = subprocess.Popen([PYTHON, "-c", EXITING_CHILD], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        assert child.stdout.readline() == "ready\n"
        while child.poll() is None:
            try:
                os.kill(child.pid, signal.SIGUSR1)
            except ProcessLookupError:
                break
        _, err = child.communicate(timeout=20)
        assert child.returncode == 0, f"the rank ended with {child.returncode}: {err}"
        assert err == ""
