"""horde for PyTorch: ``import horde.torch as hvd``, a drop-in for ``horovod.torch``."""

from horde.common.exceptions import HordeInternalError, HorovodInternalError, HostsUpdatedInterrupt
from horde.common.process_sets import ProcessSet, global_process_set
from horde.torch.compression import Compression
from horde.torch.functions import (
    allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters,
)
from horde.torch.mpi_ops import (
    Adasum, Average, Max, Min, Product, Sum,
    add_process_set, remove_process_set,
    allgather, allgather_async,
    allreduce, allreduce_, allreduce_async, allreduce_async_,
    alltoall, alltoall_async, barrier,
    broadcast, broadcast_, broadcast_async, broadcast_async_,
    ccl_built, cross_rank, cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled,
    grouped_allgather, grouped_allgather_async,
    grouped_allreduce, grouped_allreduce_, grouped_allreduce_async, grouped_allreduce_async_,
    grouped_reducescatter, grouped_reducescatter_async,
    init, is_homogeneous, is_initialized, join, local_rank, local_size, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, poll, rank, reducescatter, reducescatter_async,
    rocm_built, runtime_stats, shutdown, size, start_timeline, stop_timeline,
    sparse_allreduce_async, straggler_report, synchronize,
)
from horde.torch.optimizer import DistributedOptimizer
from horde.torch.sharded_optimizer import ShardedOptimizer
from horde.torch.sharded_state import merge_sharded_state_dicts
from horde.torch.sync_batch_norm import SyncBatchNorm
from horde.torch import elastic
