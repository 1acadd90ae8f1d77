"""Gradients of the differentiable collectives, as in horovod.torch. Each rank computes
loss = (result * weights).sum() with its own weights, so the gradient reaching the input
is a collective of every rank's weights, which each rank rebuilds locally."""

import pytest
import torch

import horde.torch as hvd

DTYPE = torch.float64


def weights_of_every_rank(rank_tensor, shape):
    return [rank_tensor(r, shape, DTYPE, -2.0, 2.0) for r in range(hvd.size())]


def backward_through(collective, input_tensor, weights):
    """Returns the gradient that reaches ``input_tensor`` from
    (collective(input) * weights).sum()."""
    input_tensor = input_tensor.clone().requires_grad_(True)
    result = collective(input_tensor)
    (result * weights).sum().backward()
    return input_tensor.grad


@pytest.mark.parametrize("op_name,prescale", [("Sum", 1.0), ("Average", 1.0), ("Sum", 2.0)])
def test_allreduce_gradient_is_allreduce_of_gradients(rank_tensor, op_name, prescale):
    op = {"Sum": hvd.Sum, "Average": hvd.Average}[op_name]
    weights = weights_of_every_rank(rank_tensor, (3, 2))
    grad = backward_through(
        lambda t: hvd.allreduce(t, name=f"grad.allreduce.{op_name}.{prescale}", op=op,
                                prescale_factor=prescale),
        torch.ones(3, 2, dtype=DTYPE), weights[hvd.rank()])
    expected = sum(weights) * prescale
    if op_name == "Average":
        expected = expected / hvd.size()
    torch.testing.assert_close(grad, expected)


@pytest.mark.parametrize("op_name", ["Min", "Max", "Product"])
def test_allreduce_gradient_with_min_max_product_is_that_allreduce_of_gradients(rank_tensor,
                                                                                op_name):
    """Horovod's rule for every op: the gradient is the allreduce, with the same op, of the
    incoming gradients (not the derivative of min/max/product)."""
    op = getattr(hvd, op_name)
    weights = weights_of_every_rank(rank_tensor, (3, 2))
    grad = backward_through(lambda t: hvd.allreduce(t, name=f"grad.allreduce.{op_name}", op=op),
                            torch.ones(3, 2, dtype=DTYPE), weights[hvd.rank()])
    expected = weights[0]
    for w in weights[1:]:
        combine = {"Min": torch.minimum, "Max": torch.maximum, "Product": torch.mul}[op_name]
        expected = combine(expected, w)
    torch.testing.assert_close(grad, expected)


@pytest.mark.parametrize("trailing", [(), (3,)], ids=["1d", "2d"])
def test_allgather_gradient_is_own_slice_of_averaged_gradients(rank_tensor, trailing):
    """Horovod's rule: allreduce(grad, average=True), then this rank's rows."""
    rows = [r + 1 for r in range(hvd.size())]
    weights = weights_of_every_rank(rank_tensor, (sum(rows),) + trailing)
    mine = torch.ones((rows[hvd.rank()],) + trailing, dtype=DTYPE)
    grad = backward_through(lambda t: hvd.allgather(t, name=f"grad.allgather.{len(trailing) + 1}d"),
                            mine, weights[hvd.rank()])
    offset = sum(rows[:hvd.rank()])
    averaged = sum(weights) / hvd.size()
    torch.testing.assert_close(grad, averaged[offset:offset + rows[hvd.rank()]])


@pytest.mark.parametrize("root_choice", ["first", "last"])
def test_broadcast_gradient_is_average_on_root_only(rank_tensor, root_choice):
    root = 0 if root_choice == "first" else hvd.size() - 1
    weights = weights_of_every_rank(rank_tensor, (4,))
    grad = backward_through(lambda t: hvd.broadcast(t, root, name=f"grad.broadcast.{root_choice}"),
                            torch.ones(4, dtype=DTYPE), weights[hvd.rank()])
    expected = sum(weights) / hvd.size() if hvd.rank() == root else torch.zeros(4, dtype=DTYPE)
    torch.testing.assert_close(grad, expected)


def test_results_of_collectives_on_tensors_without_grad_do_not_require_grad():
    result = hvd.allreduce(torch.ones(2), name="grad.none", op=hvd.Sum)
    assert not result.requires_grad
