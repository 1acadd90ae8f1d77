"""Broadcast: ``broadcast`` (differentiable), and its in-place and asynchronous forms."""

import torch

from horde.common.process_sets import global_process_set, process_set_id_of
from horde.torch import _ops
from horde.torch.allreduce_ops import allreduce
from horde.torch.basics import rank
from horde.torch.handles import in_place, issued, op_name, synchronize
from horde.torch.reduce_op import Average


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts copying root_rank's ``tensor`` into a new tensor on every rank of
    ``process_set``; returns a handle. ``root_rank`` is a rank of the job, in the set."""
    tensor = tensor.detach().contiguous()
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return issued(_ops.broadcast_async(tensor, output, int(root_rank), op_name(name),
                                       process_set_id_of(process_set)))


class HordeBroadcast(torch.autograd.Function):
    """Broadcast whose gradient is the average of the incoming gradients, on the root only."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank, ctx.process_set = root_rank, process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        if rank() != ctx.root_rank:
            grad = grad * 0
        return grad, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """Returns root_rank's ``tensor`` on every rank of ``process_set``. Differentiable."""
    return HordeBroadcast.apply(tensor, root_rank, name, process_set)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts overwriting ``tensor`` with root_rank's, in place; returns a handle."""
    return in_place(tensor, lambda work: _ops.broadcast_async(
        work.detach(), work.detach(), int(root_rank), op_name(name),
        process_set_id_of(process_set)))


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """Overwrites ``tensor`` with root_rank's on every rank of ``process_set`` and returns it."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))
