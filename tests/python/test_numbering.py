"""Unnamed operations are numbered in submission order on each rank; a rank that skips one
(an exception on that rank only) must not shift the numbers of the operations after it.
Numbers restart at init() (when already initialized), after a barrier and after a join,
and an unnamed operation that a rank passed one of those points without submitting fails
at once on the ranks that did (see core/numbering_epochs.h)."""

import pytest
import torch

import horde.torch as hvd

needs_two = pytest.mark.skipif(hvd.size() < 2, reason="needs a rank that skips an operation")


def agreed_sum_of_ranks():
    """An unnamed allreduce that pairs correctly only if the numbering agrees."""
    out = hvd.allreduce(torch.full((2,), float(hvd.rank())), op=hvd.Sum)
    return out.tolist() == [float(sum(range(hvd.size())))] * 2


@needs_two
def test_a_rank_that_raises_out_of_a_loop_does_not_shift_the_next_test():
    """As in a test suite: the last rank fails an assertion mid-loop and goes on to the next
    test, which starts with hvd.init(); the others' pending allreduce fails at once instead
    of pairing with the next test's, and then they go on in step."""
    last = hvd.size() - 1
    failure = None
    try:
        for i in range(3):
            if hvd.rank() == last and i == 1:
                raise AssertionError("a check that fails on one rank only")
            hvd.allreduce(torch.ones(3), op=hvd.Sum)
    except AssertionError:
        failure = "assertion"
    except hvd.HordeInternalError as e:
        failure = str(e)
    if hvd.rank() == last:
        assert failure == "assertion"
    else:
        assert failure is not None and "numbered anew" in failure, failure
        assert f"rank {last} has passed" in failure, failure
    hvd.init()  # the next test
    assert agreed_sum_of_ranks()
    assert agreed_sum_of_ranks()


@needs_two
def test_a_barrier_renumbers_and_fails_what_one_rank_skipped():
    handle = None
    if hvd.rank() == 0:
        handle = hvd.allreduce_async(torch.ones(2), op=hvd.Sum)  # no other rank submits it
    hvd.barrier()
    if hvd.rank() == 0:
        with pytest.raises(hvd.HordeInternalError, match="numbered anew"):
            hvd.synchronize(handle)
    assert agreed_sum_of_ranks()


@needs_two
def test_join_renumbers_after_an_allgather_that_failed_on_one_rank():
    """Horovod's test_horovod_join_allgather, then more unnamed operations: rank 0 joins at
    once; the others' allgather fails (it cannot run with a joined rank) and they join.
    join() returns the last rank to join, the same everywhere, and the unnamed collectives
    after it pair up although only some ranks numbered the failed allgather."""
    if hvd.rank() == 0:
        last = hvd.join()
    else:
        with pytest.raises(RuntimeError, match="cannot run while rank 0 has joined"):
            hvd.allgather(torch.ones(3, 4))
        last = hvd.join()
    assert last != 0
    assert hvd.allgather_object(last) == [last] * hvd.size()
    assert agreed_sum_of_ranks()


def test_named_operations_are_unaffected_by_epochs():
    hvd.barrier()
    out = hvd.allreduce(torch.ones(2), name="numbering.named", op=hvd.Sum)
    assert out.tolist() == [float(hvd.size())] * 2
    hvd.init()
    out = hvd.allreduce(torch.ones(2), name="numbering.named", op=hvd.Sum)
    assert out.tolist() == [float(hvd.size())] * 2
