"""Alltoall: ``alltoall`` (differentiable) and its asynchronous form, with per-rank
``splits`` checked here so that bad ones raise ValueError on the rank that passed them."""

import operator

import torch

from horde.common.process_sets import global_process_set, process_set_id_of
from horde.torch import _ops
from horde.torch.handles import issued, op_name, synchronize


def _splits_list(splits):
    """``splits`` as a list of ints ([] for None, an even split); ValueError unless it is
    a 1-D integer tensor or a sequence of ints."""
    if splits is None:
        return []
    expected = "alltoall: splits must be a 1-D integer tensor or a list of ints, one per rank"
    if isinstance(splits, torch.Tensor):
        if splits.dim() != 1 or splits.dtype.is_floating_point or splits.dtype.is_complex \
                or splits.dtype == torch.bool:
            raise ValueError(f"{expected}; got a {splits.dim()}-D {splits.dtype} tensor")
        return splits.tolist()
    try:
        if any(isinstance(s, bool) for s in splits):
            raise TypeError
        return [operator.index(s) for s in splits]
    except TypeError:
        raise ValueError(f"{expected}; got {splits!r}") from None


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall (see ``alltoall``); returns a handle whose ``synchronize`` gives
    ``(output, received_splits)``, with or without ``splits``, as Horovod's does."""
    process_set_id = process_set_id_of(process_set)
    received_splits = torch.empty(process_set.size(), dtype=torch.int32)
    return issued(_ops.alltoall_async(tensor.detach().contiguous(), _splits_list(splits),
                                      received_splits, op_name(name), process_set_id))


class HordeAlltoall(torch.autograd.Function):
    """Alltoall whose gradient is the alltoall of the incoming gradient, sent back the
    way the rows came (split by the received splits)."""

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received_splits = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.received_splits, ctx.process_set = received_splits, process_set
        ctx.mark_non_differentiable(received_splits)
        return output, received_splits

    @staticmethod
    def backward(ctx, grad_output, _):
        grad, _ = alltoall(grad_output, splits=ctx.received_splits, process_set=ctx.process_set)
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends ``splits[j]`` rows of ``tensor`` (in order along the first dimension) to rank
    j and returns the rows every rank sent here, concatenated in rank order. Within a
    process set, j counts the set's ranks in order. Without ``splits`` the first dimension
    is split evenly (it must be a multiple of the set's size). Returns the output, or
    ``(output, received_splits)`` when ``splits`` is given, where received_splits (int32)
    counts the rows from each rank. Differentiable."""
    output, received_splits = HordeAlltoall.apply(tensor, splits, name, process_set)
    return output if splits is None else (output, received_splits)
