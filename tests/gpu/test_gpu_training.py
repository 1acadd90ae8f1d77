"""DistributedOptimizer and SyncBatchNorm work unchanged on GPU tensors: a training step
of a small CNN (with SyncBatchNorm) on the GPU gives the weights the same step gives on
the CPU, every rank training on its slice of one global batch."""

import copy

import torch
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
    opt = hvd.DistributedOptimizer(opt, named_parameters=[(f"{tag}.{n}", p) for n, p in model.named_parameters()])
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
    on_cpu = train_step(hvd, copy.deepcopy(model), torch.device("cpu"), data[mine], target[mine], "cpu")
    for name in on_cpu:
        torch.testing.assert_close(on_gpu[name], on_cpu[name], rtol=1e-4, atol=1e-5, msg=name)
