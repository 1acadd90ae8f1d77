"""Every rank resumes from one state of one timeline: the live one, whose newest
generation synced, even when a returning host holds a commit of an abandoned timeline
with the same or a higher count; rank 0 names the commit each generation holds, and a
generation that should hold one but finds none stops with exit code 76.

Two ranks with two job directories (of one job: the same basename) are two hosts."""

import pytest

from test_commit_trust import LIMIT_S, Ranks, files

pytestmark = pytest.mark.timeout(6 * LIMIT_S)

NO_COMMIT_EXIT_CODE = 76


def host(tmp_path, name):
    (tmp_path / name).mkdir()
    return tmp_path / name / "horde-elastic-job"


def made(tmp_path, directory, generation, seed, commits):
    """A host left holding what a generation of one rank committed there last."""
    ranks = Ranks(tmp_path, [directory], generation, seed, commits)
    ranks.assert_ok()
    return ranks.lines("committed")[0]


@pytest.mark.parametrize("abandoned_commits, live_commits", [(4, 4), (6, 3)])
def test_a_returning_host_of_an_abandoned_timeline_resumes_the_live_one(
        tmp_path, abandoned_commits, live_commits):
    abandoned, live = host(tmp_path, "b"), host(tmp_path, "a")
    made(tmp_path, abandoned, 1, 2, abandoned_commits)
    newest = made(tmp_path, live, 2, 1, live_commits)
    # The abandoned host is rank 0: the rank a job falls back on.
    ranks = Ranks(tmp_path, [abandoned, live], 3, 5, 1)
    ranks.assert_ok()
    assert ranks.lines("synced") == {0: newest, 1: newest}, ranks.out
    committed = ranks.lines("committed")
    assert committed[0] == committed[1] and committed[0][0] == live_commits + 1
    # Both hosts now hold the live timeline, once.
    assert files(abandoned) == files(live) == [f"commit.g3.c{live_commits + 1}"]


def test_rank_0_names_the_commit_each_generation_holds(tmp_path):
    directory = host(tmp_path, "a")
    first = Ranks(tmp_path, [directory, directory], 1, 1, 3)
    first.assert_ok()
    assert first.horde_lines() == ["horde elastic: generation 1 holds commit g1.c1"], first.err
    second = Ranks(tmp_path, [directory, directory], 2, 1, 2)
    second.assert_ok()
    assert second.horde_lines() == ["horde elastic: generation 2 holds commit g2.c3"], second.err


def test_a_generation_without_the_expected_commit_stops(tmp_path):
    ranks = Ranks(tmp_path, [host(tmp_path, "a"), host(tmp_path, "b")], 4, 1, 2,
                  env={"HORDE_ELASTIC_EXPECT_COMMIT": "g3.c12"})
    assert ranks.codes == [NO_COMMIT_EXIT_CODE] * 2, f"{ranks.codes}\n{ranks.err}"
    assert ranks.horde_lines() == ["horde elastic: no rank of generation 4 holds a commit of "
                                   "this job (the newest was g3.c12); stopping"], ranks.err
    assert not ranks.lines("synced")


def test_a_generation_with_the_expected_commit_goes_on(tmp_path):
    directory = host(tmp_path, "a")
    newest = made(tmp_path, directory, 3, 1, 2)
    ranks = Ranks(tmp_path, [directory, host(tmp_path, "b")], 4, 1, 1,
                  env={"HORDE_ELASTIC_EXPECT_COMMIT": "g3.c2"})
    ranks.assert_ok()
    assert ranks.lines("synced") == {0: newest, 1: newest}
