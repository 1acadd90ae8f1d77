"""Horovod training-script patterns against horde through ``import horovod.torch``:
DistributedOptimizer (its options, synchronize/skip_synchronize, warnings, sparse
gradients), broadcasting model and optimizer state, SyncBatchNorm. Modeled on Horovod's
test_torch.py; results are checked against what Horovod gives."""

import inspect
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import horovod.torch as hvd

N, D_IN, H, D_OUT = 64, 100, 10, 10


def mlp():
    return nn.Sequential(nn.Linear(D_IN, H), nn.ReLU(), nn.Linear(H, D_OUT))


def data():
    torch.manual_seed(hvd.rank())
    return torch.randn(N, D_IN), torch.randn(N, D_OUT)


def distributed_sgd():
    hvd.init()
    model = mlp()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    return model, optimizer


def backward(model, optimizer):
    x, y = data()
    optimizer.zero_grad()
    F.mse_loss(model(x), y).backward()


def same_on_every_rank(tensors):
    gathered = hvd.allgather_object([t.detach() for t in tensors])
    return all(torch.equal(a, b) for other in gathered for a, b in zip(gathered[0], other))


def torch_optimizers():
    """As Horovod's test_broadcast_state: every torch.optim optimizer but LBFGS and
    SparseAdam, sorted so that every rank walks them in the same order."""
    found = [(c.__name__, c) for c in torch.optim.Optimizer.__subclasses__()
             if c.__module__.startswith("torch.optim")
             and c not in (torch.optim.LBFGS, torch.optim.SparseAdam)]
    return sorted(found)


def new_optimizer(cls, params, options):
    accepted = inspect.signature(cls.__init__).parameters
    return cls(params, **{k: v for k, v in options.items() if k in accepted})


def test_distributed_optimizer_is_the_users_class_and_trains_in_step():
    hvd.init()
    model = mlp()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    assert isinstance(optimizer, torch.optim.SGD)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    x, y = data()
    for _ in range(3):
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    assert same_on_every_rank(list(model.parameters()))


@pytest.mark.parametrize("opt_name,opt_class", torch_optimizers())
def test_broadcast_state(opt_name, opt_class):
    """Rank 0 loads a stepped optimizer from a checkpoint, the others start fresh; after
    broadcast_optimizer_state every rank has rank 0's state, with the same value types."""
    hvd.init()
    options = dict(lr=0.1, momentum=0.9, weight_decay=0.1, nesterov=True, betas=(0.9, 0.999))
    model = mlp()
    checkpoint = new_optimizer(opt_class, model.parameters(), options)
    if hvd.rank() == 0:
        x, y = data()
        checkpoint.zero_grad()
        F.mse_loss(model(x), y, reduction="sum").backward()
        checkpoint.step()
    optimizer = hvd.DistributedOptimizer(new_optimizer(opt_class, model.parameters(), options),
                                         named_parameters=model.named_parameters())
    if hvd.rank() == 0:
        optimizer.load_state_dict(checkpoint.state_dict())
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    state = optimizer.state_dict()["state"]
    expected = hvd.broadcast_object(len(state))
    assert len(state) == expected
    values = [v for entry in state.values() for _, v in sorted(entry.items())]
    root_values = hvd.broadcast_object(values, root_rank=0)
    for mine, root in zip(values, root_values):
        assert type(mine) is type(root)
        assert torch.equal(mine, root) if torch.is_tensor(mine) else mine == root


def test_broadcast_state_options():
    """Rank 0's hyperparameters, with their Python types, reach every rank; stepping with
    them afterwards works."""
    hvd.init()
    params_0 = dict(lr=0.1, momentum=0.8, weight_decay=0.2, nesterov=True, betas=(0.9, 0.999),
                    etas=(0.8, 2.4), step_sizes=(1e-5, 100))
    params_1 = dict(lr=0.2, momentum=0.9, weight_decay=0.1, nesterov=False, betas=(0.8, 0.9),
                    etas=(0.25, 1.75), step_sizes=(1e-7, 5))
    x, y = data()
    for _, opt_class in torch_optimizers():
        model = mlp()
        options = params_0 if hvd.rank() == 0 else params_1
        optimizer = hvd.DistributedOptimizer(new_optimizer(opt_class, model.parameters(), options),
                                             named_parameters=model.named_parameters())
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)
        accepted = inspect.signature(opt_class.__init__).parameters
        for key, value in params_0.items():
            if key not in accepted:
                continue
            actual = optimizer.param_groups[0][key]
            pairs = zip(actual, value) if isinstance(value, tuple) else [(actual, value)]
            for got, wanted in pairs:
                assert type(got) is type(wanted), (opt_class.__name__, key)
                assert abs(got - wanted) < 1e-5, (opt_class.__name__, key)
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()


def test_gradient_clipping_with_skip_synchronize():
    model, optimizer = distributed_sgd()
    backward(model, optimizer)
    optimizer.synchronize()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    clipped = [p.grad.clone() for p in model.parameters()]
    with optimizer.skip_synchronize():
        optimizer.step()
    assert all(torch.equal(p.grad, c) for p, c in zip(model.parameters(), clipped))


def test_synchronize_step_warning():
    model, optimizer = distributed_sgd()
    backward(model, optimizer)
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        optimizer.step()
    assert len(ws) == 0
    backward(model, optimizer)
    optimizer.synchronize()
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        optimizer.step()
    assert len(ws) == 1
    assert "optimizer.step() called without optimizer.skip_synchronize()" in str(ws[0].message)


def test_named_parameters_errors_are_value_errors():
    hvd.init()
    model = mlp()
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=list(model.named_parameters())[1:])
    duplicated = [("same", p) for _, p in model.named_parameters()]
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=duplicated)


def test_no_named_parameters_and_unused_parameters():
    """No names given; one layer is used on rank 0 only (the others reduce zeros for it)."""
    hvd.init()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.sometimes = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            return self.sometimes(self.used(x)) if hvd.rank() == 0 else self.used(x)

    model = Net()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    for _ in range(2):
        optimizer.zero_grad()
        model(torch.ones(3, 4)).sum().backward()
        optimizer.step()
    assert same_on_every_rank(list(model.parameters()))


def test_gradient_aggregation_backward_passes_per_step():
    hvd.init()
    model = mlp()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters(),
                                         backward_passes_per_step=2)
    x, y = data()
    optimizer.zero_grad()
    F.mse_loss(model(x[:32]), y[:32]).backward()
    F.mse_loss(model(x[32:]), y[32:]).backward()
    optimizer.step()
    assert same_on_every_rank(list(model.parameters()))


def test_broadcast_state_no_grad():
    class ModelNoGrad(nn.Module):
        def __init__(self, a, b):
            super().__init__()
            self.a = nn.Parameter(a.int(), requires_grad=False)
            self.b = nn.Parameter(b)

        def forward(self, x):
            return torch.index_select(self.b, 0, self.a.long()) * x

    hvd.init()
    model = ModelNoGrad(torch.Tensor([1, 3]), torch.rand(4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, weight_decay=1e-6, momentum=0.9,
                                nesterov=True)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    grad = optimizer.param_groups[0]["params"][1].grad
    bgrad = hvd.broadcast(grad, root_rank=0)
    assert optimizer.param_groups[0]["params"][0].grad is None
    assert torch.all(torch.eq(grad, bgrad)).item()


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_sparse_embeddings(sparse_as_dense):
    hvd.init()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(10, 3, sparse=True)

        def forward(self, x):
            return self.embedding(x)

    model = Net()
    inp = (torch.LongTensor([[1, 2, 4, 5], [4, 3, 2, 9]]) if hvd.rank() == 0
           else torch.LongTensor([[1, 3, 4], [4, 7, 9]]))
    opt = torch.optim.SparseAdam(list(model.parameters()), lr=0.1)
    opt = hvd.DistributedOptimizer(opt, sparse_as_dense=sparse_as_dense)
    before = model.embedding.weight.detach().clone()
    loss = model(inp).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert model.embedding.weight.grad.is_sparse
    # Every rank applied the same (averaged) update to its own initial weights.
    updates = hvd.allgather_object(model.embedding.weight.detach() - before)
    assert all(torch.allclose(u, updates[0]) for u in updates)


def test_horovod_sync_batch_norm():
    """Rank r's batch is its own slice of one global batch; SyncBatchNorm on it equals
    torch's BatchNorm on the whole batch, output and input gradient."""
    hvd.init()
    torch.manual_seed(0)
    global_batch = torch.randn(2 * hvd.size(), 3, 5)
    mine = global_batch[2 * hvd.rank():2 * hvd.rank() + 2].clone().requires_grad_()
    whole = global_batch.clone().requires_grad_()
    sync_bn, bn = hvd.SyncBatchNorm(3), nn.BatchNorm1d(3)
    out = sync_bn(mine)
    expected = bn(whole)
    assert torch.allclose(out, expected[2 * hvd.rank():2 * hvd.rank() + 2], atol=1e-5)
    out.sum().backward()
    expected.sum().backward()
    assert torch.allclose(mine.grad, whole.grad[2 * hvd.rank():2 * hvd.rank() + 2], atol=1e-5)


def test_optimizer_with_adasum_op():
    hvd.init()
    if hvd.size() & (hvd.size() - 1):
        pytest.skip("Adasum needs a power-of-two number of ranks")
    model = mlp()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                         named_parameters=model.named_parameters(), op=hvd.Adasum)
    x, y = data()
    for _ in range(2):
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    assert same_on_every_rank(list(model.parameters()))


def test_dynamic_requires_grad():
    """Horovod's test: a generator and a discriminator, each with its own
    DistributedOptimizer (whose parameter names collide), trained in turn by switching
    requires_grad; each step's gradients exist exactly for the model being trained."""
    hvd.init()
    gen, disc = nn.Conv2d(1, 10, 1), nn.Conv2d(10, 1, 1)
    inp = torch.rand([1, 1, 100, 100])
    gen_opt = hvd.DistributedOptimizer(torch.optim.SGD(gen.parameters(), lr=0.1),
                                       named_parameters=gen.named_parameters())
    disc_opt = hvd.DistributedOptimizer(torch.optim.SGD(disc.parameters(), lr=0.1),
                                        named_parameters=disc.named_parameters())

    def train_step(train_generator=False, train_discriminator=False):
        for p in gen.parameters():
            p.requires_grad_(train_generator)
        for p in disc.parameters():
            p.requires_grad_(train_discriminator)
        gen_opt.zero_grad()
        disc_opt.zero_grad()
        disc(gen(inp)).sum().backward()
        for p in gen.parameters():
            assert train_generator == (p.grad is not None and p.grad.max().is_nonzero())
        for p in disc.parameters():
            assert train_discriminator == (p.grad is not None and p.grad.max().is_nonzero())
        if train_generator:
            gen_opt.step()
        if train_discriminator:
            disc_opt.step()

    for _ in range(3):
        train_step(train_discriminator=True)
        train_step(train_generator=True)
