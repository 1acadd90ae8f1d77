"""hvd.join() for uneven data: rank r has r + 2 batches. A rank that runs out joins; the
others' allreduces complete with the joined ranks contributing zeros (Average still
divides by size()), and join returns the last rank to join, the same on every rank."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import horde.torch as hvd
from _child_job import CHILD_PRELUDE, mpirun

needs_two_ranks = pytest.mark.skipif(hvd.size() < 2, reason="needs at least 2 ranks")


def batches(r):
    return r + 2


def active_ranks(i):
    """The ranks that still have batch i."""
    return [q for q in range(hvd.size()) if i < batches(q)]


def assert_same_on_every_rank(value, name):
    values = hvd.allgather(torch.tensor([value], dtype=torch.int64), name=name)
    assert values.tolist() == [value] * hvd.size()


def assert_collectives_work(prefix):
    """After a join every rank takes part again, in every kind of collective."""
    total = hvd.allreduce(torch.full((3,), hvd.rank() + 1.0), name=f"{prefix}.allreduce",
                          op=hvd.Sum)
    assert torch.equal(total, torch.full((3,), hvd.size() * (hvd.size() + 1) / 2))
    gathered = hvd.allgather(torch.tensor([hvd.rank()]), name=f"{prefix}.allgather")
    assert gathered.tolist() == list(range(hvd.size()))
    root = hvd.size() - 1
    received = hvd.broadcast(torch.tensor([hvd.rank()]), root, name=f"{prefix}.broadcast")
    assert received.item() == root


@pytest.mark.parametrize("dtype,op_name", [(torch.float32, "Sum"), (torch.float64, "Average"),
                                           (torch.int32, "Sum"), (torch.float32, "Average")],
                         ids=["float32-Sum", "float64-Average", "int32-Sum", "float32-Average"])
@pytest.mark.parametrize("form", ["allreduce", "allreduce_async_"])
def test_allreduce_with_joined_ranks(rank_tensor, dtype, op_name, form):
    op = getattr(hvd, op_name)
    contributions = {(q, i): rank_tensor(q * 100 + i, (5, 2), dtype, -50, 50)
                     for q in range(hvd.size()) for i in range(batches(q))}
    for i in range(batches(hvd.rank())):
        name = f"join.{form}.{dtype}.{op_name}.{i}"
        mine = contributions[(hvd.rank(), i)].clone()
        if form == "allreduce":
            result = hvd.allreduce(mine, name=name, op=op)
        else:
            result = hvd.synchronize(hvd.allreduce_async_(mine, name=name, op=op))
            assert result is mine
        expected = sum(contributions[(q, i)].to(torch.float64) for q in active_ranks(i))
        if op_name == "Average":
            expected = expected / hvd.size()  # joined ranks count: zeros, over size()
        if dtype.is_floating_point:
            torch.testing.assert_close(result, expected.to(dtype), msg=lambda m: f"batch {i}: {m}")
        else:
            assert torch.equal(result, expected.to(dtype)), f"batch {i}"
    last = hvd.join()
    assert last == hvd.size() - 1  # the rank with the most batches joins last
    assert_same_on_every_rank(last, f"join.{form}.{dtype}.{op_name}.last")
    assert_collectives_work(f"join.{form}.{dtype}.{op_name}.after")


def test_join_with_nothing_to_do_and_twice_in_a_row():
    first = hvd.join()
    assert 0 <= first < hvd.size()
    assert_same_on_every_rank(first, "join.twice.first")
    second = hvd.join()
    assert 0 <= second < hvd.size()
    assert_same_on_every_rank(second, "join.twice.second")
    assert_collectives_work("join.twice.after")


@pytest.mark.parametrize("device", [-2, 1.5, "cuda:0", None, True, torch.device("meta")],
                         ids=["minus-2", "float", "str", "None", "bool", "meta-device"])
def test_join_rejects_a_bad_device(device):
    """Raises on the calling rank before anything is submitted, so no rank waits."""
    with pytest.raises(ValueError) as error:
        hvd.join(device=device)
    message = str(error.value)
    assert f"got {device!r}" in message, message
    assert "an int >= -1" in message and "torch.device of type cuda or cpu" in message, message
    assert_collectives_work(f"join.bad_device.{device}.after")


@pytest.mark.parametrize("device", [-1, torch.device("cpu")], ids=["minus-1", "cpu-device"])
def test_join_with_no_gpu_device(device):
    last = hvd.join(device=device)
    assert 0 <= last < hvd.size()
    assert_same_on_every_rank(last, f"join.no_gpu.{device}.last")


B = 3


def make_model():
    torch.manual_seed(11)
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))


def batch(q, i):
    generator = torch.Generator().manual_seed(1000 * q + i)
    return torch.randn(B, 4, generator=generator), torch.randn(B, 2, generator=generator)


OPTIMIZERS = {"sgd_momentum": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
              "adam": lambda ps: torch.optim.Adam(ps, lr=0.01)}


@pytest.mark.parametrize("optimizer_name", list(OPTIMIZERS))
def test_distributed_optimizer_with_uneven_batches(optimizer_name):
    """Step i averages the active ranks' gradients over size(): the reference steps on
    sum over active ranks q of mean_loss(q, i), divided by size()."""
    model, reference = make_model(), make_model()
    optimizer = hvd.DistributedOptimizer(OPTIMIZERS[optimizer_name](model.parameters()),
                                         named_parameters=model.named_parameters())
    reference_optimizer = OPTIMIZERS[optimizer_name](reference.parameters())
    reference_after = []  # the reference's weights after each step
    for i in range(batches(hvd.size() - 1)):
        reference_optimizer.zero_grad()
        (sum(F.mse_loss(reference(x), y) for x, y in (batch(q, i) for q in active_ranks(i)))
         / hvd.size()).backward()
        reference_optimizer.step()
        reference_after.append([p.detach().clone() for p in reference.parameters()])

    for i in range(batches(hvd.rank())):
        x, y = batch(hvd.rank(), i)
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    last = hvd.join()
    assert last == hvd.size() - 1
    for p, p_ref in zip(model.parameters(), reference_after[batches(hvd.rank()) - 1]):
        torch.testing.assert_close(p.detach(), p_ref, rtol=1e-5, atol=1e-5)
    # The usual end of an uneven epoch: everyone takes the last rank's weights.
    hvd.broadcast_parameters(model.state_dict(), last)
    for p, p_ref in zip(model.parameters(), reference_after[-1]):
        torch.testing.assert_close(p.detach(), p_ref, rtol=1e-5, atol=1e-5)
    assert_collectives_work(f"join.optimizer.{optimizer_name}.after")


@needs_two_ranks
@pytest.mark.parametrize("collective", ["broadcast", "allgather"])
def test_only_allreduce_proceeds_while_a_rank_has_joined(collective):
    """Rank 0 joins at once; the others' broadcast or allgather must fail on them (joined
    ranks hold no tensor to gather or broadcast), while their allreduce still works."""
    name = f"join.forbidden.{collective}"
    if hvd.rank() == 0:
        last = hvd.join()
    else:
        if collective == "broadcast":
            handle = hvd.broadcast_async(torch.ones(3), hvd.size() - 1, name=name)
        else:
            handle = hvd.allgather_async(torch.ones(2, 3), name=name)
        with pytest.raises(hvd.HordeInternalError) as error:
            hvd.synchronize(handle)
        message = str(error.value)
        assert f"{collective} '{name}' cannot run while rank 0 has joined" in message, message
        assert "only allreduce proceeds with joined ranks" in message, message
        total = hvd.allreduce(torch.ones(2), name=f"{name}.allreduce", op=hvd.Sum)
        assert torch.equal(total, torch.full((2,), hvd.size() - 1.0))
        last = hvd.join()
    assert 1 <= last < hvd.size()
    assert_same_on_every_rank(last, f"{name}.last")
    assert_collectives_work(f"{name}.after")


@pytest.mark.skipif(hvd.size() != 1, reason="starts its own 2-rank job: only in the 1-rank run")
def test_grouped_reductions_after_an_uneven_epoch(run_python):
    """DistributedOptimizer(num_groups=2) over an uneven epoch, join, then a second epoch.
    Rank 1 ran one more step, so one more pair of grouped allreduces, than rank 0: the
    next epoch's groups must still match by name. (Observed: "ranks disagree on the group
    of allreduce 'grad.group.1.0': group 4 on rank 0; group 6 on rank 1" -- the core
    compares per-rank sequence numbers of grouped submissions across ranks.) Run in a
    child job: while it fails, every later grouped allreduce of the job fails too."""
    out = run_python(CHILD_PRELUDE + """
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                     named_parameters=model.named_parameters(), num_groups=2)
try:
    for epoch in range(2):
        for i in range(rank + 2):
            optimizer.zero_grad()
            model(torch.randn(2, 3)).pow(2).mean().backward()
            within(10, optimizer.step)
        say(f"epoch {epoch} last joined {within(10, hvd.join)}")
    grouped = within(10, lambda: hvd.grouped_allreduce([torch.ones(2), torch.ones(3)], name="after",
                                                       op=hvd.Sum))
    say(f"grouped after join: {[t.tolist() for t in grouped]}")
except hvd.HordeInternalError as e:
    say(f"HordeInternalError: {e}")
""", launcher=mpirun(2))
    for r in (0, 1):
        assert f"rank {r}: epoch 1 last joined 1" in out, out
        assert f"rank {r}: grouped after join: [[2.0, 2.0], [2.0, 2.0, 2.0]]" in out, out
