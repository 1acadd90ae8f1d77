"""horde for PyTorch: ``import horde.torch as hvd``, a drop-in for ``horovod.torch``."""

from horde.common.exceptions import HordeInternalError, HorovodInternalError
from horde.torch.compression import Compression
from horde.torch.mpi_ops import (
    Average, Max, Min, Product, Sum,
    allgather, allgather_async,
    allreduce, allreduce_, allreduce_async, allreduce_async_,
    broadcast, broadcast_, broadcast_async, broadcast_async_,
    cross_rank, cross_size, cuda_built, gloo_built, gloo_enabled, init, is_homogeneous,
    is_initialized, local_rank, local_size, mpi_built, mpi_enabled, mpi_threads_supported,
    nccl_built, poll, rank, rocm_built, runtime_stats, shutdown, size, synchronize,
)
