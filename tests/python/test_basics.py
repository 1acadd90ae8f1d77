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


@pytest.mark.parametrize("flag", ["mpi_threads_supported", "mpi_enabled", "mpi_built", "cuda_built",
                                  "rocm_built", "gloo_built", "gloo_enabled", "ccl_built",
                                  "ddl_built"])
def test_flags_are_bools(flag):
    assert isinstance(getattr(hvd, flag)(), bool)


def test_nccl_built_is_the_nccl_version_as_horovod_returns_it():
    """An int, as NCCL_VERSION_CODE (2708 for 2.7.8; 21903 for 2.19.3), 0 without NCCL, so
    `hvd.nccl_built() >= 2700` takes the same branch as under Horovod."""
    version = hvd.nccl_built()
    assert type(version) is int
    if hvd.cuda_built():
        assert version >= 2000
    else:
        assert version == 0


def test_backends_horde_does_not_have_are_false():
    assert hvd.ccl_built() is False and hvd.ddl_built() is False
    assert hvd.gloo_built() is False and hvd.rocm_built() is False


def test_hosts_updated_interrupt_is_horovods():
    from horde.common.exceptions import HostsUpdatedInterrupt
    assert hvd.HostsUpdatedInterrupt is HostsUpdatedInterrupt
    assert issubclass(HostsUpdatedInterrupt, RuntimeError)
    assert HostsUpdatedInterrupt(True).skip_sync is True


def test_mpi_is_built_and_enabled():
    assert hvd.mpi_built() is True and hvd.mpi_enabled() is True


def test_horovod_exception_name_is_an_alias():
    assert hvd.HorovodInternalError is hvd.HordeInternalError
    assert issubclass(hvd.HordeInternalError, RuntimeError)


def test_topology_and_stats_dicts_keep_their_keys_and_types():
    """What the extension hands Python, key by key, as scripts and bench/ read it."""
    from horde.torch import _ops

    topology = _ops.topology()
    assert {k: type(v) for k, v in topology.items()} == {
        "rank": int, "size": int, "local_rank": int, "local_size": int, "cross_rank": int,
        "cross_size": int, "is_homogeneous": bool}
    assert (topology["rank"], topology["size"]) == (hvd.rank(), hvd.size())
    hvd.allgather(torch.ones(1), name="basics.stats_dict")
    stats = hvd.runtime_stats()
    counters = ["negotiation_rounds", "slow_rounds", "cache_hits", "fusion_threshold_bytes",
                "responses_executed", "error_responses", "fused_responses", "fused_tensors"]
    per_op = [f"{op}_{what}" for op in ("allreduce", "allgather", "broadcast", "alltoall",
                                        "reducescatter", "barrier", "join")
              for what in ("tensors", "bytes")]
    expected = {**{k: int for k in counters + per_op}, "cycle_time_ms": float,
                "cache_enabled": bool, "autotune_settled": bool}
    assert {k: type(v) for k, v in stats.items()} == expected
    assert stats["negotiation_rounds"] > 0 and stats["allgather_tensors"] > 0
