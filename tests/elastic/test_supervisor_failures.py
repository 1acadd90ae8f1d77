"""Whom horderun's elastic supervisor blames, and when it stops retrying: real horderun,
mpirun and rank processes (small scripts standing in for training), real kills."""

import os
import re
import signal
import subprocess
import time

import pytest

from test_elastic_local import HORDERUN, PYTHON, Job, discovery_script

pytestmark = pytest.mark.timeout(120)


def rank_script(tmp_path, body):
    """A rank that knows its rank, generation and a shared directory; writes its pid (and its
    exit wrapper's) where the test finds them, then runs `body`."""
    shared = tmp_path / "shared"
    shared.mkdir(exist_ok=True)
    script = tmp_path / "rank.py"
    script.write_text(
        "import os, subprocess, sys, time\n"
        "rank = int(os.environ['OMPI_COMM_WORLD_RANK'])\n"
        "gen = int(os.environ['HORDE_ELASTIC_GENERATION'])\n"
        f"shared = {str(shared)!r}\n"
        "pid_file = os.path.join(os.environ['JOB_PID_DIR'], f'{gen}.{rank}')\n"
        "open(pid_file, 'w').write(str(os.getpid()))\n"
        "open(os.path.join(shared, f'wrapper.{gen}.{rank}'), 'w').write(str(os.getppid()))\n"
        "def wait_for(name):\n"
        "    while not os.path.exists(os.path.join(shared, name)):\n"
        "        time.sleep(0.05)\n"
        + body)
    return [PYTHON, str(script)], shared


def horderun_lines(job):
    return [line for line in job.err().splitlines() if line.startswith("horderun: ")]


def test_an_mpirun_that_cannot_start_backs_off_and_gives_up(tmp_path):
    script, _ = discovery_script(tmp_path, "localhost:1\n")
    job = Job(tmp_path, ["-np", "1", "--mpi-args", "--no-such-mpirun-flag",
                         "--host-discovery-script", script], [PYTHON, "-c", "pass"])
    assert job.finish() == 1
    lines = horderun_lines(job)
    assert sum(" elastic generation " in line for line in lines) == 5, lines
    # Open MPI 4 names the bad option on stderr, which horderun quotes; Open MPI 5 prints
    # it on stdout, which horderun passes on without reading.
    assert re.fullmatch(
        r"horderun: giving up: generation 4 ended with exit code \d+ and no rank named as failed"
        r"( \(mpirun: '.*no-such-mpirun-flag.*'\))?; 5 generations in a row failed without "
        r"naming a rank: check the mpirun command \(--verbose prints it\) and that every host "
        r"can start ranks", lines[-1]), lines
    if "Open MPI) 4" in subprocess.run(["mpirun", "--version"], capture_output=True,
                                       text=True).stdout:
        assert "(mpirun: '" in lines[-1], lines
    assert "in 8 s (4 in a row without a named rank; horderun gives up at 5)" in lines[-3], lines


def test_a_rank_that_fails_while_the_others_reset_is_blamed(tmp_path):
    # Rank 1's failure is reported (its wrapper's line) before rank 0 leaves with the reset
    # code, which is what mpirun then passes on: as when a remote rank's death reaches
    # mpirun after the local ranks' HordeInternalError.
    command, _ = rank_script(tmp_path, (
        "if gen > 0: sys.exit(0)\n"
        "if rank == 1:\n"
        f"    subprocess.run([{HORDERUN!r}, '--rank-exit-wrapper', sys.executable, '-c', "
        "'import sys; sys.exit(3)'])\n"
        "    open(os.path.join(shared, 'failed'), 'w').close()\n"
        "    time.sleep(60)\n"
        "wait_for('failed')\n"
        "sys.exit(75)\n"))
    script, _ = discovery_script(tmp_path, "localhost:2\n")
    job = Job(tmp_path, ["-np", "2", "--min-np", "1", "--host-discovery-script", script], command)
    assert job.finish() == 0, job.err()
    assert ("horderun: reset 1: rank 1 on localhost failed (exit code 3); one slot of localhost "
            "(this machine) is withheld (1 in all); restarting from the start (no commit was "
            "announced yet)") in horderun_lines(job), job.err()
    assert "horderun: elastic generation 1: 1 rank(s) on localhost:1" in job.err()


def test_a_killed_exit_wrapper_blames_its_rank_not_a_bystander(tmp_path):
    command, shared = rank_script(tmp_path, "if gen > 0: sys.exit(0)\ntime.sleep(60)\n")
    script, _ = discovery_script(tmp_path, "localhost:3\n")
    job = Job(tmp_path, ["-np", "3", "--min-np", "1", "--host-discovery-script", script], command)
    wrapper = shared / "wrapper.0.2"
    deadline = time.monotonic() + 60
    while not all((shared / f"wrapper.0.{rank}").exists() for rank in range(3)):
        assert time.monotonic() < deadline, job.err()
        time.sleep(0.05)
    time.sleep(0.2)  # the pid is written
    os.kill(int(wrapper.read_text()), signal.SIGKILL)
    assert job.finish() == 0, job.err()
    lines = horderun_lines(job)
    assert ("horderun: reset 1: rank 2 on localhost failed (exit code 137); one slot of localhost "
            "(this machine) is withheld (1 in all); restarting from the start (no commit was "
            "announced yet)") in lines, job.err()
    # The ranks that mpirun stopped with SIGTERM do not report themselves as failed.
    assert "killed by signal 15" not in job.err()


def test_a_rank_the_stall_report_names_is_blamed(tmp_path):
    # Rank 0 reports rank 1 as the stall inspector does, then leaves with the reset code.
    command, _ = rank_script(tmp_path, (
        "if gen > 0: sys.exit(0)\n"
        "if rank == 1: time.sleep(60)\n"
        "sys.stderr.write('[horde] stall: these operations have waited 2 s or more for ranks '\n"
        "                 'that have not submitted them:\\n'\n"
        "                 \"  rank 1 has not submitted allreduce 'grad.0' (waiting 3.0 s)\\n\")\n"
        "sys.stderr.flush()\n"
        "time.sleep(0.5)\n"
        "sys.exit(75)\n"))
    script, _ = discovery_script(tmp_path, "localhost:2\n")
    job = Job(tmp_path, ["-np", "2", "--min-np", "1", "--host-discovery-script", script], command)
    assert job.finish() == 0, job.err()
    assert ("horderun: reset 1: rank 1 on localhost hung (named by the stall report); one slot of "
            "localhost (this machine) is withheld (1 in all); restarting from the start (no "
            "commit was announced yet)") in horderun_lines(job), job.err()
