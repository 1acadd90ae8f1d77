"""The response cache over real MPI: a repeated operation takes the fast path (one bit
allreduce per round, counted by runtime_stats), and a cached name whose shape or dtype
changes on every rank, or on one rank only, falls back to the coordinator's checks."""

import pytest
import torch

import horde.torch as hvd


def test_repeated_allreduces_are_served_by_the_cache_and_stay_correct():
    hvd.allreduce(torch.ones(5), name="cache.steady", op=hvd.Sum)
    before = hvd.runtime_stats()
    for step in range(50):
        t = torch.full((5,), float(step + hvd.rank()))
        out = hvd.allreduce(t, name="cache.steady", op=hvd.Sum)
        expected = sum(step + r for r in range(hvd.size()))
        assert out.tolist() == [expected] * 5
    after = hvd.runtime_stats()
    assert after["cache_hits"] - before["cache_hits"] == 50
    assert after["slow_rounds"] - before["slow_rounds"] < 5


def test_a_name_whose_shape_changes_everywhere_is_negotiated_again():
    for step in range(30):
        n = 3 + step // 10  # the shape changes every 10 steps
        out = hvd.allreduce(torch.ones(n, dtype=torch.float64), name="cache.reshaped", op=hvd.Sum)
        assert out.shape == (n,) and out.eq(hvd.size()).all()


@pytest.mark.skipif(hvd.size() < 2, reason="needs ranks that disagree")
def test_a_cached_name_changed_on_one_rank_fails_on_every_rank_with_the_mismatch():
    hvd.allreduce(torch.ones(4), name="cache.diverge")
    shape = (5,) if hvd.rank() == 1 else (4,)
    with pytest.raises(hvd.HordeInternalError,
                       match="ranks disagree on the shape of allreduce 'cache.diverge'"):
        hvd.allreduce(torch.ones(shape), name="cache.diverge")
    out = hvd.allreduce(torch.ones(4), name="cache.diverge", op=hvd.Sum)
    assert out.eq(hvd.size()).all()
