"""Helpers that make every rank start from the same state: parameters, optimizer state
and arbitrary picklable objects."""

import io
import pickle

import torch

from horde.common.process_sets import global_process_set
from horde.torch import awaited_parameters
from horde.torch.mpi_ops import allgather, broadcast_, broadcast_async_, rank, synchronize


def _named_tensors(params):
    """(name, tensor) pairs from a state_dict, a named_parameters() iterable or a list of
    tensors / pairs, in a deterministic order."""
    if isinstance(params, dict):
        return sorted(params.items())
    if isinstance(params, (str, bytes, torch.Tensor)) or not hasattr(params, "__iter__"):
        raise ValueError(f"invalid params of type {type(params).__name__}: expected a state_dict, "
                         "named_parameters() or a list of tensors")
    pairs = []
    for index, item in enumerate(params):
        pairs.append(item if isinstance(item, tuple) else (str(index), item))
    return pairs


def broadcast_parameters(params, root_rank, process_set=global_process_set):
    """Overwrites the parameters of every rank of ``process_set`` with root_rank's, in
    place.

    ``params`` is a ``model.state_dict()``, ``model.named_parameters()`` or a list of
    tensors (or (name, tensor) pairs) in the same order on every rank.
    """
    awaited_parameters.write_all()  # a sharded step's parameters still travelling
    handles = [broadcast_async_(tensor, root_rank, name=f"broadcast_parameters.{name}",
                                process_set=process_set)
               for name, tensor in _named_tensors(params) if tensor is not None]
    for handle in handles:
        synchronize(handle)


class _TensorSlot:
    """Stands for a tensor of the root's optimizer state while its structure travels:
    its shape, dtype and whether it is on a GPU (not which one: the GPU index is the
    root's own business)."""

    def __init__(self, shape, dtype, on_gpu):
        self.shape, self.dtype, self.on_gpu = tuple(shape), dtype, on_gpu

    @classmethod
    def of(cls, tensor):
        return cls(tensor.shape, tensor.dtype, tensor.is_cuda)

    def allocate(self, gpu_device):
        """An uninitialized tensor to receive the root's: on ``gpu_device`` (this rank's
        GPU, see _parameter_device) if the root's tensor is on a GPU, else on the CPU
        (e.g. Adam's ``step``, which stays on the CPU next to GPU parameters)."""
        return torch.empty(self.shape, dtype=self.dtype,
                           device=gpu_device if self.on_gpu else torch.device("cpu"))


def _parameter_device(param_groups):
    """The device this rank keeps GPU optimizer state on: that of the first CUDA parameter
    in ``param_groups`` (an optimizer's param_groups), or the CPU if no parameter is on a
    GPU. Every rank picks its own GPU, so ranks on different GPUs (or sharing one) each
    receive the root's GPU state on the GPU their parameters live on; load_state_dict then
    moves each tensor to its parameter's device anyway."""
    for group in param_groups:
        for param in group["params"]:
            if param.is_cuda:
                return param.device
    return torch.device("cpu")


def _map_state(value, fn):
    if isinstance(value, dict):
        return {k: _map_state(v, fn) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_map_state(v, fn) for v in value)
    return fn(value)


def _broadcast_sharded_state(optimizer, root_rank, process_set):
    """A ShardedOptimizer's ranks hold different slices of the state, so the root has no
    state of its own to copy: what it knows whole travels (the whole state dict it loaded,
    as a script that resumes on rank 0 does, else the job's gathered), and every rank takes
    its own slices of it."""
    whole = broadcast_object(optimizer.whole_state_on(root_rank), root_rank,
                             name="broadcast_optimizer_state.sharded", process_set=process_set)
    optimizer.load_state_dict(whole)


def broadcast_optimizer_state(optimizer, root_rank, *, process_set=global_process_set):
    """Makes every rank's optimizer state (tensors, python scalars, hyperparameters)
    equal to root_rank's.

    Unlike Horovod, an optimizer that has not stepped yet is not stepped here: the state
    travels as it is (empty, if the root has none), so broadcasting leaves the training
    trajectory unchanged. What a Horovod script can observe of that step is kept: on a
    rank whose optimizer had no state, each trainable parameter without a gradient gets
    a zero one (sparse for SparseAdam), and untrainable parameters keep ``None``.
    """
    if getattr(optimizer, "_horde_sharded", False):
        return _broadcast_sharded_state(optimizer, root_rank, process_set)
    state = optimizer.state_dict()
    if not state["state"]:
        _give_zero_gradients(optimizer)
    is_root = rank() == root_rank
    # The structure, with each tensor replaced by its shape, dtype and whether it is on a
    # GPU, travels pickled; the tensors themselves are broadcast in place, in the
    # structure's traversal order. A rank receives the root's GPU tensors on its own GPU:
    # the broadcast needs the same kind of device on every rank. (A rank with no GPU
    # parameter receives them on the CPU, and the runtime reports the device mismatch.)
    structure = (_map_state(state, lambda v: _TensorSlot.of(v) if torch.is_tensor(v) else v)
                 if is_root else None)
    skeleton = broadcast_object(structure, root_rank, name="broadcast_optimizer_state.structure",
                                process_set=process_set)
    gpu_device = _parameter_device(optimizer.param_groups)
    tensors = []

    def collect(value):
        if is_root:
            if torch.is_tensor(value):
                tensors.append(value)
            return value
        if isinstance(value, _TensorSlot):
            tensors.append(value.allocate(gpu_device))
            return tensors[-1]
        return value

    new_state = _map_state(state if is_root else skeleton, collect)
    handles = [broadcast_async_(t, root_rank, name=f"broadcast_optimizer_state.{i}",
                                process_set=process_set)
               for i, t in enumerate(tensors)]
    for handle in handles:
        synchronize(handle)
    optimizer.load_state_dict(new_state)


def _give_zero_gradients(optimizer):
    """Zero gradients where Horovod's initializing step would leave them: on trainable
    parameters that have none."""
    sparse = isinstance(optimizer, torch.optim.SparseAdam)
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad and p.grad is None:
                zeros = torch.zeros_like(p)
                p.grad = zeros.to_sparse() if sparse else zeros


def _to_bytes_tensor(obj):
    buffer = io.BytesIO()
    pickle.dump(obj, buffer)
    return torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)


def _from_bytes_tensor(tensor):
    return pickle.loads(tensor.numpy().tobytes())


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Returns root_rank's ``obj`` (any picklable object) on every rank of ``process_set``.

    Without a ``name`` the two broadcasts (the size, then the bytes) are named by the root
    and the size, not numbered, so a loop that broadcasts an object every step stays in
    the response cache."""
    prefix = name or f"horde.broadcast_object.r{root_rank}"
    payload = _to_bytes_tensor(obj) if rank() == root_rank else None
    length = torch.tensor([payload.numel() if payload is not None else 0], dtype=torch.int64)
    broadcast_(length, root_rank, name=f"{prefix}.size", process_set=process_set)
    if payload is None:
        payload = torch.empty(int(length.item()), dtype=torch.uint8)
    bytes_name = f"{prefix}.bytes" if name else f"{prefix}.bytes.{payload.numel()}"
    broadcast_(payload, root_rank, name=bytes_name, process_set=process_set)
    return obj if rank() == root_rank else _from_bytes_tensor(payload)


def allgather_object(obj, name=None, process_set=global_process_set):
    """Returns the list of every rank's ``obj`` (any picklable object; the ranks of
    ``process_set``), in rank order."""
    payload = _to_bytes_tensor(obj)
    lengths = allgather(torch.tensor([payload.numel()], dtype=torch.int64),
                        name=None if name is None else f"{name}.sizes", process_set=process_set)
    gathered = allgather(payload, name=None if name is None else f"{name}.bytes",
                         process_set=process_set)
    objects, offset = [], 0
    for length in lengths.tolist():
        objects.append(_from_bytes_tensor(gathered[offset:offset + length]))
        offset += length
    return objects
