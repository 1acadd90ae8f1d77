"""Topology, initialization and build flags."""

import pytest
import torch

import horde.torch as hvd


def test_is_initialized_and_init_is_idempotent():
    assert hvd.is_initialized() is True
    rank, size = hvd.rank(), hvd.size()
    hvd.init()
    assert (hvd.rank(), hvd.size()) == (rank, size)


def test_rank_and_size():
    assert isinstance(hvd.size(), int) and hvd.size() >= 1
    assert 0 <= hvd.rank() < hvd.size()
    ranks = hvd.allgather(torch.tensor([hvd.rank()]), name="basics.ranks")
    assert ranks.tolist() == list(range(hvd.size()))


def test_single_node_topology():
    # All ranks of these tests run on one machine.
    assert hvd.local_size() == hvd.size()
    assert hvd.local_rank() == hvd.rank()
    assert hvd.cross_size() == 1
    assert hvd.cross_rank() == 0
    assert hvd.is_homogeneous() is True


@pytest.mark.parametrize("flag", ["mpi_threads_supported", "mpi_enabled", "mpi_built", "nccl_built",
                                  "cuda_built", "rocm_built", "gloo_built", "gloo_enabled"])
def test_flags_are_bools(flag):
    assert isinstance(getattr(hvd, flag)(), bool)


def test_mpi_is_built_and_enabled():
    assert hvd.mpi_built() is True and hvd.mpi_enabled() is True


def test_horovod_exception_name_is_an_alias():
    assert hvd.HorovodInternalError is hvd.HordeInternalError
    assert issubclass(hvd.HordeInternalError, RuntimeError)
