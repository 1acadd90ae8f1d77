"""DistributedOptimizer(gradient_as_bucket_view=True): gradients are views into flat
buckets that backward fills in place and one allreduce per bucket reduces in place.
Training must be identical to the copying path; the views must survive zero_grad."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import horde.torch as hvd


def make_model():
    torch.manual_seed(99)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 2))


def train(steps, set_to_none, **kwargs):
    model = make_model()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                         named_parameters=model.named_parameters(), **kwargs)
    generator = torch.Generator().manual_seed(5 + hvd.rank())
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=set_to_none)
        x = torch.randn(8, 6, generator=generator)
        F.cross_entropy(model(x), (x.sum(1) > 0).long()).backward()
        optimizer.step()
    return model, optimizer


@pytest.mark.parametrize("set_to_none", [False, True])
def test_bucket_views_train_exactly_like_the_copying_path(set_to_none):
    copied, _ = train(6, set_to_none)
    before = hvd.runtime_stats()
    viewed, optimizer = train(6, set_to_none, gradient_as_bucket_view=True, bucket_cap_mb=1e-3)
    after = hvd.runtime_stats()
    for (name, a), b in zip(copied.named_parameters(), viewed.parameters()):
        assert torch.equal(a, b), name
    buckets = optimizer._reducer.buckets()
    assert len(buckets) > 1
    # One allreduce per bucket and step, nothing fused around them, and (with more than
    # one rank) the one that tells every rank whether any rank's step failed.
    outcome = 1 if hvd.size() > 1 else 0
    assert after["allreduce_tensors"] - before["allreduce_tensors"] == 6 * (len(buckets) + outcome)
    params = [p for p in viewed.parameters()]
    for buffer, members in buckets:
        start = buffer.data_ptr()
        end = start + buffer.numel() * buffer.element_size()
        for i in members:
            assert start <= params[i].grad.data_ptr() < end, "a gradient is a view into its bucket"


def test_zero_grad_zeros_the_buckets_and_keeps_the_views():
    model, optimizer = train(1, False, gradient_as_bucket_view=True)
    optimizer.zero_grad(set_to_none=True)
    for p in model.parameters():
        assert p.grad is not None and not p.grad.any()
    p0 = next(model.parameters())
    # A user's replacement is copied back into the view when its gradient is ready.
    p0.grad = torch.ones_like(p0)
    x = torch.randn(8, 6)
    (0 * model(x).sum()).backward()
    optimizer.synchronize()
    buffer, members = optimizer._reducer.buckets()[-1]
    assert 0 in members, "backward fills the first parameter's bucket last"
    start = buffer.data_ptr()
    assert start <= p0.grad.data_ptr() < start + buffer.numel() * buffer.element_size()
    assert p0.grad.eq(1).all()


def test_bucket_views_refuse_compression_and_groups():
    model = make_model()
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="cannot be combined with compression or groups"):
        hvd.DistributedOptimizer(sgd, gradient_as_bucket_view=True,
                                 compression=hvd.Compression.fp16)
    with pytest.raises(ValueError, match="cannot be combined with compression or groups"):
        hvd.DistributedOptimizer(sgd, gradient_as_bucket_view=True, num_groups=2)
    with pytest.raises(ValueError, match="bucket_cap_mb must be positive"):
        hvd.DistributedOptimizer(sgd, gradient_as_bucket_view=True, bucket_cap_mb=0)
