"""horovod.torch-compatible collective operations on torch tensors.

Asynchronous forms return an integer handle; ``poll(handle)`` tells whether it is done
and ``synchronize(handle)`` waits and returns the output. The synchronous forms of
allreduce, allgather and broadcast are differentiable.
"""

import warnings

import torch

from horde.common.basics import HordeBasics
from horde.common.exceptions import HordeInternalError, HorovodInternalError  # noqa: F401
from horde.torch import _ops
from horde.torch.compression import Compression

Sum = _ops.ReduceOp.Sum
Average = _ops.ReduceOp.Average
Min = _ops.ReduceOp.Min
Max = _ops.ReduceOp.Max
Product = _ops.ReduceOp.Product

# handle of an in-place op -> (the caller's tensor, which synchronize() returns; whether
# the op ran on a contiguous copy that must be copied back into it first).
_in_place_targets = {}

# handle of a grouped op (its first member's) -> the handles of all its members.
_group_members = {}


# ---------------------------------------------------------------- basics

_basics = HordeBasics(_ops)
init = _basics.init
shutdown = _basics.shutdown
is_initialized = _basics.is_initialized
size = _basics.size
rank = _basics.rank
local_size = _basics.local_size
local_rank = _basics.local_rank
cross_size = _basics.cross_size
cross_rank = _basics.cross_rank
is_homogeneous = _basics.is_homogeneous
mpi_threads_supported = _basics.mpi_threads_supported
mpi_enabled = _basics.mpi_enabled
mpi_built = _basics.mpi_built
nccl_built = _basics.nccl_built
cuda_built = _basics.cuda_built
rocm_built = _basics.rocm_built
gloo_built = _basics.gloo_built
gloo_enabled = _basics.gloo_enabled
runtime_stats = _basics.runtime_stats


# ---------------------------------------------------------------- handles

def poll(handle):
    """True if the asynchronous operation behind ``handle`` has completed."""
    return all(_ops.poll(h) for h in _group_members.get(handle, [handle]))


def synchronize(handle):
    """Waits for the operation behind ``handle`` and returns its output tensor (a list of
    them for a grouped operation).

    Raises HordeInternalError if the operation failed on the ranks.
    """
    members = _group_members.pop(handle, None)
    if members is None:
        return _synchronize_one(handle)
    outputs, error = [], None
    for member in members:
        # Wait for every member even after a failure, so no handle is left behind.
        try:
            outputs.append(_synchronize_one(member))
        except Exception as e:  # noqa: BLE001 - re-raised below
            error = error or e
    if error is not None:
        raise error
    return outputs


def _synchronize_one(handle):
    target, copy_back = _in_place_targets.pop(handle, (None, False))
    output = _ops.synchronize(handle)
    if target is None:
        return output
    if copy_back:
        with torch.no_grad():
            target.copy_(output)
    return target


def _name(name):
    return "" if name is None else str(name)


def _resolve_op(op, average):
    if op is not None and average is not None:
        raise ValueError("the op parameter supersedes average; provide only one of them")
    if average is not None:
        warnings.warn("average is deprecated; use op=hvd.Average or op=hvd.Sum", DeprecationWarning)
        return Average if average else Sum
    return Average if op is None else op


def _in_place(tensor, submit):
    """Runs ``submit(work)`` on the tensor itself, or on a contiguous copy that is copied
    back at synchronize() when the tensor is not contiguous; synchronize() returns the
    caller's tensor either way, as torch's in-place ops do."""
    contiguous = tensor.is_contiguous()
    handle = submit(tensor if contiguous else tensor.contiguous())
    _in_place_targets[handle] = (tensor, not contiguous)
    return handle


# ---------------------------------------------------------------- allreduce

def _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor):
    return _ops.allreduce_async(tensor, output, _name(name), op, float(prescale_factor),
                                float(postscale_factor))


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0):
    """Starts reducing ``tensor`` over all ranks into a new tensor; returns a handle."""
    op = _resolve_op(op, average)
    tensor = tensor.detach().contiguous()
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor)


class HordeAllreduce(torch.autograd.Function):
    """Allreduce whose gradient is the allreduce of the incoming gradient."""

    @staticmethod
    def forward(ctx, tensor, average, name, op, prescale_factor, postscale_factor):
        ctx.average, ctx.op = average, op
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        handle = allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor)
        return synchronize(handle)

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, average=ctx.average, op=ctx.op,
                         prescale_factor=ctx.prescale_factor, postscale_factor=ctx.postscale_factor)
        return grad, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0):
    """Returns ``tensor`` reduced over all ranks (averaged by default). Differentiable."""
    compressed, ctx = compression.compress(tensor)
    reduced = HordeAllreduce.apply(compressed, average, name, op, prescale_factor, postscale_factor)
    return compression.decompress(reduced, ctx)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0):
    """Starts reducing ``tensor`` in place; returns a handle."""
    op = _resolve_op(op, average)
    return _in_place(tensor, lambda work: _allreduce_async(
        work.detach(), work.detach(), name, op, prescale_factor, postscale_factor))


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0):
    """Reduces ``tensor`` over all ranks in place and returns it."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor))


# ---------------------------------------------------------------- allgather

def allgather_async(tensor, name=None):
    """Starts concatenating every rank's ``tensor`` along the first dimension (which may
    differ per rank); returns a handle."""
    return _ops.allgather_async(tensor.detach().contiguous(), _name(name))


class HordeAllgather(torch.autograd.Function):
    """Allgather whose gradient is this rank's slice of the summed incoming gradient."""

    @staticmethod
    def forward(ctx, tensor, name):
        ctx.dim = tensor.shape[0] if tensor.dim() > 0 else 1
        ctx.scalar = tensor.dim() == 0
        return synchronize(allgather_async(tensor, name))

    @staticmethod
    def backward(ctx, grad_output):
        grad_reduced = allreduce(grad_output, op=Sum)
        dims = allgather(torch.tensor([ctx.dim], dtype=torch.int64))
        offset = int(dims[:rank()].sum().item())
        grad = grad_reduced.narrow(0, offset, ctx.dim)
        return (grad.reshape(()) if ctx.scalar else grad), None


def allgather(tensor, name=None):
    """Returns every rank's ``tensor`` concatenated along the first dimension. Differentiable."""
    return HordeAllgather.apply(tensor, name)


# ---------------------------------------------------------------- broadcast

def broadcast_async(tensor, root_rank, name=None):
    """Starts copying root_rank's ``tensor`` into a new tensor on every rank; returns a handle."""
    tensor = tensor.detach().contiguous()
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _ops.broadcast_async(tensor, output, int(root_rank), _name(name))


class HordeBroadcast(torch.autograd.Function):
    """Broadcast whose gradient is the average of the incoming gradients, on the root only."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name):
        ctx.root_rank = root_rank
        return synchronize(broadcast_async(tensor, root_rank, name))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=Average)
        if rank() != ctx.root_rank:
            grad = grad * 0
        return grad, None, None


def broadcast(tensor, root_rank, name=None):
    """Returns root_rank's ``tensor`` on every rank. Differentiable."""
    return HordeBroadcast.apply(tensor, root_rank, name)


def broadcast_async_(tensor, root_rank, name=None):
    """Starts overwriting ``tensor`` with root_rank's, in place; returns a handle."""
    return _in_place(tensor, lambda work: _ops.broadcast_async(
        work.detach(), work.detach(), int(root_rank), _name(name)))


def broadcast_(tensor, root_rank, name=None):
    """Overwrites ``tensor`` with root_rank's on every rank and returns it."""
    return synchronize(broadcast_async_(tensor, root_rank, name))


# ---------------------------------------------------------------- grouped allreduce

def _group_handle(handles):
    _group_members[handles[0]] = list(handles)
    return handles[0]


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0):
    """Starts reducing a list of tensors as one unit (negotiated together, released only
    when all are ready, fused where they fit); returns one handle for the group."""
    op = _resolve_op(op, average)
    inputs = [t.detach().contiguous() for t in tensors]
    outputs = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in inputs]
    return _group_handle(_ops.grouped_allreduce_async(
        inputs, outputs, _name(name), op, float(prescale_factor), float(postscale_factor)))


class HordeGroupedAllreduce(torch.autograd.Function):
    """Grouped allreduce whose gradient is the grouped allreduce of the incoming gradients."""

    @staticmethod
    def forward(ctx, average, name, op, prescale_factor, postscale_factor, *tensors):
        ctx.args = (average, op, prescale_factor, postscale_factor)
        handle = grouped_allreduce_async(list(tensors), average, name, op, prescale_factor,
                                         postscale_factor)
        return tuple(synchronize(handle))

    @staticmethod
    def backward(ctx, *grad_outputs):
        average, op, prescale_factor, postscale_factor = ctx.args
        grads = grouped_allreduce(list(grad_outputs), average=average, op=op,
                                  prescale_factor=prescale_factor, postscale_factor=postscale_factor)
        return (None, None, None, None, None, *grads)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0):
    """Returns the tensors reduced over all ranks as one unit. Differentiable."""
    compressed = [compression.compress(t) for t in tensors]
    reduced = HordeGroupedAllreduce.apply(average, name, op, prescale_factor, postscale_factor,
                                          *[t for t, _ in compressed])
    return [compression.decompress(t, ctx) for t, (_, ctx) in zip(reduced, compressed)]


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0):
    """Starts reducing a list of tensors in place, as one unit; returns one handle."""
    op = _resolve_op(op, average)
    works = [t if t.is_contiguous() else t.contiguous() for t in tensors]
    handles = _ops.grouped_allreduce_async(
        [w.detach() for w in works], [w.detach() for w in works], _name(name), op,
        float(prescale_factor), float(postscale_factor))
    for handle, tensor, work in zip(handles, tensors, works):
        _in_place_targets[handle] = (tensor, work is not tensor)
    return _group_handle(handles)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0):
    """Reduces a list of tensors in place as one unit and returns them."""
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor))


# ---------------------------------------------------------------- sparse allreduce

def sparse_allreduce_async(tensor, name, op):
    """Starts reducing a sparse tensor by allgathering its indices and values; returns a
    function that waits and returns the reduced sparse tensor (duplicates uncoalesced)."""
    if op not in (Sum, Average):
        raise ValueError("sparse tensors can only be reduced with Sum or Average")
    tensor = tensor.coalesce()
    # Allgather concatenates along the first dimension: gather indices as [nnz, ndim].
    indices_handle = allgather_async(tensor.indices().t().contiguous(), name=f"{name}.indices")
    values_handle = allgather_async(tensor.values(), name=f"{name}.values")

    def wait():
        indices = synchronize(indices_handle)
        values = synchronize(values_handle)
        if op == Average:
            values = values / size()
        return torch.sparse_coo_tensor(indices.t(), values, tensor.size())

    return wait


# ---------------------------------------------------------------- join

def join(device=-1):
    """Declares that this rank has run out of data. Until every rank has joined, the
    other ranks' allreduces proceed with zeros from this one. Returns the rank that
    joined last. ``device`` is accepted for Horovod compatibility."""
    last_joined_rank = torch.zeros(1, dtype=torch.int32)
    return int(synchronize(_ops.join_async(last_joined_rank)).item())
