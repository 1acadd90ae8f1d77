"""``barrier()`` and ``join()``: the operations that carry no tensor of the caller's but
order or end a rank's part in the collectives."""

import operator

import torch

from horde.common.process_sets import global_process_set, process_set_id_of
from horde.torch import _ops
from horde.torch.handles import synchronize


def barrier(process_set=global_process_set):
    """Returns once every rank of ``process_set`` has called barrier(). It is ordered with
    the set's other collectives like any of them."""
    synchronize(_ops.barrier_async(process_set_id_of(process_set)))


def _join_device_index(device):
    """``join``'s ``device`` as the extension takes it: a CUDA device index, or -1 for
    none; ValueError for anything but an int >= -1 or a cuda or cpu torch.device."""
    if isinstance(device, torch.device):
        if device.type == "cpu":
            return -1
        if device.type == "cuda":
            return torch.cuda.current_device() if device.index is None else device.index
    elif not isinstance(device, bool):
        try:
            index = operator.index(device)
        except TypeError:
            index = None
        if index is not None and index >= -1:
            return index
    raise ValueError(f"join: device must be an int >= -1 (a CUDA device index, or -1 for none) "
                     f"or a torch.device of type cuda or cpu; got {device!r}")


def join(device=-1):
    """Declares that this rank has run out of data. Until every rank has joined, the
    other ranks' allreduces proceed with the identity of their reduce op from this one
    (zeros for Sum and Average, so Average still divides by size(); the largest value for
    Min, the lowest for Max, one for Product). Returns the rank that joined last.

    ``device`` is where this rank's tensors for GPU allreduces live, as in Horovod:
    a CUDA device index or a ``torch.device`` of type cuda (``torch.device("cuda")``
    means the current device). -1 (the default) or a cpu device names none, and horde
    puts them on the GPU this rank last submitted a tensor from. Allreduces of CPU
    tensors get them in host memory either way."""
    device_index = _join_device_index(device)
    last_joined_rank = torch.zeros(1, dtype=torch.int32)
    return int(synchronize(_ops.join_async(last_joined_rank, device_index)).item())
