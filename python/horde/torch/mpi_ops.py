"""horovod.torch-compatible collective operations on torch tensors.

Asynchronous forms return an integer handle; ``poll(handle)`` tells whether it is done
and ``synchronize(handle)`` waits and returns the output. The synchronous forms of
allreduce, allgather and broadcast are differentiable.
"""

import atexit
import warnings

import torch

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


# ---------------------------------------------------------------- basics

def init(comm=None, process_sets=None):
    """Starts horde on every rank of the MPI job. Safe to call more than once."""
    if comm is not None:
        raise ValueError("horde runs on all ranks of the MPI job; init(comm=...) is not supported")
    if process_sets is not None:
        raise ValueError("process sets are not supported yet; call init() without process_sets")
    _ops.init()
    atexit.register(shutdown)


def shutdown():
    """Stops horde on this rank; operations still pending fail with HordeInternalError."""
    _ops.shutdown()


def is_initialized():
    return _ops.is_initialized()


def _topology(key):
    return _ops.topology()[key]


def size():
    """Number of ranks in the job."""
    return _topology("size")


def rank():
    """This process's rank, 0 <= rank < size()."""
    return _topology("rank")


def local_size():
    """Number of ranks on this node."""
    return _topology("local_size")


def local_rank():
    """This process's rank among the ranks on its node."""
    return _topology("local_rank")


def cross_size():
    """Number of nodes that have a rank with this process's local rank."""
    return _topology("cross_size")


def cross_rank():
    """This node's index among those nodes."""
    return _topology("cross_rank")


def is_homogeneous():
    """True when every node runs the same number of ranks."""
    return _topology("is_homogeneous")


def mpi_threads_supported():
    """True when MPI provides MPI_THREAD_MULTIPLE, so user code may use MPI (e.g. mpi4py)."""
    return _ops.mpi_threads_supported()


def mpi_enabled():
    return True


def mpi_built():
    return True


def nccl_built():
    return False


def cuda_built():
    return False


def rocm_built():
    return False


def gloo_built():
    return False


def gloo_enabled():
    return False


def runtime_stats():
    """Counters since init(): negotiation rounds, responses executed, fused responses and
    tensors, and per collective the tensors and bytes this rank contributed."""
    return _ops.runtime_stats()


# ---------------------------------------------------------------- handles

def poll(handle):
    """True if the asynchronous operation behind ``handle`` has completed."""
    return _ops.poll(handle)


def synchronize(handle):
    """Waits for the operation behind ``handle`` and returns its output tensor.

    Raises HordeInternalError if the operation failed on the ranks.
    """
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
