"""DistributedOptimizer with a user's own Compressor: the C++ gradient path calls its
compress() and decompress() (with the GIL) around each gradient's reduction, with the
context compress() returned; a compressor that raises fails that step only."""

import pytest
import torch

import horde.torch as hvd


class Doubling(hvd.Compression.none):
    """Sends twice the gradient, as float64, and restores it: exact, so the result must
    equal the plain average."""

    calls = []

    @staticmethod
    def compress(tensor):
        Doubling.calls.append("compress")
        return tensor.double() * 2, tensor.dtype

    @staticmethod
    def decompress(tensor, ctx):
        Doubling.calls.append("decompress")
        return (tensor / 2).to(ctx)


class Failing(hvd.Compression.none):
    fail = True

    @staticmethod
    def compress(tensor):
        if Failing.fail:
            raise RuntimeError("compressor failed on purpose")
        return tensor, None


def model_and_loss():
    torch.manual_seed(3)
    model = torch.nn.Linear(4, 3)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    x = torch.full((2, 4), float(hvd.rank() + 1))
    return model, lambda: model(x).pow(2).sum()


def test_a_custom_compressor_is_called_around_each_reduction_with_its_context():
    model, loss = model_and_loss()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters(),
                                         compression=Doubling)
    Doubling.calls.clear()
    loss().backward()
    local = [p.grad.clone() for p in model.parameters()]
    optimizer.synchronize()
    assert Doubling.calls.count("compress") == 2 and Doubling.calls.count("decompress") == 2
    for i, (p, g) in enumerate(zip(model.parameters(), local)):
        assert p.grad.dtype == torch.float32
        assert torch.allclose(p.grad, hvd.allreduce(g, name=f"check.{i}"))


def test_a_compressor_that_raises_fails_the_step_and_the_next_step_works():
    model, loss = model_and_loss()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters(),
                                         compression=Failing)
    Failing.fail = True
    loss().backward()
    with pytest.raises(RuntimeError, match="compressor failed on purpose"):
        optimizer.step()
    Failing.fail = False
    before = [p.detach().clone() for p in model.parameters()]
    optimizer.zero_grad()
    loss().backward()
    optimizer.step()
    assert all(not torch.equal(p, b) for p, b in zip(model.parameters(), before))
    gathered = hvd.allgather_object([p.detach() for p in model.parameters()])
    assert all(torch.equal(a, b) for other in gathered for a, b in zip(gathered[0], other))
