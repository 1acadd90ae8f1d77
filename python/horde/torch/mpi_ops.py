"""horovod.torch-compatible collective operations on torch tensors.

Asynchronous forms return an integer handle; ``poll(handle)`` tells whether it is done
and ``synchronize(handle)`` waits and returns the output. The synchronous forms of
allreduce, allgather, broadcast, alltoall and reducescatter (and their grouped forms)
are differentiable.
"""

import operator
import warnings

import torch

from horde.common.basics import HordeBasics
from horde.common.process_sets import global_process_set, process_set_id_of
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

# handle of an alltoall -> the int32 tensor that receives the rows each rank sent here.
_alltoall_received_splits = {}


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
add_process_set = _basics.add_process_set
remove_process_set = _basics.remove_process_set
start_timeline = _basics.start_timeline
stop_timeline = _basics.stop_timeline


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
    received_splits = _alltoall_received_splits.pop(handle, None)
    output = _ops.synchronize(handle)
    if received_splits is not None:
        return output, received_splits
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

def _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor, process_set):
    return _ops.allreduce_async(tensor, output, _name(name), op, float(prescale_factor),
                                float(postscale_factor), process_set_id_of(process_set))


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts reducing ``tensor`` over the ranks of ``process_set`` (all ranks by default)
    into a new tensor; returns a handle."""
    op = _resolve_op(op, average)
    tensor = tensor.detach().contiguous()
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor, process_set)


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
    op = _resolve_op(op, average)
    return _in_place(tensor, lambda work: _allreduce_async(
        work.detach(), work.detach(), name, op, prescale_factor, postscale_factor, process_set))


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set):
    """Reduces ``tensor`` over the ranks of ``process_set`` in place and returns it."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor,
                                        process_set))


# ---------------------------------------------------------------- allgather

def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts concatenating every rank's ``tensor`` (of the ranks of ``process_set``) along
    the first dimension (which may differ per rank); returns a handle."""
    return _ops.allgather_async(tensor.detach().contiguous(), _name(name),
                                process_set_id_of(process_set))


def _allgather_gradients(grad_outputs, shapes, process_set):
    """The gradients of allgathered tensors of the given shapes: this rank's rows of the
    summed incoming gradients (a scalar gathers as one row)."""
    reduced = grouped_allreduce(list(grad_outputs), op=Sum, process_set=process_set)
    rows = [shape[0] if len(shape) else 1 for shape in shapes]
    every_rank_rows = allgather(torch.tensor([rows], dtype=torch.int64), process_set=process_set)
    offsets = every_rank_rows[:process_set.rank()].sum(0).tolist()
    return [grad.narrow(0, offset, n).reshape(shape)
            for grad, offset, n, shape in zip(reduced, offsets, rows, shapes)]


class HordeAllgather(torch.autograd.Function):
    """Allgather whose gradient is this rank's slice of the summed incoming gradient."""

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


# ---------------------------------------------------------------- broadcast

def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts copying root_rank's ``tensor`` into a new tensor on every rank of
    ``process_set``; returns a handle. ``root_rank`` is a rank of the job, in the set."""
    tensor = tensor.detach().contiguous()
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _ops.broadcast_async(tensor, output, int(root_rank), _name(name),
                                process_set_id_of(process_set))


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
    return _in_place(tensor, lambda work: _ops.broadcast_async(
        work.detach(), work.detach(), int(root_rank), _name(name), process_set_id_of(process_set)))


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """Overwrites ``tensor`` with root_rank's on every rank of ``process_set`` and returns it."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


# ---------------------------------------------------------------- grouped allreduce

def _group_handle(handles):
    _group_members[handles[0]] = list(handles)
    return handles[0]


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Starts reducing a list of tensors as one unit (negotiated together, released only
    when all are ready, fused where they fit); returns one handle for the group."""
    op = _resolve_op(op, average)
    inputs = [t.detach().contiguous() for t in tensors]
    outputs = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in inputs]
    return _group_handle(_ops.grouped_allreduce_async(
        inputs, outputs, _name(name), op, float(prescale_factor), float(postscale_factor),
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
                                  prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                                  process_set=process_set)
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
    op = _resolve_op(op, average)
    works = [t if t.is_contiguous() else t.contiguous() for t in tensors]
    handles = _ops.grouped_allreduce_async(
        [w.detach() for w in works], [w.detach() for w in works], _name(name), op,
        float(prescale_factor), float(postscale_factor), process_set_id_of(process_set))
    for handle, tensor, work in zip(handles, tensors, works):
        _in_place_targets[handle] = (tensor, work is not tensor)
    return _group_handle(handles)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    """Reduces a list of tensors in place as one unit and returns them."""
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor, process_set))


# ---------------------------------------------------------------- grouped allgather

def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """Starts allgathering a list of tensors as one unit (negotiated together, released
    only when all are ready); returns one handle for the group."""
    inputs = [t.detach().contiguous() for t in tensors]
    return _group_handle(_ops.grouped_allgather_async(inputs, _name(name),
                                                      process_set_id_of(process_set)))


class HordeGroupedAllgather(torch.autograd.Function):
    """Grouped allgather whose gradients are this rank's slices of the summed incoming
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


# ---------------------------------------------------------------- alltoall

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
    handle = _ops.alltoall_async(tensor.detach().contiguous(), _splits_list(splits),
                                 received_splits, _name(name), process_set_id)
    _alltoall_received_splits[handle] = received_splits
    return handle


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


# ---------------------------------------------------------------- reducescatter

def _reducescatter_gradient_scale(op, prescale_factor, postscale_factor, process_set):
    scale = float(prescale_factor) * float(postscale_factor)
    return scale / process_set.size() if op == Average else scale


def reducescatter_async(tensor, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                        process_set=global_process_set):
    """Starts a reducescatter (see ``reducescatter``); returns a handle."""
    return _ops.reducescatter_async(tensor.detach().contiguous(), _name(name), op,
                                    float(prescale_factor), float(postscale_factor),
                                    process_set_id_of(process_set))


class HordeReducescatter(torch.autograd.Function):
    """Reducescatter whose gradient is the allgather of the incoming gradients, scaled as
    the forward pass scaled the inputs."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, process_set):
        ctx.scale = _reducescatter_gradient_scale(op, prescale_factor, postscale_factor, process_set)
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


def grouped_reducescatter_async(tensors, name=None, op=Average, prescale_factor=1.0,
                                postscale_factor=1.0, process_set=global_process_set):
    """Starts reducescattering a list of tensors as one unit; returns one handle."""
    inputs = [t.detach().contiguous() for t in tensors]
    return _group_handle(_ops.grouped_reducescatter_async(
        inputs, _name(name), op, float(prescale_factor), float(postscale_factor),
        process_set_id_of(process_set)))


class HordeGroupedReducescatter(torch.autograd.Function):
    """Grouped reducescatter whose gradients are the grouped allgather of the incoming
    gradients, scaled as the forward pass scaled the inputs."""

    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.scale = _reducescatter_gradient_scale(op, prescale_factor, postscale_factor, process_set)
        ctx.process_set = process_set
        handle = grouped_reducescatter_async(list(tensors), name, op, prescale_factor,
                                             postscale_factor, process_set)
        return tuple(synchronize(handle))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allgather(list(grad_outputs), process_set=ctx.process_set)
        return (None, None, None, None, None, *[grad * ctx.scale for grad in grads])


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Reducescatters a list of tensors as one unit (see ``reducescatter``). Differentiable."""
    compressed = [compression.compress(t) for t in tensors]
    scattered = HordeGroupedReducescatter.apply(name, op, prescale_factor, postscale_factor,
                                                process_set, *[t for t, _ in compressed])
    return [compression.decompress(t, ctx) for t, (_, ctx) in zip(scattered, compressed)]


# ---------------------------------------------------------------- barrier

def barrier(process_set=global_process_set):
    """Returns once every rank of ``process_set`` has called barrier(). It is ordered with
    the set's other collectives like any of them."""
    synchronize(_ops.barrier_async(process_set_id_of(process_set)))


# ---------------------------------------------------------------- sparse allreduce

def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Starts reducing a sparse tensor by allgathering its indices and values; returns a
    function that waits and returns the reduced sparse tensor (duplicates uncoalesced)."""
    if op not in (Sum, Average):
        raise ValueError("sparse tensors can only be reduced with Sum or Average")
    tensor = tensor.coalesce()
    # Allgather concatenates along the first dimension: gather indices as [nnz, ndim].
    indices_handle = allgather_async(tensor.indices().t().contiguous(), name=f"{name}.indices",
                                     process_set=process_set)
    values_handle = allgather_async(tensor.values(), name=f"{name}.values", process_set=process_set)

    def wait():
        indices = synchronize(indices_handle)
        values = synchronize(values_handle)
        if op == Average:
            values = values / process_set.size()
        return torch.sparse_coo_tensor(indices.t(), values, tensor.size())

    return wait


# ---------------------------------------------------------------- join

def join(device=-1):
    """Declares that this rank has run out of data. Until every rank has joined, the
    other ranks' allreduces proceed with zeros from this one. Returns the rank that
    joined last. ``device`` is accepted for Horovod compatibility."""
    last_joined_rank = torch.zeros(1, dtype=torch.int32)
    return int(synchronize(_ops.join_async(last_joined_rank)).item())
