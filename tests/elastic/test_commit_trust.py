"""Commits are read only from a job directory this user owns and no one else can enter:
a directory planted by another user, open to others or a symbolic link is refused with
one line, nothing in it is unpickled, and the job goes on as if the host kept no commit.

Also the harness of the test_commit_* files: RANK runs as each rank of a plain mpirun
job (scripts/mpirun.sh), with its own HORDE_ELASTIC_DIR (two ranks with two directories
are two hosts), so these tests depend on horde's elastic state and not on horderun."""

import os
import re
import signal
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
MPIRUN = os.path.join(HERE, "..", "..", "scripts", "mpirun.sh")
PYTHON = sys.executable
NOBODY = 65534
LIMIT_S = 90

pytestmark = pytest.mark.timeout(4 * LIMIT_S)

# argv: SEED COMMITS [WIDTH]. Trains a Linear(WIDTH, 1) (each rank its own steps, the
# same on every rank once synced), committing after every step, and reports with one
# write per line; a failed commit is reported as "error rank=R: TYPE: MESSAGE" after
# every rank has reported it. Exit codes land in $RC_DIR/rank.R.
RANK = r"""
import os, sys
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("PMI_RANK") or 0)
dirs = os.environ["RANK_DIRS"].split(os.pathsep)
os.environ["HORDE_ELASTIC_DIR"] = dirs[rank % len(dirs)]
import torch
import horde.torch as hvd

seed, commits = int(sys.argv[1]), int(sys.argv[2])
width = int(sys.argv[3]) if len(sys.argv) > 3 else 3
hvd.init()
torch.manual_seed(seed)
model = torch.nn.Linear(width, 1).double()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
sampler = hvd.elastic.ElasticSampler(list(range(8)), shuffle=False)
state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, step=0)


def say(what):
    weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()])[:4].tolist()
    os.write(1, f"{what} rank={hvd.rank()} commit={state._commits} step={state.step} "
                f"weights={','.join(map(repr, weights))}\n".encode())


@hvd.elastic.run
def train(state):
    say("synced")
    for _ in range(commits):
        optimizer.zero_grad()
        x = torch.full((1, width), float(state.step + seed), dtype=torch.float64)
        model(x).sum().backward()
        optimizer.step()
        state.sampler.record_batch(0, 1)
        state.step += 1
        state.commit()
        say("committed")


try:
    train(state)
except Exception as error:
    os.write(1, f"error rank={hvd.rank()}: {type(error).__name__}: {error}\n".encode())
    hvd.allreduce(torch.zeros(1), name="reported")  # every rank's line is out
    sys.exit(3)
"""

# Records the rank's exit code (os._exit included), then ends as the rank did. SIGTERM is
# ignored: mpirun sends it to the other ranks once one has exited non-zero, and the rank
# that exits a moment later with its own code would be reported as terminated.
RECORD_EXIT = ('trap "" TERM; "$@"; code=$?; '
               'echo $code > "$RC_DIR/rank.${OMPI_COMM_WORLD_RANK:-$PMI_RANK}"; exit $code')


class Ranks:
    """One finished mpirun job of RANK: its output, stderr and each rank's exit code."""

    def __init__(self, tmp_path, dirs, generation, *args, env=None):
        script = tmp_path / "rank.py"
        script.write_text(RANK)
        rc_dir = tmp_path / f"rc.{len(list(tmp_path.glob('rc.*')))}"
        rc_dir.mkdir()
        extra, env = env or {}, dict(os.environ)
        env.pop("HORDE_ELASTIC_EXPECT_COMMIT", None)
        env.update(RANK_DIRS=os.pathsep.join(map(str, dirs)), RC_DIR=str(rc_dir),
                   HORDE_ELASTIC_GENERATION=str(generation), **extra)
        command = [MPIRUN, "-np", str(len(dirs)), "sh", "-c", RECORD_EXIT, "sh", PYTHON,
                   str(script), *map(str, args)]
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, start_new_session=True) as job:
            try:
                self.out, self.err = job.communicate(timeout=LIMIT_S)
            except subprocess.TimeoutExpired:
                os.killpg(job.pid, signal.SIGKILL)
                out, err = job.communicate()
                pytest.fail(f"the ranks ran past {LIMIT_S} s:\n{out}\n{err[-4000:]}")
        self.codes = [int((rc_dir / f"rank.{r}").read_text()) if (rc_dir / f"rank.{r}").exists()
                      else None for r in range(len(dirs))]

    def lines(self, what):
        """{rank: (commit, weights)} of the lines starting with `what` (the last of each)."""
        found = {}
        for match in re.finditer(rf"^{what} rank=(\d+) commit=(\d+) step=\d+ weights=(\S+)$",
                                 self.out, re.M):
            found[int(match.group(1))] = (int(match.group(2)), match.group(3))
        return found

    def horde_lines(self):
        return [line for line in self.err.splitlines() if line.startswith("horde elastic: ")]

    def assert_ok(self):
        assert self.codes == [0] * len(self.codes), f"{self.codes}\n{self.out}\n{self.err}"


def files(directory):
    return sorted(os.listdir(directory))


class Planted:
    """Unpickling it creates `marker`."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def plant(directory, marker):
    # Under every name a rank may load: this layout's and the one before it.
    for name in ("commit.g99.c99", "commit.r0.c99"):
        torch.save(Planted(marker), os.path.join(directory, name))


def planted_by_nobody(tmp_path):
    directory = tmp_path / "horde-elastic-job"
    directory.mkdir(mode=0o700)
    os.chown(directory, NOBODY, NOBODY)
    return directory, f"owned by uid {NOBODY}, expected {os.geteuid()}"


def open_to_everyone(tmp_path):
    directory = tmp_path / "horde-elastic-job"
    directory.mkdir()
    directory.chmod(0o777)
    return directory, "mode 0777 lets other users in, expected 0700"


def a_symbolic_link(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    directory = tmp_path / "horde-elastic-job"
    directory.symlink_to(target)
    return directory, "a symbolic link, expected a directory"


def a_file_of_nobody(tmp_path):
    directory = tmp_path / "horde-elastic-job"
    directory.mkdir(mode=0o700)
    return directory, f"commit.g99.c99 is owned by uid {NOBODY}, expected {os.geteuid()}"


@pytest.mark.parametrize("make", [planted_by_nobody, open_to_everyone, a_symbolic_link,
                                  a_file_of_nobody])
def test_a_planted_commit_is_never_unpickled(tmp_path, make):
    if make in (planted_by_nobody, a_file_of_nobody) and os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    directory, why = make(tmp_path)
    marker = tmp_path / "marker"
    plant(directory, marker)
    if make is a_file_of_nobody:
        for name in files(directory):
            os.chown(directory / name, NOBODY, NOBODY)
    before = files(directory)
    ranks = Ranks(tmp_path, [directory, directory], 1, 3, 2)
    assert not marker.exists(), "a planted commit was unpickled"
    ranks.assert_ok()
    refusal = f"horde elastic: refusing commits in {directory}: {why}; this host keeps no commits"
    assert [line for line in ranks.horde_lines() if "refusing" in line] == [refusal], ranks.err
    # Started from the initial state, as a host without commits does, and wrote nothing there.
    assert {rank: commit for rank, (commit, _) in ranks.lines("synced").items()} == {0: 0, 1: 0}
    assert files(directory) == before


def test_commits_in_a_directory_of_ours_are_read(tmp_path):
    directory = tmp_path / "horde-elastic-job"
    first = Ranks(tmp_path, [directory], 0, 3, 2)
    first.assert_ok()
    assert os.lstat(directory).st_mode & 0o777 == 0o700
    second = Ranks(tmp_path, [directory, directory], 1, 5, 0)
    second.assert_ok()
    assert set(second.lines("synced").values()) == {first.lines("committed")[0]}
