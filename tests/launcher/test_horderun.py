"""Integration tests of the installed horderun on this machine (no mpirun around them):

    .venv/bin/python -m pytest tests/launcher -q

horderun is .venv/bin/horderun next to this Python, or $HORDERUN. Every run has a time
limit, so a job that does not stop fails the test instead of hanging it.
"""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

import horde

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "job.py")
HORDERUN = os.environ.get("HORDERUN") or os.path.join(os.path.dirname(sys.executable),
                                                      "horderun")
PYTHON = sys.executable
LIMIT_S = 90

pytestmark = pytest.mark.timeout(2 * LIMIT_S)


def horderun(*args, env=None, timeout=LIMIT_S):
    return subprocess.run([HORDERUN, *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def ok_lines(output):
    return re.findall(r"^\S*ok rank=(\d+) size=(\d+)", output, re.M)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def rank_pids(pid_dir):
    return [int(open(os.path.join(pid_dir, name)).read()) for name in os.listdir(pid_dir)]


def wait_for_ranks(pid_dir, count, limit_s=LIMIT_S):
    deadline = time.monotonic() + limit_s
    while len(os.listdir(pid_dir)) < count:
        assert time.monotonic() < deadline, "the ranks did not start"
        time.sleep(0.1)
    time.sleep(0.2)  # the pid files are whole once every rank has written its own


def assert_all_gone(pids, limit_s=10):
    deadline = time.monotonic() + limit_s
    while any(alive(pid) for pid in pids):
        assert time.monotonic() < deadline, f"ranks still running: {pids}"
        time.sleep(0.1)


def installed_mpi():
    """The MPI line of `horderun --check-build`: 'Open MPI 4.1.4 (/usr/bin/mpirun)',
    'Open MPI 5.0.7 (PRRTE) (...)', 'MPICH 4.0.2 (Hydra) (...)'."""
    report = horderun("--check-build").stdout
    return re.search(r"^MPI: +(.*)$", report, re.M).group(1)


def rank_output_file(logs, rank):
    """Where --output-filename puts a rank's output, per MPI: Open MPI 4's
    DIR/1/rank.N/stdout, Open MPI 5's DIR/<job name>/rank.N/stdout (stderr merged in),
    Hydra's DIR/rank.N.stdout."""
    if "Hydra" in installed_mpi():
        return logs / f"rank.{rank}.stdout"
    [path] = logs.glob(f"*/rank.{rank}/stdout")
    return path


@pytest.mark.parametrize("np", [1, 2, 4])
def test_collectives(np):
    run = horderun("-np", str(np), PYTHON, JOB, "collectives")
    assert run.returncode == 0, run.stderr
    assert sorted(ok_lines(run.stdout)) == [(str(r), str(np)) for r in range(np)]


def test_a_failing_rank_sets_the_exit_code_and_stops_the_others(tmp_path):
    env = dict(os.environ, JOB_PID_DIR=str(tmp_path))
    start = time.monotonic()
    run = horderun("-np", "4", PYTHON, JOB, "fail", "1", "3", env=env)
    if "Hydra" in installed_mpi():
        # Hydra kills the other ranks (SIGKILL) and exits with the bitwise or of every
        # rank's wait status, which reads as killed by signal 9, not rank 1's code.
        assert run.returncode != 0 and "BAD TERMINATION" in run.stdout, run.stdout
    else:
        assert run.returncode == 3, run.stderr
    assert time.monotonic() - start < 30  # the others were sleeping for 300 s
    assert len(rank_pids(tmp_path)) == 4
    assert_all_gone(rank_pids(tmp_path))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_job_and_every_rank(tmp_path, sig):
    env = dict(os.environ, JOB_PID_DIR=str(tmp_path))
    job = subprocess.Popen([HORDERUN, "-np", "2", PYTHON, JOB, "sleep"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_ranks(tmp_path, 2)
        job.send_signal(sig)
        code = job.wait(timeout=30)
    finally:
        job.kill()
    assert code == 128 + sig
    assert_all_gone(rank_pids(tmp_path))


def test_tuning_flags_and_forwarded_variables_reach_every_rank():
    env = dict(os.environ, NCCL_DEBUG="WARN", OMP_NUM_THREADS="3", HOROVOD_LOG_LEVEL="error",
               UNRELATED_VARIABLE="x")
    names = ["HORDE_FUSION_THRESHOLD", "HORDE_CYCLE_TIME", "HORDE_LOG_LEVEL", "NCCL_DEBUG",
             "OMP_NUM_THREADS", "HOROVOD_LOG_LEVEL"]
    run = horderun("-np", "2", "--fusion-threshold-mb", "2", "--cycle-time-ms", "0.5",
                   "--log-level", "error", PYTHON, JOB, "env", *names, env=env)
    assert run.returncode == 0, run.stderr
    for rank in range(2):
        for expected in ["HORDE_FUSION_THRESHOLD=2097152", "HORDE_CYCLE_TIME=0.5",
                         "HORDE_LOG_LEVEL=error", "NCCL_DEBUG=WARN", "OMP_NUM_THREADS=3",
                         "HOROVOD_LOG_LEVEL=error"]:
            assert f"env rank={rank} {expected}" in run.stdout
    assert "OMP_NUM_THREADS is not set" not in run.stderr


@pytest.mark.parametrize("np, expected", [(2, "1"), (1, "<unset>")])
def test_omp_num_threads_is_one_when_unset_and_ranks_share_a_host(np, expected):
    """torchrun's rule, with its notice: several ranks on one host each starting a thread
    per core would oversubscribe it."""
    env = {name: value for name, value in os.environ.items() if name != "OMP_NUM_THREADS"}
    run = horderun("-np", str(np), PYTHON, JOB, "env", "OMP_NUM_THREADS", env=env)
    assert run.returncode == 0, run.stderr
    assert sorted(re.findall(r"^env rank=\d+ OMP_NUM_THREADS=(.*)$", run.stdout, re.M)) == \
        [expected] * np
    notices = [line for line in run.stderr.splitlines() if "OMP_NUM_THREADS" in line]
    if np == 1:
        assert notices == []
    else:
        assert notices == ["horderun: OMP_NUM_THREADS is not set: every rank gets "
                           "OMP_NUM_THREADS=1 (as with torchrun), so that 2 ranks on one host "
                           "do not each start a thread per core; set it to tune"]


def test_output_filename_writes_a_file_per_rank(tmp_path):
    run = horderun("-np", "2", "--output-filename", str(tmp_path / "logs"), PYTHON, JOB,
                   "collectives")
    assert run.returncode == 0, run.stderr
    for rank in range(2):
        stdout = rank_output_file(tmp_path / "logs", rank).read_text()
        assert ok_lines(stdout) == [(str(rank), "2")]


def test_the_command_is_in_the_installed_mpis_own_words():
    """Oversubscribed and tagged: Open MPI 5 (PRRTE) deprecates --oversubscribe and
    --tag-output, Hydra has neither."""
    mpi = installed_mpi()
    run = horderun("--dry-run", "-np", str(os.cpu_count() + 1), "--tag-output", "true")
    assert run.returncode == 0, run.stderr
    command = run.stdout.splitlines()[-1]
    if "Hydra" in mpi:
        assert command.startswith(f"mpirun -n {os.cpu_count() + 1} -hosts localhost:"), command
        assert "-prepend-rank" in command, command
    elif "PRRTE" in mpi:
        assert "--map-by slot:OVERSUBSCRIBE " in command and "--output tag " in command, command
        assert "--oversubscribe" not in command and "--tag-output" not in command, command
    else:
        assert re.match(r"Open MPI [1-4]\.", mpi), mpi
        assert "--oversubscribe " in command and "--tag-output " in command, command


def test_dry_run_prints_the_command_and_starts_nothing(tmp_path):
    marker = tmp_path / "ran"
    run = horderun("--dry-run", "-np", "2", "--fusion-threshold-mb", "1", "/usr/bin/touch",
                   str(marker))
    assert run.returncode == 0, run.stderr
    assert "HORDE_FUSION_THRESHOLD=1048576\n" in run.stdout
    command = run.stdout.splitlines()[-1]
    assert re.match(r"mpirun .*-np? 2 ", command), command  # Open MPI: -np, Hydra: -n
    assert command.endswith((f"-x HORDE_FUSION_THRESHOLD=1048576 /usr/bin/touch {marker}",
                             f"-genv HORDE_FUSION_THRESHOLD 1048576 /usr/bin/touch {marker}"))
    assert not marker.exists()


def test_dry_run_inside_a_slurm_allocation():
    env = dict(os.environ, SLURM_JOB_NODELIST="node[01-02],gpu7", SLURM_TASKS_PER_NODE="2(x2),4")
    run = horderun("--dry-run", "python3", "train.py", env=env)
    assert run.returncode == 0, run.stderr
    assert re.search(r"(-np 8 -H|-n 8 -hosts) node01:2,node02:2,gpu7:4 ", run.stdout), run.stdout


def test_help_version_and_check_build():
    assert "usage: horderun" in horderun("--help").stdout
    assert horderun("--version").stdout == f"horderun {horde.__version__}\n"
    report = horderun("--check-build")
    assert report.returncode == 0
    assert re.search(r"^MPI: +(Open MPI [1-4]\S*|Open MPI [5-9]\S* \(PRRTE\)"
                     r"|MPICH \S+ \(Hydra\)) \(/", report.stdout, re.M), report.stdout
    assert re.search(rf"^horde: +{re.escape(horde.__version__)} "
                     r"\(MPI: yes, NCCL: (yes|no), CUDA: (yes|no)\)", report.stdout, re.M), \
        report.stdout
    assert re.search(r"^torch: +\d", report.stdout, re.M), report.stdout


def test_list_settings_and_help_show_the_same_tuning_flags():
    run = horderun("--list-settings")
    assert run.returncode == 0, run.stderr
    rows = [line.split("\t") for line in run.stdout.splitlines()]
    assert all(len(row) == 5 and row[0].startswith("HORDE_") for row in rows), run.stdout
    assert ["HORDE_FUSION_THRESHOLD", "134217728", "shared", "--fusion-threshold-mb"] in \
        [row[:4] for row in rows]
    help_text = horderun("--help").stdout
    tuning = help_text.split("tuning (")[1]
    for variable, _, _, flag, help_line in rows:
        if flag != "-":
            assert re.search(rf"^  {re.escape(flag)}\b.*{re.escape(help_line)}$", tuning, re.M), \
                f"{variable}: {flag} is not in horderun --help's tuning flags:\n{tuning}"


BAD_INPUTS = {
    "np zero": (["-np", "0"], "-np expects a whole number from 1"),
    "np above slots": (["-np", "5", "-H", "localhost:4"],
                       "-np 5 asks for more processes than the 4 slots of -H localhost:4"),
    "slots not a number": (["-H", "a:x"], "-H: 'a:x' has slots 'x', expected a positive integer"),
    "no host name": (["-H", ":2"], "-H: ':2' has no host name"),
    "missing hostfile": (["--hostfile", "/nonexistent/hosts"],
                         "--hostfile: cannot read '/nonexistent/hosts': No such file"),
    "malformed hostfile": (["--hostfile", "{hostfile}"],
                           "{hostfile}:3: expected 'host slots=N', got 'b slots=two'"),
    "unknown option": (["--frobnicate"], "unknown option '--frobnicate': see horderun --help"),
    "negative tuning value": (["-np", "1", "--cycle-time-ms", "-1"],
                              "--cycle-time-ms expects a positive number, got '-1'"),
    "non-numeric tuning value": (["-np", "1", "--fusion-threshold-mb", "lots"],
                                 "--fusion-threshold-mb expects a non-negative whole number"),
    "unreachable host": (["-H", "localhost:1,nosuchhost.invalid:1", "--start-timeout", "10"],
                         "cannot reach nosuchhost.invalid over ssh ("),
    "elastic mode typo": (["--host-discovery-script", "/bin/true", "--elastic-mode", "inplace"],
                          "--elastic-mode expects restart, in-place or auto, got 'inplace'"),
    "elastic mode alone": (["-np", "1", "--elastic-mode", "restart"],
                           "--elastic-mode is for elastic jobs: add --host-discovery-script"),
}


@pytest.mark.parametrize("case", BAD_INPUTS.keys())
def test_bad_input_gets_one_line_and_exit_code_2(tmp_path, case):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# two hosts\na slots=2\nb slots=two\n")
    args, message = BAD_INPUTS[case]
    args = [arg.format(hostfile=hostfile) for arg in args]
    marker = tmp_path / "ran"
    run = horderun(*args, "/usr/bin/touch", str(marker))
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("horderun: "), run.stderr
    assert message.format(hostfile=hostfile) in run.stderr
    assert run.stdout == ""
    assert not marker.exists()


def test_no_command():
    run = horderun("-np", "2")
    assert run.returncode == 2
    assert run.stderr == ("horderun: no command to run: put it after the options, "
                          "e.g. horderun -np 2 python3 train.py\n")


def test_mpirun_not_installed(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))  # an empty folder: no mpirun, no ssh
    run = horderun("-np", "1", "/usr/bin/true", env=env)
    assert run.returncode == 2
    assert run.stderr.startswith("horderun: mpirun not found on PATH: install Open MPI")


# An Open MPI 5 with ULFM as far as horderun can tell: its mpirun prints its arguments,
# then a rank's exit wrapper line, and exits 0 a moment later (as prterun --with-ft ulfm
# does once the survivors finish).
FAKE_OPEN_MPI_5 = """#!/bin/sh
[ "$1" = --version ] && exec echo "mpirun (Open MPI) 5.0.7"
echo "fake mpirun: $*"
sleep 1
echo "horde rank 2 on vm: killed by signal 9" >&2
sleep 2
"""


@pytest.mark.parametrize("mode", ["auto", "restart"])
def test_in_place_a_failed_rank_is_handled_while_the_generation_goes_on(tmp_path, mode):
    (tmp_path / "mpirun").write_text(FAKE_OPEN_MPI_5)
    (tmp_path / "ompi_info").write_text("#!/bin/sh\necho options:ft_mpi_support:yes\n")
    (tmp_path / "discover.sh").write_text("#!/bin/sh\necho localhost:3\n")
    for name in ("mpirun", "ompi_info", "discover.sh"):
        os.chmod(tmp_path / name, 0o755)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    run = horderun("-np", "3", "--min-np", "2", "--elastic-mode", mode,
                   "--host-discovery-script", str(tmp_path / "discover.sh"), "/bin/true", env=env)
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("horderun: ")]
    assert [line for line in lines if "elastic generation" in line] == [
        "horderun: elastic generation 0: 3 rank(s) on localhost:3"]
    in_place = mode == "auto"
    assert ("--with-ft ulfm" in run.stdout) == in_place, run.stdout
    assert ("-x HORDE_ELASTIC_IN_PLACE=1 -x HORDE_ELASTIC_MIN_NP=2" in run.stdout) == in_place
    expected = [
        "horderun: elastic mode: in place (Open MPI 5.0.7 with ULFM: survivors of a lost rank go "
        "on in the same processes)",
        "horderun: reset 1: rank 2 on localhost failed (killed by signal 9); one slot of localhost "
        "(this machine) is withheld (1 in all); the 2 other rank(s) recover in place",
    ]
    assert [line for line in lines if line in expected] == (expected if in_place else [])
