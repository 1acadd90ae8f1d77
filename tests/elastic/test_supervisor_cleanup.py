"""Where horderun's elastic job directory shows, and what removes it: not on any command
line; removed by the next horderun when a SIGKILLed one left it."""

import os
import signal

import pytest

from test_elastic_local import PYTHON, Job, assert_no_rank_left, discovery_script

pytestmark = pytest.mark.timeout(120)

# Prints the job directory, whether it is private, and how many processes show it on
# their command line (ps reads /proc/PID/cmdline), then sleeps or exits.
REPORT = (
    "import os, stat, sys, time\n"
    "d = os.environ['HORDE_ELASTIC_DIR']\n"
    "open(os.path.join(os.environ['JOB_PID_DIR'], str(os.getpid())), 'w').write(str(os.getpid()))\n"
    "hits = 0\n"
    "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
    "    try:\n"
    "        hits += d.encode() in open(f'/proc/{pid}/cmdline', 'rb').read()\n"
    "    except OSError:\n"
    "        pass\n"
    "print(f'dir={d} mode={stat.S_IMODE(os.stat(d).st_mode):o} cmdline_hits={hits}', flush=True)\n"
    "if sys.argv[1] == 'sleep': time.sleep(300)\n")


def test_the_job_directory_is_on_no_command_line(tmp_path):
    script, _ = discovery_script(tmp_path, "localhost:1\n")
    job = Job(tmp_path, ["-np", "1", "--host-discovery-script", script],
              [PYTHON, "-c", REPORT, "exit"])
    match = job.wait_for(r"^dir=(\S+) mode=(\d+) cmdline_hits=(\d+)$")
    assert job.finish() == 0, job.err()
    assert match.group(1).startswith(("/dev/shm/horde-elastic-", "/tmp/horde-elastic-"))
    assert match.group(2) == "700"
    assert match.group(3) == "0", job.err()
    assert not os.path.exists(match.group(1))


def test_the_next_horderun_removes_what_a_sigkilled_one_left(tmp_path):
    script, _ = discovery_script(tmp_path, "localhost:1\n")
    first_dir = tmp_path / "first"
    first_dir.mkdir()
    killed = Job(first_dir, ["-np", "1", "--host-discovery-script", script],
                 [PYTHON, "-c", REPORT, "sleep"])
    left = killed.wait_for(r"^dir=(\S+) ").group(1)
    killed.process.send_signal(signal.SIGKILL)
    killed.process.wait(timeout=30)
    assert_no_rank_left(str(killed.pid_dir), limit_s=30)  # mpirun stops them (PDEATHSIG)
    second_dir = tmp_path / "second"
    second_dir.mkdir()
    job = Job(second_dir, ["-np", "1", "--host-discovery-script", script],
              [PYTHON, "-c", REPORT, "exit"])
    assert job.finish() == 0, job.err()
    assert not os.path.exists(left), job.err()
    # Any horderun of this user that starts meanwhile (another test's) may be the one.
    removed = [line for line in job.err().splitlines() if line.startswith("horderun: removed ")]
    assert all(line.endswith(", left by a horderun that ended without cleaning up")
               for line in removed), removed
