"""Every collective on GPU tensors gives what the host path gives, on any number of ranks,
over NCCL (default) or host staging (HORDE_GPU_OPERATIONS=MPI); plus the error for a
tensor on the GPU on one rank and on the host on another."""

import pytest
import torch

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64,
          torch.int16, torch.uint8]


@pytest.mark.parametrize("dtype", DTYPES)
def test_allreduce_sum_and_average(hvd, device, dtype):
    x = torch.arange(12, device=device).reshape(3, 4).to(dtype) + hvd.rank()
    total = sum(torch.arange(12).reshape(3, 4).to(torch.float64) + r for r in range(hvd.size()))
    got = hvd.allreduce(x, op=hvd.Sum, name=f"sum.{dtype}")
    assert got.device == device
    assert torch.equal(got.cpu().to(torch.float64), total.to(dtype).to(torch.float64))
    if dtype.is_floating_point:
        avg = hvd.allreduce(x, op=hvd.Average, name=f"avg.{dtype}")
        torch.testing.assert_close(avg.cpu().double(), total / hvd.size(), rtol=1e-2, atol=1e-2)


def test_allreduce_pre_and_postscale_fp16(hvd, device):
    x = torch.ones(1000, device=device, dtype=torch.float16)
    got = hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0, name="scaled")
    assert torch.all(got.cpu() == 1.5 * hvd.size())


def test_allgather_uneven_rows(hvd, device):
    x = torch.full((hvd.rank() + 1, 3), float(hvd.rank()), device=device)
    got = hvd.allgather(x, name="gather.uneven").cpu()
    expected = torch.cat([torch.full((r + 1, 3), float(r)) for r in range(hvd.size())])
    assert torch.equal(got, expected)


def test_broadcast(hvd, device):
    x = torch.full((5,), float(hvd.rank()), device=device)
    root = hvd.size() - 1
    assert torch.equal(hvd.broadcast(x, root_rank=root, name="bcast").cpu(),
                       torch.full((5,), float(root)))


def test_alltoall(hvd, device):
    # Rank r sends j + 1 rows of value r to rank j.
    splits = [j + 1 for j in range(hvd.size())]
    x = torch.full((sum(splits), 2), float(hvd.rank()), device=device)
    got = hvd.alltoall(x, splits=splits, name="a2a")
    got = got[0] if isinstance(got, tuple) else got
    expected = torch.cat([torch.full((hvd.rank() + 1, 2), float(r)) for r in range(hvd.size())])
    assert torch.equal(got.cpu(), expected)


def test_reducescatter(hvd, device):
    x = torch.arange(2 * hvd.size() + 1, dtype=torch.float32, device=device) * (hvd.rank() + 1)
    got = hvd.reducescatter(x, op=hvd.Sum, name="rs").cpu()
    full = (torch.arange(2 * hvd.size() + 1, dtype=torch.float32)
            * sum(r + 1 for r in range(hvd.size())))
    rows = [len(part) for part in torch.tensor_split(torch.zeros(2 * hvd.size() + 1), hvd.size())]
    start = sum(rows[: hvd.rank()])
    assert torch.equal(got, full[start:start + rows[hvd.rank()]])


@pytest.mark.parametrize("fused", [True, False])
def test_200_tensors_of_mixed_sizes_and_dtypes(hvd, device, fused):
    gen = torch.Generator().manual_seed(7)
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32]
    tensors = []
    for i in range(200):
        n = int(torch.randint(1, 5000, (1,), generator=gen))
        tensors.append(
            (torch.arange(n, device=device) % 7 + hvd.rank()).to(dtypes[i % len(dtypes)]))
    expected = [sum((t.cpu().double() - hvd.rank() + r) for r in range(hvd.size()))
                for t in tensors]
    if fused:  # all in flight at once: the planner fuses them
        handles = [hvd.allreduce_async_(t, op=hvd.Sum, name=f"mixed.f.{i}")
                   for i, t in enumerate(tensors)]
        for h in handles:
            hvd.synchronize(h)
    else:
        for i, t in enumerate(tensors):
            hvd.allreduce_(t, op=hvd.Sum, name=f"mixed.u.{i}")
    for t, e in zip(tensors, expected):
        assert torch.equal(t.cpu().double(), e.to(t.dtype).double())


def test_a_tensor_written_just_before_submit_is_reduced_with_its_new_values(hvd, device):
    # The write is queued behind a ~50 ms sleep on a side stream: only a runtime that
    # waits on the submitting stream's ready event sees the new values.
    side = torch.cuda.Stream(device)
    x = torch.zeros(1 << 20, device=device)
    torch.cuda.synchronize(device)
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        x.fill_(hvd.rank() + 1.0)
        handle = hvd.allreduce_async(x, op=hvd.Sum, name="ready.event")
    got = hvd.synchronize(handle)
    assert torch.all(got.cpu() == sum(r + 1.0 for r in range(hvd.size())))


def test_gpu_on_one_rank_and_cpu_on_another_is_a_mismatch(hvd, device):
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks")
    x = torch.ones(4, device=device if hvd.rank() == 0 else "cpu")
    with pytest.raises(Exception, match="device"):
        hvd.allreduce(x, name="mismatch.device")


def test_a_joined_rank_contributes_zeros_on_its_gpu(hvd, device):
    # The highest rank runs out of data first; the others' GPU allreduce still runs the
    # same collective on every rank (NCCL or host staging) with its zeros.
    first_out = hvd.size() - 1
    if hvd.size() > 1 and hvd.rank() == first_out:
        last = hvd.join(device=device.index)
    else:
        x = torch.full((1000,), hvd.rank() + 1.0, device=device)
        got = hvd.allreduce(x, op=hvd.Sum, name="joined.grad")
        active = range(hvd.size() - 1) if hvd.size() > 1 else range(1)
        assert torch.all(got.cpu() == sum(r + 1.0 for r in active))
        last = hvd.join()
    assert 0 <= last < hvd.size()


def test_in_place_on_non_contiguous_gpu_tensors_writes_back(hvd, device):
    root = hvd.size() - 1
    base = torch.arange(12, dtype=torch.float32, device=device).reshape(3, 4) + hvd.rank()
    view = base.t()
    assert hvd.allreduce_(view, op=hvd.Sum, name="in_place.noncontig") is view
    total = sum(torch.arange(12, dtype=torch.float32).reshape(3, 4) + r for r in range(hvd.size()))
    assert torch.equal(base.cpu(), total)
    mine = torch.full((4, 3), float(hvd.rank()), device=device)
    mine_view = mine.t()
    handle = hvd.broadcast_async_(mine_view, root, name="bcast_.noncontig")
    assert hvd.synchronize(handle) is mine_view
    assert torch.equal(mine.cpu(), torch.full((4, 3), float(root)))


def test_grouped_reducescatter_with_prescale_goes_through_one_launch(hvd, device):
    # Several entries, each prescaled through the shared scratch buffer.
    inputs = [torch.full((2 * hvd.size(), n), float(hvd.rank() + 1), device=device) for n in (1, 3)]
    outputs = hvd.grouped_reducescatter(inputs, op=hvd.Sum, prescale_factor=2.0, name="grouped_rs")
    total = 2.0 * sum(r + 1 for r in range(hvd.size()))
    for out, n in zip(outputs, (1, 3)):
        assert torch.equal(out.cpu(), torch.full((2, n), total))
