"""Allgather: ``allgather`` and its asynchronous form, and the grouped forms that gather
a list of tensors as one unit. The synchronous forms are differentiable."""

import torch

from horde.common.process_sets import global_process_set, process_set_id_of
from horde.torch import _ops
from horde.torch.allreduce_ops import grouped_allreduce
from horde.torch.handles import issued, op_name, synchronize
from horde.torch.reduce_op import Average


def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts concatenating every rank's ``tensor`` (of the ranks of ``process_set``) along
    the first dimension (which may differ per rank); returns a handle."""
    return issued(_ops.allgather_async(tensor.detach().contiguous(), op_name(name),
                                       process_set_id_of(process_set)))


def _allgather_gradients(grad_outputs, shapes, process_set):
    """The gradients of allgathered tensors of the given shapes: this rank's rows of the
    averaged incoming gradients (a scalar gathers as one row). Horovod's rule: the average,
    not the sum, so identical losses on every rank give each input the gradient it would
    have without the allgather."""
    reduced = grouped_allreduce(list(grad_outputs), op=Average, process_set=process_set)
    rows = [shape[0] if len(shape) else 1 for shape in shapes]
    every_rank_rows = allgather(torch.tensor([rows], dtype=torch.int64), process_set=process_set)
    offsets = every_rank_rows[:process_set.rank()].sum(0).tolist()
    return [grad.narrow(0, offset, n).reshape(shape)
            for grad, offset, n, shape in zip(reduced, offsets, rows, shapes)]


class HordeAllgather(torch.autograd.Function):
    """Allgather whose gradient is this rank's slice of the averaged incoming gradient."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.shape, ctx.process_set = tensor.shape, process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        return _allgather_gradients([grad_output], [ctx.shape], ctx.process_set)[0], None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Returns every rank's ``tensor`` (of the ranks of ``process_set``, in rank order)
    concatenated along the first dimension. Differentiable."""
    return HordeAllgather.apply(tensor, name, process_set)


# ---------------------------------------------------------------- grouped allgather

def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """Starts allgathering a list of tensors as one unit (negotiated together, released
    only when all are ready); returns one handle for the group."""
    inputs = [t.detach().contiguous() for t in tensors]
    return issued(_ops.grouped_allgather_async(
        inputs, op_name(name), process_set_id_of(process_set)))


class HordeGroupedAllgather(torch.autograd.Function):
    """Grouped allgather whose gradients are this rank's slices of the averaged incoming
    gradients."""

    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.shapes, ctx.process_set = [t.shape for t in tensors], process_set
        return tuple(synchronize(grouped_allgather_async(list(tensors), name, process_set)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None, None, *_allgather_gradients(grad_outputs, ctx.shapes, ctx.process_set))


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """Returns, for each tensor of the list, every rank's tensor concatenated along the
    first dimension; gathered as one unit. Differentiable."""
    return list(HordeGroupedAllgather.apply(name, process_set, *tensors))
