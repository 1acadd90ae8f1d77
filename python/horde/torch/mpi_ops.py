"""horovod.torch-compatible collective operations on torch tensors, under the module
name Horovod users import (``horovod.torch.mpi_ops``): this module re-exports them from
the modules that define them.

Asynchronous forms return an integer handle; ``poll(handle)`` tells whether it is done
and ``synchronize(handle)`` waits and returns the output. The synchronous forms of
allreduce, allgather, broadcast, alltoall and reducescatter (and their grouped forms)
are differentiable.
"""

# Every name imported here is a re-export; this module defines nothing of its own.
from horde.common.basics import HordeBasics
from horde.common.exceptions import HordeInternalError, HorovodInternalError, HostsUpdatedInterrupt
from horde.common.process_sets import global_process_set, process_set_id_of
from horde.torch.allgather_ops import (
    HordeAllgather, HordeGroupedAllgather,
    allgather, allgather_async, grouped_allgather, grouped_allgather_async,
)
from horde.torch.allreduce_ops import (
    HordeAllreduce, HordeGroupedAllreduce,
    allreduce, allreduce_, allreduce_async, allreduce_async_,
    grouped_allreduce, grouped_allreduce_, grouped_allreduce_async, grouped_allreduce_async_,
)
from horde.torch.alltoall_ops import HordeAlltoall, alltoall, alltoall_async
from horde.torch.basics import (
    add_process_set, ccl_built, cross_rank, cross_size, cuda_built, ddl_built, gloo_built,
    gloo_enabled, init,
    is_homogeneous, is_initialized, local_rank, local_size, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, rank, remove_process_set, rocm_built, runtime_stats,
    shutdown, size, start_timeline, stop_timeline, straggler_report,
)
from horde.torch.broadcast_ops import (
    HordeBroadcast, broadcast, broadcast_, broadcast_async, broadcast_async_,
)
from horde.torch.compression import Compression
from horde.torch.handles import poll, synchronize
from horde.torch.join_barrier_ops import barrier, join
from horde.torch.reduce_op import Adasum, Average, Max, Min, Product, Sum
from horde.torch.reducescatter_ops import (
    HordeGroupedReducescatter, HordeReducescatter,
    grouped_reducescatter, grouped_reducescatter_async, reducescatter, reducescatter_async,
)
from horde.torch.sparse_allreduce import sparse_allreduce_async
