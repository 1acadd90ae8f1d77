"""One writer and one commit file per host, nothing left behind by earlier writers, and
a commit that does not fit in its host's job directory fails on every rank at the same
commit, with one error that names the directory, the sizes and what to do."""

import re
import subprocess

import pytest

from test_commit_trust import LIMIT_S, Ranks, files

pytestmark = pytest.mark.timeout(4 * LIMIT_S)


def test_one_commit_file_per_host_and_no_leftovers(tmp_path):
    directory = tmp_path / "horde-elastic-job"
    Ranks(tmp_path, [directory], 0, 1, 1).assert_ok()
    # What writers killed mid-write left.
    for name in ("commit.g0.c2.tmp4242", "commit.g0.c1.tmp77"):
        (directory / name).write_bytes(b"half a commit")
    ranks = Ranks(tmp_path, [directory] * 3, 1, 1, 3)
    ranks.assert_ok()
    assert files(directory) == ["commit.g1.c4"]


@pytest.fixture
def small_tmpfs(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir(mode=0o700)
    run = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs",
                          str(mount)], capture_output=True, text=True)
    if run.returncode != 0:
        pytest.skip(f"cannot mount a 256 KiB tmpfs here: {run.stderr.strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_commit_too_large_for_one_host_fails_on_every_rank_alike(tmp_path, small_tmpfs):
    roomy, small = tmp_path / "horde-elastic-job", small_tmpfs / "horde-elastic-job"
    # A Linear(50000, 1) with momentum: about 800 KB a commit.
    ranks = Ranks(tmp_path, [roomy, small], 1, 1, 2, 50000)
    assert ranks.codes == [3, 3], f"{ranks.codes}\n{ranks.out}\n{ranks.err}"
    errors = dict(re.findall(r"^error rank=(\d+): (.*)$", ranks.out, re.M))
    assert sorted(errors) == ["0", "1"] and errors["0"] == errors["1"], ranks.out
    assert re.fullmatch(
        rf"CommitWriteError: rank 1: cannot write commit g1\.c1 to {small}: it needs "
        r"[\d.]+ [KM]iB and [\d.]+ [KM]iB are free there; the directory must hold two "
        r"commits \(the previous one stays until the new one is whole\): give it more room "
        r"\(a larger /dev/shm, e\.g\. docker run --shm-size=\d+m\)",
        errors["0"]), errors["0"]
    assert not ranks.lines("committed")
    assert files(small) == []
