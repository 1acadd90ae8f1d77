"""Reducescatter: ``reducescatter`` and its asynchronous form, and the grouped forms that
reducescatter a list of tensors as one unit. The synchronous forms are differentiable."""

import torch

from horde.common.process_sets import global_process_set, process_set_id_of
from horde.torch import _ops
from horde.torch.allgather_ops import allgather, grouped_allgather
from horde.torch.compression import Compression
from horde.torch.handles import issued, op_name, synchronize
from horde.torch.reduce_op import Average


def _reducescatter_gradient_scale(op, prescale_factor, postscale_factor, process_set):
    """Horovod's rule: the allgathered gradient times the scale factors, and times the
    set's size for Sum. That is the size of the set times the exact gradient, as allreduce's
    rule gives when every rank's incoming gradient is the same."""
    scale = float(prescale_factor) * float(postscale_factor)
    return scale if op == Average else scale * process_set.size()


def reducescatter_async(tensor, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                        process_set=global_process_set):
    """Starts a reducescatter (see ``reducescatter``); returns a handle."""
    return issued(_ops.reducescatter_async(tensor.detach().contiguous(), op_name(name), op,
                                           float(prescale_factor), float(postscale_factor),
                                           process_set_id_of(process_set)))


class HordeReducescatter(torch.autograd.Function):
    """Reducescatter whose gradient is the allgather of the incoming gradients, scaled by
    Horovod's rule (see _reducescatter_gradient_scale)."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, process_set):
        ctx.scale = _reducescatter_gradient_scale(op, prescale_factor, postscale_factor,
                                                  process_set)
        ctx.process_set = process_set
        return synchronize(reducescatter_async(tensor, name, op, prescale_factor, postscale_factor,
                                               process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allgather(grad_output, process_set=ctx.process_set) * ctx.scale
        return grad, None, None, None, None, None


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Reduces ``tensor`` (the same shape on every rank) over the ranks of ``process_set``
    with op Sum or Average and returns this rank's share of the first dimension d: the
    set's rank r gets d // n rows (n ranks in the set), plus one if r < d % n, in rank
    order. Differentiable."""
    compressed, ctx = compression.compress(tensor)
    scattered = HordeReducescatter.apply(compressed, name, op, prescale_factor, postscale_factor,
                                         process_set)
    return compression.decompress(scattered, ctx)


# ---------------------------------------------------------------- grouped reducescatter

def grouped_reducescatter_async(tensors, name=None, op=Average, prescale_factor=1.0,
                                postscale_factor=1.0, process_set=global_process_set):
    """Starts reducescattering a list of tensors as one unit; returns one handle."""
    inputs = [t.detach().contiguous() for t in tensors]
    return issued(_ops.grouped_reducescatter_async(
        inputs, op_name(name), op, float(prescale_factor), float(postscale_factor),
        process_set_id_of(process_set)))


class HordeGroupedReducescatter(torch.autograd.Function):
    """Grouped reducescatter whose gradients are the grouped allgather of the incoming
    gradients, scaled as the forward pass scaled the inputs."""

    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.scale = _reducescatter_gradient_scale(op, prescale_factor, postscale_factor,
                                                  process_set)
        ctx.process_set = process_set
        handle = grouped_reducescatter_async(list(tensors), name, op, prescale_factor,
                                             postscale_factor, process_set)
        return tuple(synchronize(handle))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allgather(list(grad_outputs), process_set=ctx.process_set)
        return (None, None, None, None, None, *[grad * ctx.scale for grad in grads])


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          prescale_factor=1.0, postscale_factor=1.0,
                          process_set=global_process_set):
    """Reducescatters a list of tensors as one unit (see ``reducescatter``). Differentiable."""
    compressed = [compression.compress(t) for t in tensors]
    scattered = HordeGroupedReducescatter.apply(name, op, prescale_factor, postscale_factor,
                                                process_set, *[t for t, _ in compressed])
    return [compression.decompress(t, ctx) for t, (_, ctx) in zip(scattered, compressed)]
