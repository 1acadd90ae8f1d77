"""grouped_allgather and grouped_reducescatter (lists negotiated as one unit, and their
gradients), barrier, and these collectives while a rank has joined."""

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import torch

import horde.torch as hvd
from _child_job import CHILD_PRELUDE

MPIRUN_2 = [str(Path(__file__).resolve().parents[2] / "scripts" / "mpirun.sh"), "-np", "2"]

needs_two_ranks = pytest.mark.skipif(hvd.size() < 2, reason="needs at least 2 ranks")

# Member shapes; allgather members have first dimension rank + i (differing per rank).
TRAILING = [(), (3,), (2, 2)]
DTYPES = [torch.float32, torch.int64, torch.float16]


def gather_contributions(rank_tensor):
    """[rank][member]: every rank's members, so each rank can compute the result."""
    return [[rank_tensor(r * 10 + i, (r + i,) + trailing, dtype, -8, 8)
             for i, (trailing, dtype) in enumerate(zip(TRAILING, DTYPES))]
            for r in range(hvd.size())]


@pytest.mark.parametrize("form", ["grouped_allgather", "grouped_allgather_async"])
def test_grouped_allgather(rank_tensor, form):
    every = gather_contributions(rank_tensor)
    result = getattr(hvd, form)(every[hvd.rank()], name=f"grouped.{form}")
    if form.endswith("_async"):
        assert isinstance(result, int)
        result = hvd.synchronize(result)
    assert isinstance(result, list) and len(result) == len(TRAILING)
    for i, gathered in enumerate(result):
        assert torch.equal(gathered, torch.cat([every[r][i] for r in range(hvd.size())]))


def rows_of(rank, first_dim):
    base, extra = divmod(first_dim, hvd.size())
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


@pytest.mark.parametrize("form", ["grouped_reducescatter", "grouped_reducescatter_async"])
@pytest.mark.parametrize("op_name,prescale,postscale",
                         [("Sum", 1.0, 1.0), ("Average", 1.0, 1.0), ("Sum", 2.0, 0.5)])
def test_grouped_reducescatter(rank_tensor, form, op_name, prescale, postscale):
    shapes = [(hvd.size() + 1,), (2 * hvd.size(), 3), (1, 2)]
    every = [[rank_tensor(r * 10 + i, shape, torch.float64, -2, 2)
              for i, shape in enumerate(shapes)]
             for r in range(hvd.size())]
    result = getattr(hvd, form)(every[hvd.rank()], name=f"grouped.{form}.{op_name}.{prescale}",
                                op=getattr(hvd, op_name), prescale_factor=prescale,
                                postscale_factor=postscale)
    if form.endswith("_async"):
        result = hvd.synchronize(result)
    assert len(result) == len(shapes)
    for i, scattered in enumerate(result):
        total = sum(every[r][i] for r in range(hvd.size())) * prescale * postscale
        if op_name == "Average":
            total = total / hvd.size()
        start, end = rows_of(hvd.rank(), shapes[i][0])
        torch.testing.assert_close(scattered, total[start:end])


def test_grouped_forms_reject_an_empty_list():
    with pytest.raises(ValueError, match="grouped allgather needs a non-empty list of tensors"):
        hvd.grouped_allgather([])
    with pytest.raises(ValueError, match="grouped reducescatter needs a non-empty list of tensors"):
        hvd.grouped_reducescatter([])


def test_grouped_reducescatter_member_errors_fail_the_whole_group_at_submit():
    with pytest.raises(ValueError, match="a scalar has no first dimension to split"):
        hvd.grouped_reducescatter([torch.ones(2), torch.tensor(1.0)], name="grouped.rs.bad")
    # Nothing of the group was queued: the same name works at once.
    result = hvd.grouped_reducescatter([torch.ones(hvd.size())], name="grouped.rs.bad", op=hvd.Sum)
    assert torch.equal(result[0], torch.full((1,), float(hvd.size())))


def test_grouped_allgather_gradient(rank_tensor):
    weights = [[rank_tensor(r * 10 + i, (sum(q + i for q in range(hvd.size())),) + trailing,
                            torch.float64, -2, 2)
                for i, trailing in enumerate(TRAILING)] for r in range(hvd.size())]
    me = hvd.rank()
    mine = [torch.ones((me + i,) + trailing, dtype=torch.float64, requires_grad=True)
            for i, trailing in enumerate(TRAILING)]
    gathered = hvd.grouped_allgather(mine, name="grouped.allgather.grad")
    sum((g * w).sum() for g, w in zip(gathered, weights[me])).backward()
    for i, tensor in enumerate(mine):
        offset = sum(q + i for q in range(me))
        averaged = sum(weights[r][i] for r in range(hvd.size())) / hvd.size()
        torch.testing.assert_close(tensor.grad, averaged[offset:offset + me + i])


def test_grouped_reducescatter_gradient(rank_tensor):
    d = hvd.size() + 1
    me = hvd.rank()
    weights = [rank_tensor(r, (rows_of(r, d)[1] - rows_of(r, d)[0], 2), torch.float64, -2, 2)
               for r in range(hvd.size())]
    mine = [torch.ones(d, 2, dtype=torch.float64, requires_grad=True) for _ in range(2)]
    outputs = hvd.grouped_reducescatter(mine, name="grouped.reducescatter.grad", op=hvd.Average,
                                        prescale_factor=3.0)
    (outputs[0] * weights[me]).sum().backward()
    # Horovod's rule for Average: the allgathered gradient times the scale factors.
    torch.testing.assert_close(mine[0].grad, torch.cat(weights) * 3.0)
    assert mine[1].grad is None or torch.count_nonzero(mine[1].grad) == 0


def test_barrier_orders_with_earlier_collectives():
    """Operations submitted before the barrier are negotiated first and run first, so
    once barrier() returns they are complete."""
    handles = [hvd.allreduce_async(torch.ones(8), name=f"barrier.before.{i}", op=hvd.Sum)
               for i in range(3)]
    hvd.barrier()
    assert all(hvd.poll(h) for h in handles)
    for h in handles:
        assert torch.equal(hvd.synchronize(h), torch.full((8,), float(hvd.size())))


def test_barrier_waits_for_every_rank():
    """Rank 0 writes a file just before its barrier; the others check it after theirs.
    (Rank 0 is made late by a sleep: a barrier that did not wait would be caught, one
    that waits passes whatever the timing.) The folder is rank 0's: pytest's tmp_path
    folders of several ranks would race in their clean-up."""
    folder = tempfile.mkdtemp() if hvd.rank() == 0 else None
    path = hvd.broadcast_object(os.path.join(folder, "reached") if folder else None,
                                root_rank=0, name="barrier.path")
    if hvd.rank() == 0:
        time.sleep(0.3)
        open(path, "w").close()
    hvd.barrier()
    assert os.path.exists(path)
    hvd.barrier()  # no rank leaves before every rank has looked
    if folder:
        shutil.rmtree(folder)


def test_barrier_many_times_unnamed():
    for _ in range(20):
        hvd.barrier()


@needs_two_ranks
@pytest.mark.parametrize("collective", ["alltoall", "reducescatter", "grouped_allgather"])
def test_new_collectives_fail_clearly_while_a_rank_has_joined(collective):
    """Rank 0 joins at once; the others' operation fails on them instead of waiting for
    it, and their collectives work again once all have joined."""
    name = f"join.forbidden.{collective}"
    if hvd.rank() == 0:
        last = hvd.join()
    else:
        run = {
            "alltoall": lambda: hvd.alltoall(torch.ones(hvd.size()), name=name),
            "reducescatter": lambda: hvd.reducescatter(torch.ones(hvd.size()), name=name),
            "grouped_allgather": lambda: hvd.grouped_allgather([torch.ones(1)], name=name),
        }[collective]
        with pytest.raises(hvd.HordeInternalError) as error:
            run()
        message = str(error.value)
        op = "allgather" if collective == "grouped_allgather" else collective
        assert f"{op} '" in message and "cannot run while rank 0 has joined" in message, message
        last = hvd.join()
    assert 1 <= last < hvd.size()
    after = hvd.alltoall(torch.arange(hvd.size()), name=f"{name}.after")
    assert after.tolist() == [hvd.rank()] * hvd.size()


@pytest.mark.skipif(hvd.size() != 1, reason="starts its own 2-rank job: only in the 1-rank run")
def test_barrier_fails_clearly_while_a_rank_has_joined(run_python):
    """As above, for barrier. In a job of its own: barriers are numbered per rank (they have
    no name), and the failed one leaves rank 1 a barrier ahead of rank 0 for good."""
    out = run_python(CHILD_PRELUDE + """
if rank == 0:
    last = within(20, hvd.join)
else:
    try:
        within(20, hvd.barrier)
        say("error: none")
    except hvd.HordeInternalError as e:
        say("error: " + str(e))
    last = within(20, hvd.join)
say(f"last joined: {last}")
""", launcher=MPIRUN_2)
    assert ("rank 1: error: barrier 'barrier.noname.0' cannot run while rank 0 has joined; "
            "only allreduce proceeds with joined ranks") in out, out
    for r in (0, 1):
        assert f"rank {r}: last joined: 1" in out, out
