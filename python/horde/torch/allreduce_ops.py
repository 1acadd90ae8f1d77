"""Allreduce: ``allreduce``, its in-place and asynchronous forms, and the grouped forms
that reduce a list of tensors as one unit. The synchronous forms are differentiable."""

import torch

from horde.common.process_sets import global_process_set, process_set_id_of
from horde.torch import _ops
from horde.torch.compression import Compression
from horde.torch.handles import issued, op_name, synchronize
from horde.torch.reduce_op import resolve_op


# ---------------------------------------------------------------- allreduce

def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts reducing ``tensor`` over the ranks of ``process_set`` (all ranks by default)
    into a new tensor; returns a handle."""
    op = resolve_op(op, average)
    tensor = tensor.detach().contiguous()
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return issued(_ops.allreduce_async(tensor, output, op_name(name), op, float(prescale_factor),
                                       float(postscale_factor), process_set_id_of(process_set)))


class HordeAllreduce(torch.autograd.Function):
    """Allreduce whose gradient is the allreduce of the incoming gradient."""

    @staticmethod
    def forward(ctx, tensor, average, name, op, prescale_factor, postscale_factor, process_set):
        ctx.average, ctx.op, ctx.process_set = average, op, process_set
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        handle = allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor,
                                 process_set)
        return synchronize(handle)

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, average=ctx.average, op=ctx.op,
                         prescale_factor=ctx.prescale_factor, postscale_factor=ctx.postscale_factor,
                         process_set=ctx.process_set)
        return grad, None, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Returns ``tensor`` reduced over the ranks of ``process_set`` (averaged by default).
    Differentiable."""
    compressed, ctx = compression.compress(tensor)
    reduced = HordeAllreduce.apply(compressed, average, name, op, prescale_factor, postscale_factor,
                                   process_set)
    return compression.decompress(reduced, ctx)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """Starts reducing ``tensor`` in place; returns a handle."""
    op = resolve_op(op, average)
    return issued(_ops.allreduce_async_(tensor, op_name(name), op, float(prescale_factor),
                                        float(postscale_factor), process_set_id_of(process_set)))


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set):
    """Reduces ``tensor`` over the ranks of ``process_set`` in place and returns it."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                        postscale_factor, process_set))


# ---------------------------------------------------------------- grouped allreduce

def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Starts reducing a list of tensors as one unit (negotiated together, released only
    when all are ready, fused where they fit); returns one handle for the group."""
    op = resolve_op(op, average)
    inputs = [t.detach().contiguous() for t in tensors]
    outputs = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in inputs]
    return issued(_ops.grouped_allreduce_async(
        inputs, outputs, op_name(name), op, float(prescale_factor), float(postscale_factor),
        process_set_id_of(process_set)))


class HordeGroupedAllreduce(torch.autograd.Function):
    """Grouped allreduce whose gradient is the grouped allreduce of the incoming gradients."""

    @staticmethod
    def forward(ctx, average, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.args = (average, op, prescale_factor, postscale_factor, process_set)
        handle = grouped_allreduce_async(list(tensors), average, name, op, prescale_factor,
                                         postscale_factor, process_set)
        return tuple(synchronize(handle))

    @staticmethod
    def backward(ctx, *grad_outputs):
        average, op, prescale_factor, postscale_factor, process_set = ctx.args
        grads = grouped_allreduce(list(grad_outputs), average=average, op=op,
                                  prescale_factor=prescale_factor,
                                  postscale_factor=postscale_factor, process_set=process_set)
        return (None, None, None, None, None, None, *grads)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Returns the tensors reduced over the ranks of ``process_set`` as one unit.
    Differentiable."""
    compressed = [compression.compress(t) for t in tensors]
    reduced = HordeGroupedAllreduce.apply(average, name, op, prescale_factor, postscale_factor,
                                          process_set, *[t for t, _ in compressed])
    return [compression.decompress(t, ctx) for t, (_, ctx) in zip(reduced, compressed)]


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    """Starts reducing a list of tensors in place, as one unit; returns one handle."""
    op = resolve_op(op, average)
    return issued(_ops.grouped_allreduce_async_(
        list(tensors), op_name(name), op, float(prescale_factor), float(postscale_factor),
        process_set_id_of(process_set)))


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    """Reduces a list of tensors in place as one unit and returns them."""
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor, process_set))
