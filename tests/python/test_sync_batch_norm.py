"""hvd.SyncBatchNorm: N ranks, each with its slice of a global batch, behave like
torch.nn.BatchNorm1d/2d on one process with the whole batch: outputs, input gradients,
parameter gradients and running statistics; eval mode uses the running statistics.

Every rank builds the global batch from a seeded generator and runs the reference on it
locally. Slices may be uneven (rank r has BASE + r rows), which the statistics' counts
must account for.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import horde.torch as hvd

BASE = 3
STEPS = 3
TOL = dict(rtol=1e-5, atol=1e-5)
C = 4


def rows(r, uneven):
    return BASE + (r if uneven else 0)


def my_slice(uneven):
    start = sum(rows(q, uneven) for q in range(hvd.rank()))
    return slice(start, start + rows(hvd.rank(), uneven))


# id -> (reference class, trailing dimensions after the channels)
LAYOUTS = {"1d": (nn.BatchNorm1d, ()), "1d_length": (nn.BatchNorm1d, (5,)),
           "2d": (nn.BatchNorm2d, (3, 2))}


def global_input(step, uneven, trailing):
    generator = torch.Generator().manual_seed(17 * step + 3)
    n = sum(rows(q, uneven) for q in range(hvd.size()))
    x = torch.randn((n, C) + trailing, generator=generator) * 2 + 1
    target = torch.randn((n, C) + trailing, generator=generator)
    return x, target


def rank_loss(y, target):
    """A rank's loss on its rows (a sum, and not linear in y, so the upstream gradient
    varies). The reference's loss is the sum over ranks of this, i.e. the same expression
    over the global batch; so the input gradient of each row must match the reference's,
    and the parameter gradients summed over ranks (allreduce Sum) must match too."""
    return (y * target).sum() + 0.1 * (y ** 3).sum()


def make_pair(layout, affine, momentum, track=True):
    reference_cls, _ = LAYOUTS[layout]
    reference = reference_cls(C, affine=affine, momentum=momentum, track_running_stats=track)
    sync = hvd.SyncBatchNorm(C, affine=affine, momentum=momentum, track_running_stats=track)
    if affine:
        generator = torch.Generator().manual_seed(5)
        with torch.no_grad():
            reference.weight.copy_(1 + 0.2 * torch.randn(C, generator=generator))
            reference.bias.copy_(torch.randn(C, generator=generator))
            sync.weight.copy_(reference.weight)
            sync.bias.copy_(reference.bias)
    return sync, reference


CASES = [(layout, affine, momentum, uneven)
         for layout in LAYOUTS for affine in (True, False) for momentum in (0.1, None)
         for uneven in (False, True)
         if layout == "2d" or (affine and momentum == 0.1) or uneven]


@pytest.mark.parametrize("layout,affine,momentum,uneven", CASES,
                         ids=[f"{lay}-{'affine' if a else 'plain'}-m{m}-{'uneven' if u else 'even'}"
                              for lay, a, m, u in CASES])
def test_sync_batch_norm_matches_batch_norm_on_the_global_batch(layout, affine, momentum, uneven):
    _, trailing = LAYOUTS[layout]
    sync, reference = make_pair(layout, affine, momentum)
    mine = my_slice(uneven)
    for step in range(STEPS):
        x, target = global_input(step, uneven, trailing)
        x_ref = x.clone().requires_grad_(True)
        y_ref = reference(x_ref)
        rank_loss(y_ref, target).backward()

        x_mine = x[mine].clone().requires_grad_(True)
        y = sync(x_mine)
        rank_loss(y, target[mine]).backward()

        torch.testing.assert_close(y, y_ref[mine], **TOL, msg=lambda m: f"step {step} output: {m}")
        torch.testing.assert_close(x_mine.grad, x_ref.grad[mine], **TOL,
                                   msg=lambda m: f"step {step} input gradient: {m}")
        if affine:
            for name in ("weight", "bias"):
                summed = hvd.allreduce(getattr(sync, name).grad, name=f"sbn.{name}.{step}",
                                       op=hvd.Sum)
                torch.testing.assert_close(summed, getattr(reference, name).grad, **TOL,
                                           msg=lambda m: f"step {step} {name} gradient: {m}")
                getattr(sync, name).grad = None
                getattr(reference, name).grad = None
        for name in ("running_mean", "running_var"):
            torch.testing.assert_close(getattr(sync, name), getattr(reference, name), **TOL,
                                       msg=lambda m: f"step {step} {name}: {m}")
        assert sync.num_batches_tracked.item() == reference.num_batches_tracked.item() == step + 1

    # Eval mode normalizes with the running statistics, the same on every rank.
    sync.eval()
    reference.eval()
    x, _ = global_input(STEPS, uneven, trailing)
    with torch.no_grad():
        torch.testing.assert_close(sync(x[mine]), reference(x)[mine], **TOL)


def test_without_running_stats_normalizes_with_the_global_batch_in_training():
    sync, reference = make_pair("1d", True, 0.1, track=False)
    assert sync.running_mean is None
    x, _ = global_input(0, True, ())
    mine = my_slice(True)
    torch.testing.assert_close(sync(x[mine]), reference(x)[mine], **TOL)


def test_rejects_one_dimensional_input():
    with pytest.raises(ValueError, match="2D"):
        hvd.SyncBatchNorm(C)(torch.randn(C))


class Net(nn.Module):
    def __init__(self, norm):
        super().__init__()
        torch.manual_seed(21)
        self.first = nn.Conv2d(2, C, 3, padding=1)
        self.norm = norm
        self.last = nn.Linear(C, 2)

    def forward(self, x):
        return self.last(torch.relu(self.norm(self.first(x))).mean((2, 3)))


@pytest.mark.parametrize("momentum", [0.1, None])
def test_training_with_distributed_optimizer(momentum):
    """Conv -> SyncBatchNorm -> Linear, trained with DistributedOptimizer (which averages
    the local parameter gradients) on even slices with a mean loss, matches the same
    network with BatchNorm2d trained on the global batch's mean loss."""
    model = Net(hvd.SyncBatchNorm(C, momentum=momentum))
    reference = Net(nn.BatchNorm2d(C, momentum=momentum))
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters())
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    mine = my_slice(False)
    for step in range(STEPS):
        generator = torch.Generator().manual_seed(300 + step)
        n = BASE * hvd.size()
        x, y = torch.randn(n, 2, 5, 5, generator=generator), torch.randn(n, 2, generator=generator)
        optimizer.zero_grad()
        F.mse_loss(model(x[mine]), y[mine]).backward()
        optimizer.step()
        reference_optimizer.zero_grad()
        F.mse_loss(reference(x), y).backward()
        reference_optimizer.step()
    for (name, value), expected in zip(model.state_dict().items(), reference.state_dict().values()):
        if value.is_floating_point():
            torch.testing.assert_close(value, expected, **TOL, msg=lambda m: f"{name}: {m}")
        else:
            assert torch.equal(value, expected), name


# ---------------------------------------------------------------- float16 / bfloat16 input

# Per channel, every rank has LOW_ROWS * H * W = 72200 values, more than float16's largest
# finite value (65504): a count or a sum kept in float16 overflows, and bfloat16 cannot
# even represent the count exactly. Statistics must be computed in float32.
LOW_ROWS, LOW_HW, LOW_C = 8, (95, 95), 3
# A few times the rounding of one value to the dtype (measured: up to 5e-4 relative in
# float16, 4e-3 in bfloat16).
LOW_TOL = {torch.float16: dict(rtol=2e-3, atol=2e-3), torch.bfloat16: dict(rtol=1e-2, atol=1e-2)}


def cpu_batch_norm_supports(dtype):
    """Whether torch's own batch_norm runs on this dtype on the CPU (torch 1.13 has no
    float16 CPU kernel); on one rank hvd.SyncBatchNorm is that batch_norm."""
    try:
        F.batch_norm(torch.ones(2, 1, dtype=dtype), None, None, training=True)
        return True
    except RuntimeError:
        return False


@pytest.mark.parametrize("module_dtype", ["float32", "input"],
                         ids=["amp_float32_module", "module_in_input_dtype"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_low_precision_input_uses_float32_statistics(dtype, module_dtype):
    """A float16 / bfloat16 input (AMP keeps the module in float32; model.half() converts
    it too) gives finite outputs and gradients in the input's dtype that match float32
    batch norm over the global batch (the same low-precision values, widened), and
    running statistics that keep the buffers' dtype."""
    if hvd.size() == 1 and not cpu_batch_norm_supports(dtype):
        pytest.skip(f"on one rank SyncBatchNorm is torch's batch_norm, which has no CPU kernel "
                    f"for {dtype} in torch {torch.__version__}")
    assert LOW_ROWS * LOW_HW[0] * LOW_HW[1] > torch.finfo(torch.float16).max
    sync = hvd.SyncBatchNorm(LOW_C, momentum=0.1)
    generator = torch.Generator().manual_seed(11)
    with torch.no_grad():
        sync.weight.copy_(1 + 0.2 * torch.randn(LOW_C, generator=generator))
        sync.bias.copy_(torch.randn(LOW_C, generator=generator))
    if module_dtype == "input":
        sync = sync.to(dtype)
    param_dtype = sync.weight.dtype
    reference = nn.BatchNorm2d(LOW_C, momentum=0.1)
    with torch.no_grad():
        reference.weight.copy_(sync.weight.float())
        reference.bias.copy_(sync.bias.float())

    n = LOW_ROWS * hvd.size()
    x = (torch.randn((n, LOW_C) + LOW_HW, generator=generator) * 2 + 1).to(dtype)
    grad = torch.randn((n, LOW_C) + LOW_HW, generator=generator).to(dtype)
    mine = slice(LOW_ROWS * hvd.rank(), LOW_ROWS * (hvd.rank() + 1))

    x_ref = x.float().requires_grad_(True)
    y_ref = reference(x_ref)
    y_ref.backward(grad.float())

    x_mine = x[mine].clone().requires_grad_(True)
    y = sync(x_mine)
    y.backward(grad[mine])

    tol = LOW_TOL[dtype]
    assert y.dtype == dtype and x_mine.grad.dtype == dtype
    assert torch.isfinite(y).all() and torch.isfinite(x_mine.grad).all()
    torch.testing.assert_close(y.float(), y_ref[mine].detach(), **tol, msg=lambda m: f"output: {m}")
    torch.testing.assert_close(x_mine.grad.float(), x_ref.grad[mine], **tol,
                               msg=lambda m: f"input gradient: {m}")
    for name in ("weight", "bias"):
        local = getattr(sync, name).grad
        assert local.dtype == param_dtype and torch.isfinite(local).all(), name
        summed = hvd.allreduce(local.float(), name=f"sbn.low.{name}", op=hvd.Sum)
        expected = getattr(reference, name).grad
        # Sums of ~1e5 terms each: compare relative to their size.
        torch.testing.assert_close(summed, expected, rtol=tol["rtol"],
                                   atol=tol["atol"] * float(expected.abs().max()),
                                   msg=lambda m: f"{name} gradient: {m}")
    # float32 buffers get the float32 statistics: as close as float32 sums in another
    # order, which statistics accumulated in float16 / bfloat16 would not be.
    buffer_tol = dict(rtol=1e-4, atol=1e-5) if param_dtype == torch.float32 else tol
    for name in ("running_mean", "running_var"):
        value = getattr(sync, name)
        assert value.dtype == param_dtype and torch.isfinite(value).all(), name
        torch.testing.assert_close(value.float(), getattr(reference, name), **buffer_tol,
                                   msg=lambda m: f"{name}: {m}")


def test_a_sync_batch_norm_training_loop_runs_on_the_fast_path_after_its_first_step():
    """SyncBatchNorm's reductions are named by what they carry, not numbered per call, so
    from the second step on every negotiation is a response-cache hit: no slow rounds."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), hvd.SyncBatchNorm(8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 3), hvd.SyncBatchNorm(3))
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                         named_parameters=model.named_parameters())
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(hvd.rank()))

    def step():
        optimizer.zero_grad()
        model(x).pow(2).sum().backward()
        optimizer.step()

    step()
    step()
    before = hvd.runtime_stats()
    for _ in range(5):
        step()
    after = hvd.runtime_stats()
    assert after["slow_rounds"] == before["slow_rounds"]
    # Per step: the 8 gradients' reductions and, with more than one rank, two layers x
    # (sums, squares, grads).
    per_step = 8 + (6 if hvd.size() > 1 else 0)
    assert after["cache_hits"] - before["cache_hits"] >= 5 * per_step


def test_an_unnamed_broadcast_object_every_step_stays_on_the_fast_path():
    hvd.broadcast_object({"step": 7}, root_rank=0)  # its first time is negotiated
    before = hvd.runtime_stats()
    for step in range(5):
        got = hvd.broadcast_object({"step": 7} if hvd.rank() == 0 else None, root_rank=0)
        assert got == {"step": 7}
    after = hvd.runtime_stats()
    assert after["slow_rounds"] == before["slow_rounds"]
    assert after["cache_hits"] - before["cache_hits"] >= 10
