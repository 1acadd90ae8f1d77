"""The rank exit wrapper (launcher/rank_exit.h) that every rank of an elastic job runs
under: `horderun --rank-exit-wrapper COMMAND...` ends as COMMAND did, names a failed
rank in one stderr line, and passes signals on."""

import os
import signal
import socket
import subprocess
import time

import pytest

from test_elastic_local import HORDERUN, PYTHON

pytestmark = pytest.mark.timeout(60)


def wrapped(*command, rank="2"):
    env = dict(os.environ, OMPI_COMM_WORLD_RANK=rank)
    return subprocess.run([HORDERUN, "--rank-exit-wrapper", *command], capture_output=True,
                          text=True, env=env, timeout=30)


@pytest.mark.parametrize("script, code, line", [
    ("kill -9 $$", -signal.SIGKILL, "horde rank 2 on {}: killed by signal 9\n"),
    ("exit 3", 3, "horde rank 2 on {}: exit code 3\n"),
    ("exit 0", 0, ""),
    ("exit 75", 75, ""),                 # the ranks asked to re-form: no failure
    ("kill -USR1 $$", -signal.SIGUSR1, ""),  # horderun's host-update signal, come early
])
def test_ends_as_the_command_did_and_names_a_failed_rank(script, code, line):
    run = wrapped("sh", "-c", script)
    assert run.returncode == code
    assert run.stderr == line.format(socket.gethostname())


def test_passes_signals_on_to_the_command(tmp_path):
    ready = tmp_path / "ready"
    child = ("import os, signal, sys, time\n"
             "signal.signal(signal.SIGUSR1, lambda *a: (os.write(1, b'usr1\\n'), sys.exit(5)))\n"
             f"open({str(ready)!r}, 'w').close()\n"
             "time.sleep(60)\n")
    job = subprocess.Popen([HORDERUN, "--rank-exit-wrapper", PYTHON, "-c", child],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, PMI_RANK="4"))
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert time.monotonic() < deadline and job.poll() is None, job.stderr.read()
        time.sleep(0.05)
    job.send_signal(signal.SIGUSR1)
    out, err = job.communicate(timeout=30)
    assert (job.returncode, out) == (5, "usr1\n")
    assert err == f"horde rank 4 on {socket.gethostname()}: exit code 5\n"


def test_a_command_that_cannot_run():
    run = wrapped("/nonexistent/program")
    assert run.returncode == 127
    assert run.stderr.endswith(": exit code 127\n")
