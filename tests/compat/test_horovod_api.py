"""horovod.torch's public names, each used as Horovod's own tests and scripts use it, with
Horovod's return types and results. Written in the style of Horovod's test_torch.py: every
test starts with hvd.init(), tensors are built with the legacy constructors, errors are
caught as RuntimeError."""

import inspect
import itertools
import warnings

import numpy as np
import pytest
import torch

import horovod.torch as hvd
from horovod.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt

# horovod/torch/__init__.py's public names (0.28), but `elastic` (not in horde yet) and
# the helpers check_extension/gpu_available/split_list from horovod.common.util.
HOROVOD_TORCH_NAMES = """
    Compression allgather_object broadcast_object broadcast_optimizer_state broadcast_parameters
    allreduce allreduce_async allreduce_ allreduce_async_ grouped_allreduce grouped_allreduce_async
    grouped_allreduce_ grouped_allreduce_async_ sparse_allreduce_async allgather allgather_async
    grouped_allgather grouped_allgather_async broadcast broadcast_async broadcast_ broadcast_async_
    alltoall alltoall_async reducescatter reducescatter_async grouped_reducescatter
    grouped_reducescatter_async join barrier poll synchronize init shutdown is_initialized
    start_timeline stop_timeline size local_size cross_size rank local_rank cross_rank
    is_homogeneous mpi_threads_supported mpi_enabled mpi_built gloo_enabled gloo_built nccl_built
    ddl_built ccl_built cuda_built rocm_built ProcessSet global_process_set add_process_set
    remove_process_set Average Sum Adasum Min Max Product HorovodInternalError
    DistributedOptimizer SyncBatchNorm
""".split()

INT_AND_FLOAT = [torch.IntTensor, torch.LongTensor, torch.FloatTensor, torch.DoubleTensor]
DIMS = [1, 2, 3]


def test_every_public_name_exists():
    missing = [name for name in HOROVOD_TORCH_NAMES if not hasattr(hvd, name)]
    assert missing == []
    assert hvd.HorovodInternalError is HorovodInternalError
    assert issubclass(HorovodInternalError, RuntimeError)
    assert issubclass(HostsUpdatedInterrupt, RuntimeError)
    assert hvd.mpi_ops.Sum is hvd.Sum  # scripts import from horovod.torch.mpi_ops too


# Horovod's parameters, in order, with their defaults ("-" for none); horde may add its
# own after them. "set" is global_process_set, "none" Compression.none.
HOROVOD_SIGNATURES = {
    "allreduce": "tensor=- average=None name=None compression=none op=None prescale_factor=1.0 "
                 "postscale_factor=1.0 process_set=set",
    "allreduce_async": "tensor=- average=None name=None op=None prescale_factor=1.0 "
                       "postscale_factor=1.0 process_set=set",
    "allreduce_": "tensor=- average=None name=None op=None prescale_factor=1.0 "
                  "postscale_factor=1.0 process_set=set",
    "grouped_allreduce": "tensors=- average=None name=None compression=none op=None "
                         "prescale_factor=1.0 postscale_factor=1.0 process_set=set",
    "allgather": "tensor=- name=None process_set=set",
    "broadcast": "tensor=- root_rank=- name=None process_set=set",
    "broadcast_": "tensor=- root_rank=- name=None process_set=set",
    "alltoall": "tensor=- splits=None name=None process_set=set",
    "join": "device=-1",
    "barrier": "process_set=set",
    "broadcast_object": "obj=- root_rank=0 name=None process_set=set",
    "allgather_object": "obj=- name=None process_set=set",
    "init": "comm=None process_sets=None",
    "DistributedOptimizer": "optimizer=- named_parameters=None compression=none "
                            "backward_passes_per_step=1 op=Average gradient_predivide_factor=1.0 "
                            "num_groups=0 groups=None sparse_as_dense=False process_set=set",
}


def described(value):
    if value is inspect.Parameter.empty:
        return "-"
    if value is hvd.global_process_set:
        return "set"
    if value is hvd.Compression.none:
        return "none"
    if value is hvd.Average:
        return "Average"
    return repr(value)


@pytest.mark.parametrize("name", sorted(HOROVOD_SIGNATURES))
def test_horovods_parameters_come_first_with_horovods_defaults(name):
    expected = HOROVOD_SIGNATURES[name].split()
    parameters = list(inspect.signature(getattr(hvd, name)).parameters.values())
    got = [f"{p.name}={described(p.default)}" for p in parameters[:len(expected)]]
    assert got == expected


def test_built_and_enabled_have_horovods_types():
    hvd.init()
    for flag in ["mpi_built", "mpi_enabled", "gloo_built", "gloo_enabled", "ddl_built",
                 "ccl_built", "cuda_built", "rocm_built", "mpi_threads_supported"]:
        assert type(getattr(hvd, flag)()) is bool, flag
    assert type(hvd.nccl_built()) is int
    assert (hvd.nccl_built() > 0) == hvd.cuda_built()
    assert hvd.mpi_built() and hvd.mpi_enabled()
    assert not hvd.gloo_enabled() and not hvd.ccl_built() and not hvd.ddl_built()


def test_topology():
    hvd.init()
    assert hvd.is_initialized() is True
    for value in [hvd.size(), hvd.rank(), hvd.local_size(), hvd.local_rank(), hvd.cross_size(),
                  hvd.cross_rank()]:
        assert type(value) is int
    assert 0 <= hvd.rank() < hvd.size()
    assert type(hvd.is_homogeneous()) is bool


def test_horovod_allreduce_with_the_deprecated_average_flag():
    hvd.init()
    size = hvd.size()
    for dtype, dim in itertools.product(INT_AND_FLOAT, DIMS):
        torch.manual_seed(1234)
        tensor = torch.FloatTensor(*([17] * dim)).random_(-100, 100).type(dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            summed = hvd.allreduce(tensor, average=False)
        assert summed.dtype == tensor.dtype and summed.shape == tensor.shape
        assert torch.equal(summed, tensor * size)  # same seed on every rank


def test_horovod_allreduce_average_inplace_and_async_fused():
    hvd.init()
    size = hvd.size()
    tensor = torch.FloatTensor(17, 17).random_(-100, 100)
    averaged = hvd.allreduce(tensor, op=hvd.Average)
    assert torch.allclose(averaged, tensor)
    inplace = tensor.clone()
    assert hvd.allreduce_(inplace, op=hvd.Sum) is inplace
    assert torch.allclose(inplace, tensor * size)
    handles = [hvd.allreduce_async(tensor * i, op=hvd.Sum) for i in range(5)]
    while not all(hvd.poll(h) for h in handles):
        pass
    for i, handle in enumerate(handles):
        assert torch.allclose(hvd.synchronize(handle), tensor * i * size)
    assert type(hvd.poll(hvd.allreduce_async_(tensor.clone()))) is bool


def test_horovod_allreduce_prescale_postscale():
    hvd.init()
    size = hvd.size()
    tensor = torch.DoubleTensor(5).fill_(1.0)
    assert torch.allclose(hvd.allreduce(tensor, op=hvd.Sum, prescale_factor=0.5),
                          tensor * 0.5 * size)
    assert torch.allclose(hvd.allreduce(tensor, op=hvd.Sum, postscale_factor=3.0),
                          tensor * 3.0 * size)


def test_horovod_allreduce_error_then_the_next_one_works():
    """Shapes differ across ranks: every rank gets a RuntimeError, and the next allreduce runs."""
    hvd.init()
    if hvd.size() == 1:
        pytest.skip("Only one worker available")
    tensor = torch.FloatTensor(*([17 + hvd.rank()] * 3)).fill_(1)
    with pytest.raises(RuntimeError):
        hvd.allreduce(tensor)
    assert torch.equal(hvd.allreduce(torch.ones(3), op=hvd.Sum), torch.ones(3) * hvd.size())


def test_horovod_allreduce_duplicate_name_error():
    hvd.init()
    if hvd.size() == 1:
        pytest.skip("Only one worker available")
    tensor = torch.FloatTensor(17, 17)
    first = hvd.allreduce_async(tensor, name="duplicate_name")
    with pytest.raises(ValueError):
        for _ in range(10):
            hvd.allreduce_async(tensor, name="duplicate_name")
    hvd.synchronize(first)


def test_horovod_allreduce_grad_and_grad_average():
    hvd.init()
    size = hvd.size()
    for dtype, dim in itertools.product([torch.FloatTensor, torch.DoubleTensor], DIMS):
        tensor = torch.FloatTensor(*([17] * dim)).random_(-100, 100).type(dtype).requires_grad_()
        hvd.allreduce(tensor, op=hvd.Sum).backward(torch.ones([17] * dim))
        assert np.allclose(tensor.grad.numpy(), np.ones([17] * dim) * size)
        tensor.grad = None
        hvd.allreduce(tensor, op=hvd.Average).backward(torch.ones([17] * dim))
        assert np.allclose(tensor.grad.numpy(), np.ones([17] * dim))


def test_horovod_grouped_allreduce_forms():
    hvd.init()
    size = hvd.size()
    tensors = [torch.FloatTensor(17, 17).random_(-100, 100) for _ in range(5)]
    summed = hvd.grouped_allreduce(tensors, op=hvd.Sum)
    assert type(summed) is list and len(summed) == 5
    assert all(torch.allclose(s, t * size) for s, t in zip(summed, tensors))
    copies = [t.clone() for t in tensors]
    result = hvd.grouped_allreduce_(copies, op=hvd.Average)
    assert all(r is c for r, c in zip(result, copies))
    assert all(torch.allclose(c, t) for c, t in zip(copies, tensors))
    outputs = hvd.synchronize(hvd.grouped_allreduce_async(tensors, op=hvd.Sum))
    assert type(outputs) is list
    assert all(torch.allclose(o, t * size) for o, t in zip(outputs, tensors))
    grads = [t.clone().requires_grad_() for t in tensors]
    for out in hvd.grouped_allreduce(grads, op=hvd.Sum):
        out.backward(torch.ones(17, 17))
    assert all(np.allclose(g.grad.numpy(), size) for g in grads)


def test_horovod_allgather_variable_size_and_grad():
    """Horovod's test_horovod_allgather_grad: rank r's gradient is r, whatever the size."""
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    sizes = [3, 2, 7, 4, 6, 8, 10] * 5
    sizes = sizes[:size]
    for dtype, dim in itertools.product([torch.FloatTensor, torch.DoubleTensor], DIMS):
        tensor = torch.FloatTensor(*([sizes[rank]] + [17] * (dim - 1))).fill_(1).mul_(rank)
        tensor = tensor.type(dtype).requires_grad_()
        gathered = hvd.allgather(tensor)
        assert list(gathered.shape) == [sum(sizes)] + [17] * (dim - 1)
        grad_ys = torch.cat([torch.ones([s] + [17] * (dim - 1)) * r for r, s in enumerate(sizes)])
        gathered.backward(grad_ys.type(dtype))
        assert np.allclose(tensor.grad.numpy(), np.ones([sizes[rank]] + [17] * (dim - 1)) * rank)
    out = hvd.grouped_allgather([torch.ones(2, 3) * rank, torch.ones(1) * rank])
    assert type(out) is list and out[0].shape == (2 * size, 3) and out[1].shape == (size,)


def test_horovod_broadcast_inplace_and_grad():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    for root_rank in range(size):
        tensor = torch.FloatTensor(17, 17).fill_(1).mul_(rank)
        assert torch.equal(hvd.broadcast(tensor, root_rank), torch.ones(17, 17) * root_rank)
        inplace = tensor.clone()
        assert hvd.broadcast_(inplace, root_rank) is inplace
        assert torch.equal(inplace, torch.ones(17, 17) * root_rank)
        grad_input = tensor.clone().requires_grad_()
        hvd.broadcast(grad_input, root_rank).backward(torch.ones(17, 17))
        c = 1 if rank == root_rank else 0
        assert np.allclose(grad_input.grad.numpy(), np.ones((17, 17)) * c)


def test_horovod_broadcast_rank_error():
    hvd.init()
    with pytest.raises((RuntimeError, ValueError)):
        hvd.broadcast(torch.ones(3), root_rank=hvd.size())
    assert torch.equal(hvd.broadcast(torch.ones(3), 0), torch.ones(3))


def test_horovod_alltoall_forms_and_grad():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    tensor = torch.FloatTensor(list(range(size))).repeat_interleave(2).mul(1 + rank)
    splits = torch.tensor([2] * size, dtype=torch.int32)
    output, received = hvd.alltoall(tensor, splits)
    assert received.tolist() == [2] * size
    assert output.tolist() == [float(rank * (1 + r)) for r in range(size) for _ in range(2)]
    assert torch.equal(hvd.alltoall(tensor), output)  # an even split returns the tensor only
    grad_input = tensor.clone().requires_grad_()
    out, _ = hvd.alltoall(grad_input, splits)
    out.backward(torch.ones_like(out))
    assert torch.equal(grad_input.grad, torch.ones_like(tensor))


def test_horovod_reducescatter_and_grad():
    """Default op Average; Horovod's gradient rule (allgather, times size for Sum)."""
    hvd.init()
    size = hvd.size()
    for dim in DIMS:
        tensor = torch.FloatTensor(*([size * 4] * dim)).fill_(1).requires_grad_()
        averaged = hvd.reducescatter(tensor)
        assert list(averaged.shape) == [4] + [size * 4] * (dim - 1)
        assert torch.allclose(averaged, torch.ones_like(averaged))
        averaged.backward(torch.ones_like(averaged))
        assert np.allclose(tensor.grad.numpy(), 1.0)
        tensor.grad = None
        summed = hvd.reducescatter(tensor, op=hvd.Sum)
        assert torch.allclose(summed, torch.ones_like(summed) * size)
        summed.backward(torch.ones_like(summed))
        assert np.allclose(tensor.grad.numpy(), size)
    out = hvd.grouped_reducescatter([torch.ones(size * 2), torch.ones(size, 3)], op=hvd.Sum)
    assert type(out) is list and out[0].shape == (2,) and out[1].shape == (1, 3)


def test_horovod_reducescatter_adasum_is_an_error():
    hvd.init()
    with pytest.raises((RuntimeError, ValueError)):
        hvd.reducescatter(torch.ones(hvd.size() * 2), op=hvd.Adasum)


def test_horovod_sparse_allreduce_async_returns_a_callable():
    hvd.init()
    dense = torch.zeros(5, 2)
    dense[hvd.rank() % 5] = 1
    handle = hvd.sparse_allreduce_async(dense.to_sparse(), name="compat.sparse", op=hvd.Sum)
    assert callable(handle)
    assert handle().to_dense().sum().item() == 2 * hvd.size()


def test_horovod_barrier_join_and_objects():
    hvd.init()
    assert hvd.barrier() is None
    last = hvd.join()
    assert type(last) is int and 0 <= last < hvd.size()
    sent = {"a": [1, 2]} if hvd.rank() == 0 else {}
    assert hvd.broadcast_object(sent, root_rank=0) == {"a": [1, 2]}
    assert hvd.allgather_object(hvd.rank()) == list(range(hvd.size()))


def test_horovod_join_allreduce_with_joined_ranks_contributing_zeros():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if size == 1:
        pytest.skip("Only one worker available")
    if rank == 0:
        ret = hvd.join(hvd.local_rank())
    else:
        averaged = hvd.allreduce(torch.ones(4) * 2, op=hvd.Average, name="compat.join.allreduce")
        assert torch.allclose(averaged, torch.ones(4) * 2 * (size - 1) / size)
        ret = hvd.join(hvd.local_rank())
    assert ret != 0
    assert hvd.allgather_object(ret) == [ret] * size


def test_horovod_join_allgather_and_broadcast():
    """test_horovod_join_allgather / _broadcast: the others' collective raises a RuntimeError
    while rank 0 has joined; join() returns the same, non-zero value everywhere."""
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if size == 1:
        pytest.skip("Only one worker available")
    for collective in [lambda t: hvd.allgather(t), lambda t: hvd.broadcast(t, 1)]:
        if rank == 0:
            ret = hvd.join(hvd.local_rank())
        else:
            try:
                collective(torch.FloatTensor(17, 17, 17))
                assert False, "the collective did not throw an error"
            except RuntimeError:
                pass
            ret = hvd.join(hvd.local_rank())
        assert ret != 0
        assert hvd.allgather_object(ret) == [ret] * size


def test_horovod_process_sets():
    hvd.init()
    size = hvd.size()
    if size == 1:
        pytest.skip("the only set of one rank is the global set, which exists already")
    evens = hvd.add_process_set(hvd.ProcessSet(range(0, size, 2)))
    assert isinstance(evens, hvd.ProcessSet)
    if evens.included():
        summed = hvd.allreduce(torch.ones(2), op=hvd.Sum, process_set=evens)
        assert torch.equal(summed, torch.ones(2) * evens.size())
    assert hvd.remove_process_set(evens) is True
    assert hvd.global_process_set.size() == size


def test_horovod_dynamic_timeline(tmp_path):
    hvd.init()
    path = str(tmp_path / f"timeline.{hvd.rank()}.json")
    hvd.start_timeline(path, mark_cycles=False)
    hvd.allreduce(torch.ones(4), name="test_allreduce")
    hvd.stop_timeline()
    if hvd.rank() == 0:
        with open(path) as f:
            text = f.read()
        assert "test_allreduce" in text
        assert "CYCLE_START" not in text


def test_horovod_compression_fp16():
    hvd.init()
    tensor = torch.FloatTensor(16).fill_(0.5)
    compressed, ctx = hvd.Compression.fp16.compress(tensor)
    assert compressed.dtype == torch.float16
    assert hvd.Compression.fp16.decompress(compressed, ctx).dtype == torch.float32
    out = hvd.allreduce(tensor, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert out.dtype == torch.float32 and torch.allclose(out, tensor * hvd.size())


def test_horovod_adasum_allreduce_of_identical_tensors_is_the_tensor():
    hvd.init()
    if hvd.size() & (hvd.size() - 1):
        pytest.skip("Adasum needs a power-of-two number of ranks")
    tensor = torch.DoubleTensor(8).fill_(3.0)
    assert torch.allclose(hvd.allreduce(tensor, op=hvd.Adasum), tensor)
