"""DistributedOptimizer, SyncBatchNorm and broadcast_optimizer_state work unchanged on GPU
tensors: a training step of a small CNN (with SyncBatchNorm) on the GPU gives the weights
the same step gives on the CPU, every rank training on its slice of one global batch;
SyncBatchNorm on a GPU (float32, and float16 / bfloat16 input whose per-channel counts
exceed float16's range) matches batch norm over the global batch; the root's GPU optimizer
state arrives on every rank's own GPU (its CPU state, Adam's step, on the CPU)."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn


def small_cnn(hvd):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), hvd.SyncBatchNorm(8), nn.ReLU(),
        nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
        nn.Linear(32, 10))


def train_step(hvd, model, device, data, target, tag):
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    named = [(f"{tag}.{n}", p) for n, p in model.named_parameters()]
    opt = hvd.DistributedOptimizer(opt, named_parameters=named)
    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(data.to(device)), target.to(device))
        loss.backward()
        opt.step()
    return {n: p.detach().cpu() for n, p in model.named_parameters()}


def test_cnn_step_on_gpu_matches_cpu(hvd, device):
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    gen = torch.Generator().manual_seed(1)
    data = torch.randn(4 * hvd.size(), 3, 8, 8, generator=gen)
    target = torch.randint(0, 10, (4 * hvd.size(),), generator=gen)
    mine = slice(4 * hvd.rank(), 4 * hvd.rank() + 4)
    model = small_cnn(hvd)
    on_gpu = train_step(hvd, copy.deepcopy(model), device, data[mine], target[mine], "gpu")
    on_cpu = train_step(hvd, copy.deepcopy(model), torch.device("cpu"), data[mine], target[mine],
                        "cpu")
    for name in on_cpu:
        torch.testing.assert_close(on_gpu[name], on_cpu[name], rtol=1e-4, atol=1e-5, msg=name)


# ---------------------------------------------------------------- SyncBatchNorm


def batch_norm_pair(hvd, channels, device, module_dtype=torch.float32):
    """An hvd.SyncBatchNorm on ``device`` (parameters and buffers in ``module_dtype``) and a
    float32 nn.BatchNorm2d on the CPU with the same affine parameters."""
    sync = hvd.SyncBatchNorm(channels, momentum=0.1)
    generator = torch.Generator().manual_seed(5)
    with torch.no_grad():
        sync.weight.copy_(1 + 0.2 * torch.randn(channels, generator=generator))
        sync.bias.copy_(torch.randn(channels, generator=generator))
    sync = sync.to(device=device, dtype=module_dtype)
    reference = nn.BatchNorm2d(channels, momentum=0.1)
    with torch.no_grad():
        reference.weight.copy_(sync.weight.float().cpu())
        reference.bias.copy_(sync.bias.float().cpu())
    return sync, reference


def check_against_reference(hvd, sync, reference, x, grad, mine, tol, buffer_tol, tag):
    """Runs ``sync`` on this rank's rows of x (the global batch, on the CPU) on the GPU and
    the float32 ``reference`` on all of x widened to float32, with upstream gradient
    ``grad``, and compares outputs, input and parameter gradients and running statistics."""
    device = sync.weight.device
    x_ref = x.float().clone().requires_grad_(True)
    y_ref = reference(x_ref)
    y_ref.backward(grad.float())

    x_mine = x[mine].to(device).clone().requires_grad_(True)
    y = sync(x_mine)
    y.backward(grad[mine].to(device))

    assert y.device == device and x_mine.grad.device == device
    assert y.dtype == x.dtype and x_mine.grad.dtype == x.dtype
    assert torch.isfinite(y).all() and torch.isfinite(x_mine.grad).all()
    torch.testing.assert_close(y.float().cpu(), y_ref[mine].detach(), **tol,
                               msg=lambda m: f"{tag} output: {m}")
    torch.testing.assert_close(x_mine.grad.float().cpu(), x_ref.grad[mine], **tol,
                               msg=lambda m: f"{tag} input gradient: {m}")
    for name in ("weight", "bias"):
        local = getattr(sync, name).grad
        assert local.device == device and local.dtype == sync.weight.dtype, name
        summed = hvd.allreduce(local.float(), op=hvd.Sum, name=f"{tag}.{name}.grad").cpu()
        expected = getattr(reference, name).grad
        torch.testing.assert_close(summed, expected, rtol=tol["rtol"],
                                   atol=tol["atol"] * float(expected.abs().max()),
                                   msg=lambda m: f"{tag} {name} gradient: {m}")
    for name in ("running_mean", "running_var"):
        value = getattr(sync, name)
        assert value.device == device and value.dtype == sync.weight.dtype, name
        torch.testing.assert_close(value.float().cpu(), getattr(reference, name), **buffer_tol,
                                   msg=lambda m: f"{tag} {name}: {m}")


def test_sync_batch_norm_on_gpu_matches_batch_norm_on_the_global_batch(hvd, device):
    """Uneven slices: rank r has 3 + r rows. On more than one rank every statistic (the
    counts too) must be made on the input's GPU."""
    rows = [3 + r for r in range(hvd.size())]
    start = sum(rows[:hvd.rank()])
    mine = slice(start, start + rows[hvd.rank()])
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(sum(rows), 4, 5, 6, generator=generator) * 2 + 1
    grad = torch.randn(x.shape, generator=generator)
    sync, reference = batch_norm_pair(hvd, 4, device)
    check_against_reference(hvd, sync, reference, x, grad, mine, dict(rtol=1e-4, atol=1e-5),
                            dict(rtol=1e-4, atol=1e-5), "sbn.gpu.f32")


# Per channel every rank has 8 * 95 * 95 = 72200 values: more than float16's largest
# finite value (65504), and not exact in bfloat16.
@pytest.mark.parametrize("module_dtype", ["float32", "input"],
                         ids=["amp_float32_module", "module_in_input_dtype"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_sync_batch_norm_low_precision_on_gpu(hvd, device, dtype, module_dtype):
    rows, hw, channels = 8, (95, 95), 3
    assert rows * hw[0] * hw[1] > torch.finfo(torch.float16).max
    mine = slice(rows * hvd.rank(), rows * (hvd.rank() + 1))
    generator = torch.Generator().manual_seed(11)
    x = (torch.randn((rows * hvd.size(), channels) + hw, generator=generator) * 2 + 1).to(dtype)
    grad = torch.randn(x.shape, generator=generator).to(dtype)
    sync, reference = batch_norm_pair(hvd, channels, device,
                                      torch.float32 if module_dtype == "float32" else dtype)
    tol = {torch.float16: dict(rtol=2e-3, atol=2e-3),
           torch.bfloat16: dict(rtol=1e-2, atol=1e-2)}[dtype]
    buffer_tol = dict(rtol=1e-3, atol=1e-4) if module_dtype == "float32" else tol
    check_against_reference(hvd, sync, reference, x, grad, mine, tol, buffer_tol,
                            f"sbn.gpu.{dtype}.{module_dtype}")


def test_sync_batch_norm_under_autocast_on_gpu(hvd, device):
    """AMP: a conv in float16 under autocast feeds a float32 SyncBatchNorm (count per
    channel and rank 8 * 96 * 96 > 65504): finite outputs and gradients, float32 running
    statistics."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), hvd.SyncBatchNorm(4), nn.ReLU()).to(device)
    generator = torch.Generator().manual_seed(hvd.rank())
    x = torch.randn(8, 3, 96, 96, generator=generator).to(device) * 3 + 2
    with torch.autocast("cuda", dtype=torch.float16):
        y = model(x)
    assert y.dtype == torch.float16 and torch.isfinite(y).all()
    y.float().pow(3).mean().backward()
    norm = model[1]
    assert norm.running_mean.dtype == norm.running_var.dtype == torch.float32
    assert torch.isfinite(norm.running_mean).all() and torch.isfinite(norm.running_var).all()
    for name, p in model.named_parameters():
        assert p.grad.dtype == torch.float32 and torch.isfinite(p.grad).all(), name


# ---------------------------------------------------------------- broadcast_optimizer_state


def optimizer_on_gpu(kind, r, steps, device):
    """Rank r's model and optimizer, trained ``steps`` steps on the CPU (reproducible on
    every rank) and then moved to ``device``: model.to moves the parameters in place and
    load_state_dict moves the state to them (Adam's step stays on the CPU)."""
    torch.manual_seed(300 + r)
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
    if kind == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * (r + 1), momentum=0.9)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01 * (r + 1))
    generator = torch.Generator().manual_seed(400 + r)
    for _ in range(steps):
        x, y = torch.randn(6, 4, generator=generator), torch.randn(6, 2, generator=generator)
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    cpu_state = copy.deepcopy(optimizer.state_dict())
    model.to(device)
    optimizer.load_state_dict(optimizer.state_dict())
    return model, optimizer, cpu_state


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("others", ["stepped", "fresh"])
def test_broadcast_optimizer_state_on_gpu(hvd, device, kind, others):
    """The root's momentum_buffer / exp_avg / exp_avg_sq live on its GPU; every other rank
    (stepped differently, or never: then it allocates all of them) receives them on the GPU
    of its own parameters. Then every rank steps alike."""
    root = hvd.size() - 1

    def steps(r):
        return 3 if r == root else (r + 2 if others == "stepped" else 0)

    model, optimizer, _ = optimizer_on_gpu(kind, hvd.rank(), steps(hvd.rank()), device)
    hvd.broadcast_parameters(model.state_dict(), root)
    hvd.broadcast_optimizer_state(optimizer, root)
    _, _, expected = optimizer_on_gpu(kind, root, steps(root), torch.device("cpu"))

    got = optimizer.state_dict()
    assert got["param_groups"] == expected["param_groups"]
    assert got["state"].keys() == expected["state"].keys() and got["state"]
    for index, entry in expected["state"].items():
        assert entry.keys() == got["state"][index].keys()
        for key, value in entry.items():
            mine = got["state"][index][key]
            if not torch.is_tensor(value):
                assert mine == value, (index, key)
                continue
            # Adam's step is a CPU tensor next to GPU parameters; the rest follow them.
            assert mine.device == (torch.device("cpu") if key == "step" else device), (index, key)
            assert mine.dtype == value.dtype and torch.equal(mine.cpu(), value), (index, key)

    x = torch.randn(6, 4, generator=torch.Generator().manual_seed(9)).to(device)
    optimizer.zero_grad()
    model(x).pow(2).mean().backward()
    optimizer.step()
    for name, p in model.named_parameters():
        everyone = hvd.allgather(p.detach().reshape(1, -1), name=f"bos.{kind}.{others}.{name}")
        for r in range(hvd.size()):
            torch.testing.assert_close(everyone[r], everyone[root], rtol=1e-6, atol=1e-7,
                                       msg=lambda m: f"{name} on rank {r}: {m}")
