"""The replay that the elastic tests compare against (reference.py), checked on itself."""

from reference import replay


def test_a_generation_that_resumes_at_its_stop_commit_trains_nothing():
    # Its ranks failed again before their first commit: the next generation resumes from
    # the same commit, as if the middle one had never run.
    for commit in (0, 1, 2):
        assert replay([(4, commit), (3, commit), (2, None)], epochs=2, commit_every=2) == \
            replay([(4, commit), (2, None)], epochs=2, commit_every=2), commit


def test_the_size_of_a_generation_changes_the_result():
    assert replay([(4, 1), (3, None)], epochs=2, commit_every=2) != \
        replay([(4, 1), (2, None)], epochs=2, commit_every=2)
