"""Handles: each is an int (as Horovod's are) for scripts that hash, compare, sort or key
dicts by them, and one dropped without synchronize() frees what horde holds for it once
its operation completes, so a long job that drops handles keeps nothing for them."""

import gc

import pytest
import torch

import horde.torch as hvd
from horde.torch.handles import _handle_table_sizes


def test_a_handle_is_an_int_for_horovod_scripts():
    first = hvd.allreduce_async(torch.ones(3), name="handles.int.first", op=hvd.Sum)
    second = hvd.allreduce_async_(torch.ones(3), name="handles.int.second", op=hvd.Sum)
    assert isinstance(first, int) and isinstance(second, int)
    assert first == int(first) and hash(first) == hash(int(first))
    assert {first: "a", second: "b"}[int(second)] == "b"
    assert sorted([second, first]) == sorted([int(first), int(second)])
    assert first != second
    assert hvd.poll(first) in (True, False)
    assert torch.equal(hvd.synchronize(first), torch.full((3,), float(hvd.size())))
    assert torch.equal(hvd.synchronize(int(second)), torch.full((3,), float(hvd.size())))


def submit_and_drop_every_kind(tag):
    """Starts one operation of every kind and drops its handle unwaited."""
    size = hvd.size()
    hvd.allreduce_async(torch.ones(3), name=f"{tag}.allreduce")
    # Not contiguous: a copy back.
    hvd.allreduce_async_(torch.ones(4, 2).t(), name=f"{tag}.allreduce_")
    hvd.grouped_allreduce_async_([torch.ones(2), torch.ones(3)], name=f"{tag}.grouped_")
    hvd.allgather_async(torch.ones(2, 2), name=f"{tag}.allgather")
    hvd.grouped_allgather_async([torch.ones(1), torch.ones(2)], name=f"{tag}.grouped_allgather")
    hvd.broadcast_async_(torch.ones(3), 0, name=f"{tag}.broadcast_")
    hvd.alltoall_async(torch.ones(size, 2), name=f"{tag}.alltoall")
    hvd.reducescatter_async(torch.ones(size, 2), name=f"{tag}.reducescatter")
    hvd.grouped_reducescatter_async([torch.ones(size), torch.ones(size)], name=f"{tag}.grouped_rs")


def test_handles_dropped_without_synchronize_are_released():
    assert all(count == 0 for count in _handle_table_sizes().values()), _handle_table_sizes()
    for round_ in range(20):
        submit_and_drop_every_kind(f"handles.dropped.{round_}")
    gc.collect()
    hvd.barrier()  # ordered after every operation above, so all have completed
    assert all(count == 0 for count in _handle_table_sizes().values()), _handle_table_sizes()


def test_a_failed_in_place_op_leaves_its_tensor_and_nothing_behind():
    """Ranks that disagree on the shape fail the op at synchronize(): the caller's
    (non-contiguous) tensor is not written and no table keeps an entry for it."""
    shape = (4, 2) if hvd.rank() == 0 else (4, 3)
    tensor = torch.full(shape, float(hvd.rank())).t()
    handle = hvd.allreduce_async_(tensor, name="handles.failed_in_place", op=hvd.Sum)
    if hvd.size() > 1:
        with pytest.raises(hvd.HordeInternalError, match="disagree on the shape"):
            hvd.synchronize(handle)
        assert torch.equal(tensor, torch.full(shape, float(hvd.rank())).t())
    else:
        assert hvd.synchronize(handle) is tensor
    assert all(count == 0 for count in _handle_table_sizes().values()), _handle_table_sizes()


def test_an_operation_refused_at_submission_leaves_nothing_behind():
    """Refused by the runtime after its tensors were checked: single and grouped alike."""
    with pytest.raises(ValueError):
        hvd.allreduce_async(torch.ones(3, dtype=torch.bool), name="handles.refused", op=hvd.Average)
    with pytest.raises(ValueError):
        flags = [torch.ones(2, dtype=torch.bool), torch.ones(2, dtype=torch.bool)]
        hvd.grouped_allreduce_async(flags, name="handles.refused_group", op=hvd.Average)
    assert all(count == 0 for count in _handle_table_sizes().values()), _handle_table_sizes()
