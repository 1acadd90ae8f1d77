"""Allreduce of sparse tensors, by allgathering their indices and values (what
DistributedOptimizer does for sparse gradients)."""

import torch

from horde.common.process_sets import global_process_set
from horde.torch.allgather_ops import allgather_async
from horde.torch.handles import synchronize
from horde.torch.reduce_op import Average, Sum


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
        try:
            indices = synchronize(indices_handle)
        finally:
            # Waited for even when the indices failed, so no handle is left behind.
            values = synchronize(values_handle)
        if op == Average:
            values = values / process_set.size()
        return torch.sparse_coo_tensor(indices.t(), values, tensor.size())

    return wait
