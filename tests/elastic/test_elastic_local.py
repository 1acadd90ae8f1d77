"""Elastic jobs on this machine with real horderun processes and real SIGKILLs:

    .venv/bin/python -m pytest tests/elastic -q -p no:cacheprovider

Every run has a time limit; every test checks that no rank outlives horderun.
"""

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from reference import replay  # noqa: E402

TRAIN = os.path.join(HERE, "elastic_train.py")
HORDERUN = os.environ.get("HORDERUN") or os.path.join(os.path.dirname(sys.executable), "horderun")
PYTHON = sys.executable
LIMIT_S = 150

pytestmark = pytest.mark.timeout(LIMIT_S + 30)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def assert_no_rank_left(pid_dir, limit_s=10):
    pids = [int(open(os.path.join(pid_dir, name)).read()) for name in os.listdir(pid_dir)]
    deadline = time.monotonic() + limit_s
    while any(alive(pid) for pid in pids):
        assert time.monotonic() < deadline, f"ranks outlived horderun: {pids}"
        time.sleep(0.1)
    return pids


def discovery_script(tmp_path, text):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(text)
    script = tmp_path / "discover.sh"
    script.write_text(f"#!/bin/sh\ncat {hosts}\n")
    script.chmod(0o755)
    return str(script), hosts


class Job:
    """horderun in the background, its stdout read line by line (by a thread, so that a
    job that goes quiet fails at the deadline with what it printed, instead of blocking)."""

    def __init__(self, tmp_path, args, command):
        # The restart path, unless a test asks for another mode: where the MPI recovers
        # in place, horderun's default (auto) would choose that.
        if "--host-discovery-script" in args and "--elastic-mode" not in args:
            args = ["--elastic-mode", "restart", *args]
        self.pid_dir = tmp_path / "pids"
        self.pid_dir.mkdir()
        env = dict(os.environ, JOB_PID_DIR=str(self.pid_dir), PYTHONPATH=HERE + os.pathsep +
                   os.environ.get("PYTHONPATH", ""))
        self.stderr = open(tmp_path / "stderr.txt", "w+")
        self.process = subprocess.Popen([HORDERUN, *args, *command], stdout=subprocess.PIPE,
                                        stderr=self.stderr, text=True, env=env)
        self.lines = []
        self.deadline = time.monotonic() + LIMIT_S
        self.limit = f"within {LIMIT_S} s"
        self._queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self._queue.put(line)
        self._queue.put(None)  # end of output

    def _next_line(self, what):
        try:
            line = self._queue.get(timeout=max(0, self.deadline - time.monotonic()))
        except queue.Empty:
            alive_ranks = [pid for pid in self.rank_pids() if pid > 0 and alive(pid)]
            self.process.terminate()  # horderun stops its ranks
            pytest.fail(f"no {what} {self.limit} (ranks alive then: {alive_ranks}); the last "
                        f"lines:\n{''.join(self.lines[-30:])}horderun's stderr:\n{self.err()}")
        if line is not None:
            self.lines.append(line)
        return line

    def wait_for(self, pattern):
        while True:
            line = self._next_line(f"line matching {pattern!r}")
            assert line is not None, f"horderun ended before {pattern!r}: {self.err()}"
            match = re.search(pattern, line)
            if match:
                return match

    def rank_pids(self):
        return [int((self.pid_dir / name).read_text() or 0) for name in os.listdir(self.pid_dir)]

    def finish(self, within_s=None):
        """Waits for horderun to end and returns its exit code. within_s: it must end that
        soon, for a job whose ranks have all returned from the script (a job that does not
        end then fails the test at once instead of at the job's time limit)."""
        if within_s is not None:
            self.deadline = min(self.deadline, time.monotonic() + within_s)
            self.limit = f"within {within_s} s of every rank's last line: the job does not end"
        while self._next_line("end of horderun's output") is not None:
            pass
        self.process.wait(timeout=max(1, self.deadline - time.monotonic()))
        assert_no_rank_left(str(self.pid_dir))
        return self.process.returncode

    def err(self):
        self.stderr.seek(0)
        return self.stderr.read()

    def found(self, pattern):
        return [re.search(pattern, line) for line in self.lines if re.search(pattern, line)]


def final_weights(job, size):
    finals = job.found(r"^final rank=(\d+) size=(\d+) weights=(\S+)")
    assert sorted(int(m.group(1)) for m in finals) == list(range(size)), job.err()
    assert {int(m.group(2)) for m in finals} == {size}
    weights = {m.group(3) for m in finals}
    assert len(weights) == 1, "the ranks ended with different weights"
    return [float(w) for w in weights.pop().split(",")]


def resumed_commit(job, gen):
    starts = job.found(rf"^start rank=\d+ size=\d+ gen={gen} commit=(\d+)")
    assert starts, job.err()
    assert len({m.group(1) for m in starts}) == 1
    return int(starts[0].group(1))


@pytest.mark.parametrize("optimizer", [[], ["--sharded", "2"]], ids=["distributed", "sharded"])
def test_a_killed_rank_and_training_goes_on_with_two(tmp_path, optimizer):
    # Sharded: the commit holds the whole optimizer state, resharded over 2 ranks.
    script, _ = discovery_script(tmp_path, "localhost:3\n")
    job = Job(tmp_path, ["-np", "3", "--min-np", "2", "--host-discovery-script", script],
              [PYTHON, TRAIN, "--epochs", "2", "--commit-every", "2", *optimizer])
    pid = int(job.wait_for(r"^start rank=2 size=3 gen=0 .* pid=(\d+)").group(1))
    job.wait_for(r"^step rank=2 size=3 gen=0 epoch=0 batch=3$")
    os.kill(pid, signal.SIGKILL)  # mid-epoch, after commit 1 (batch 2), before commit 2
    assert job.finish() == 0, job.err()
    err = job.err()
    assert re.search(r"horderun: reset 1: rank 2 on localhost failed \(exit code 137\); one slot "
                     r"of localhost \(this machine\) is withheld", err), err
    assert "horderun: elastic generation 1: 2 rank(s) on localhost:2" in err
    # Named by its exit wrapper, not only by mpirun's message.
    assert re.search(r"^horde rank 2 on \S+: killed by signal 9$", err, re.M), err
    commit = resumed_commit(job, 1)
    assert commit >= 1
    expected = replay([(3, commit), (2, None)], epochs=2, commit_every=2)
    assert final_weights(job, 2) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_a_host_update_grows_the_job_at_the_next_commit(tmp_path):
    script, hosts = discovery_script(tmp_path, "localhost:2\n")
    job = Job(tmp_path, ["-np", "2", "--max-np", "3", "--host-discovery-script", script],
              [PYTHON, TRAIN, "--epochs", "2", "--commit-every", "2"])
    job.wait_for(r"^step rank=0 size=2 gen=0 epoch=0 batch=1$")
    hosts.write_text("localhost:3\n")
    job.wait_for(r"^start rank=\d+ size=3 gen=1 .* lr=0\.03 ")  # the reset callback ran
    assert job.finish() == 0, job.err()
    err = job.err()
    assert "horderun: reset 1: the ranks committed and asked to re-form" in err, err
    commit = resumed_commit(job, 1)
    assert len(job.found(r"^start rank=\d+ size=3 gen=1 .* lr=0\.03 ")) == 3
    expected = replay([(2, commit), (3, None)], epochs=2, commit_every=2)
    assert final_weights(job, 3) == pytest.approx(expected, rel=1e-9, abs=1e-12)
