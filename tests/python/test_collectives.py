"""allreduce, allgather and broadcast for every dtype and a few shapes, checked against the
result each rank computes locally from every rank's (seeded) contribution."""

import time

import pytest
import torch

import horde.torch as hvd

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.bool]
SHAPES = [(5,), (3, 4), (2, 3, 2)]
OPS = {"Sum": hvd.Sum, "Average": hvd.Average, "Min": hvd.Min, "Max": hvd.Max,
       "Product": hvd.Product}
# Reduced 16-bit floats are rounded to 16 bits after every pairwise step.
TOLERANCE = {torch.float16: dict(rtol=1e-2, atol=1e-2), torch.bfloat16: dict(rtol=4e-2, atol=4e-2)}


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def value_range(dtype, op_name="Sum"):
    """[low, high) such that reducing over up to 4 ranks neither overflows nor loses precision;
    Min and Max of integers, which cannot overflow, over the whole range (values of 128 and
    more are where a signed comparison of uint8, as MPICH 4.0's MPI_MIN makes, goes wrong)."""
    if dtype == torch.bool:
        return 0, 2
    if dtype.is_floating_point:
        return (0.5, 1.5) if op_name == "Product" else (-2.0, 2.0)
    if op_name in ("Min", "Max"):
        bits = min(torch.iinfo(dtype).bits, 40)
        return (0, 2 ** bits) if dtype == torch.uint8 else (-2 ** (bits - 1), 2 ** (bits - 1))
    if op_name == "Product":
        return (0, 3) if dtype == torch.uint8 else (-2, 3)
    return (0, 60) if dtype == torch.uint8 else (-30, 30)


def contributions(rank_tensor, shape_of, dtype, low, high):
    """Every rank's contribution; ``shape_of(rank)`` gives that rank's shape."""
    return [rank_tensor(r, shape_of(r), dtype, low, high) for r in range(hvd.size())]


def reduce_locally(tensors, op_name, dtype):
    """The reduction horde must produce, computed in float64 and cast back: Average of
    integers truncates toward zero, and for bool Sum/Max are `or`, Min/Product are `and`."""
    stacked = torch.stack([t.double() for t in tensors])
    result = {"Sum": lambda: stacked.sum(0),
              "Average": lambda: stacked.sum(0) / len(tensors),
              "Min": lambda: stacked.min(0).values,
              "Max": lambda: stacked.max(0).values,
              "Product": lambda: stacked.prod(0)}[op_name]()
    return result.to(dtype)


def assert_matches(actual, expected):
    torch.testing.assert_close(actual, expected, **TOLERANCE.get(expected.dtype, {}))


ALLREDUCE_CASES = [(dtype, shape, op_name)
                   for dtype in DTYPES for shape in SHAPES for op_name in OPS
                   if not (dtype == torch.bool and op_name == "Average")]


@pytest.mark.parametrize("dtype,shape,op_name", ALLREDUCE_CASES,
                         ids=[f"{dtype_name(d)}-{len(s)}d-{o}" for d, s, o in ALLREDUCE_CASES])
def test_allreduce(rank_tensor, dtype, shape, op_name):
    tensors = contributions(rank_tensor, lambda r: shape, dtype, *value_range(dtype, op_name))
    name = f"allreduce.{dtype_name(dtype)}.{len(shape)}d.{op_name}"
    result = hvd.allreduce(tensors[hvd.rank()], name=name, op=OPS[op_name])
    assert result.dtype == dtype and result.shape == shape
    assert_matches(result, reduce_locally(tensors, op_name, dtype))


SCALED_CASES = [(torch.float32, "Sum", 0.5, 3.0), (torch.float64, "Average", 2.0, 0.25),
                (torch.float16, "Sum", 0.5, 2.0), (torch.bfloat16, "Average", 2.0, 0.5),
                (torch.int32, "Sum", 3.0, 1.0)]


@pytest.mark.parametrize("dtype,op_name,prescale,postscale", SCALED_CASES)
def test_allreduce_scale_factors(rank_tensor, dtype, op_name, prescale, postscale):
    tensors = contributions(rank_tensor, lambda r: (6,), dtype, *value_range(dtype))
    name = f"allreduce.scaled.{dtype_name(dtype)}.{op_name}"
    result = hvd.allreduce(tensors[hvd.rank()], name=name, op=OPS[op_name],
                           prescale_factor=prescale, postscale_factor=postscale)
    expected = reduce_locally([t.double() * prescale for t in tensors], op_name, torch.float64)
    assert_matches(result, (expected * postscale).to(dtype))


def test_allreduce_default_op_is_average(rank_tensor):
    tensors = contributions(rank_tensor, lambda r: (4,), torch.float32, -2.0, 2.0)
    result = hvd.allreduce(tensors[hvd.rank()], name="allreduce.default_op")
    assert_matches(result, reduce_locally(tensors, "Average", torch.float32))


@pytest.mark.parametrize("average,op_name", [(True, "Average"), (False, "Sum")])
def test_allreduce_average_flag(rank_tensor, average, op_name):
    tensors = contributions(rank_tensor, lambda r: (4,), torch.float32, -2.0, 2.0)
    with pytest.warns(DeprecationWarning):
        result = hvd.allreduce(tensors[hvd.rank()], average=average,
                               name=f"allreduce.average.{average}")
    assert_matches(result, reduce_locally(tensors, op_name, torch.float32))


def test_allreduce_op_and_average_together_raise():
    with pytest.raises(ValueError, match="only one of them"):
        hvd.allreduce(torch.ones(3), average=True, op=hvd.Sum, name="allreduce.op_and_average")


def allreduce_in_place_with(form, tensor, name, op):
    if form == "allreduce_":
        return hvd.allreduce_(tensor, name=name, op=op)
    return hvd.synchronize(hvd.allreduce_async_(tensor, name=name, op=op))


@pytest.mark.parametrize("form", ["allreduce_", "allreduce_async_"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_allreduce_in_place(rank_tensor, form, layout):
    tensors = contributions(rank_tensor, lambda r: (3, 4), torch.float32, -2.0, 2.0)
    base = tensors[hvd.rank()].clone()
    tensor = base if layout == "contiguous" else base.t()
    assert tensor.is_contiguous() == (layout == "contiguous")
    result = allreduce_in_place_with(form, tensor, f"{form}.{layout}", hvd.Max)
    expected = reduce_locally(tensors, "Max", torch.float32)
    assert_matches(base, expected)
    assert_matches(result, expected if layout == "contiguous" else expected.t())


def test_allreduce_async_poll_synchronize(rank_tensor):
    tensors = contributions(rank_tensor, lambda r: (8,), torch.float64, -2.0, 2.0)
    mine = tensors[hvd.rank()].clone()
    handle = hvd.allreduce_async(mine, name="allreduce.async.poll", op=hvd.Sum)
    deadline = time.monotonic() + 60
    while not hvd.poll(handle):
        assert time.monotonic() < deadline, "poll never reported completion"
        time.sleep(0.001)
    assert_matches(hvd.synchronize(handle), reduce_locally(tensors, "Sum", torch.float64))
    assert torch.equal(mine, tensors[hvd.rank()]), "allreduce_async modified its input"


def test_allreduce_fp16_compression_restores_dtype(rank_tensor):
    tensors = contributions(rank_tensor, lambda r: (10,), torch.float32, -2.0, 2.0)
    result = hvd.allreduce(tensors[hvd.rank()], name="allreduce.fp16_compression", op=hvd.Sum,
                           compression=hvd.Compression.fp16)
    assert result.dtype == torch.float32
    expected = reduce_locally([t.half() for t in tensors], "Sum", torch.float32)
    torch.testing.assert_close(result, expected, **TOLERANCE[torch.float16])


ALLGATHER_CASES = [(dtype, ndim) for dtype in DTYPES for ndim in (1, 2, 3)]


@pytest.mark.parametrize("dtype,ndim", ALLGATHER_CASES,
                         ids=[f"{dtype_name(d)}-{n}d" for d, n in ALLGATHER_CASES])
def test_allgather_uneven_first_dimension(rank_tensor, dtype, ndim):
    trailing = [(), (3,), (2, 3)][ndim - 1]
    tensors = contributions(rank_tensor, lambda r: (r + 1,) + trailing, dtype, *value_range(dtype))
    result = hvd.allgather(tensors[hvd.rank()], name=f"allgather.{dtype_name(dtype)}.{ndim}d")
    assert torch.equal(result, torch.cat(tensors))


def test_allgather_with_an_empty_contribution(rank_tensor):
    tensors = contributions(rank_tensor, lambda r: (r, 2), torch.int32, -30, 30)
    result = hvd.synchronize(hvd.allgather_async(tensors[hvd.rank()], name="allgather.empty_rank0"))
    assert torch.equal(result, torch.cat(tensors))


def test_allgather_scalars_become_one_row_each():
    result = hvd.allgather(torch.tensor(float(hvd.rank())), name="allgather.scalar")
    assert torch.equal(result, torch.arange(hvd.size(), dtype=torch.float32))


def broadcast_with(form, tensor, root, name):
    if form == "broadcast":
        return hvd.broadcast(tensor, root, name=name)
    if form == "broadcast_async":
        return hvd.synchronize(hvd.broadcast_async(tensor, root, name=name))
    if form == "broadcast_":
        return hvd.broadcast_(tensor, root, name=name)
    return hvd.synchronize(hvd.broadcast_async_(tensor, root, name=name))


BROADCAST_FORMS = ["broadcast", "broadcast_async", "broadcast_", "broadcast_async_"]


@pytest.mark.parametrize("form", BROADCAST_FORMS)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_name)
def test_broadcast_from_every_root(rank_tensor, dtype, form):
    tensors = contributions(rank_tensor, lambda r: (2, 3), dtype, *value_range(dtype))
    runs = []  # (root, the tensor passed in, the result); asserted after all collectives ran
    for root in range(hvd.size()):
        tensor = tensors[hvd.rank()].clone()
        name = f"{form}.{dtype_name(dtype)}.root{root}"
        runs.append((root, tensor, broadcast_with(form, tensor, root, name)))
    in_place = form.endswith("_")
    for root, tensor, result in runs:
        assert torch.equal(result, tensors[root])
        assert torch.equal(tensor, tensors[root] if in_place else tensors[hvd.rank()])


@pytest.mark.parametrize("form", ["broadcast_", "broadcast_async_"])
def test_broadcast_in_place_non_contiguous(rank_tensor, form):
    tensors = contributions(rank_tensor, lambda r: (3, 4), torch.float32, -2.0, 2.0)
    root = hvd.size() - 1
    base = tensors[hvd.rank()].clone()
    result = broadcast_with(form, base.t(), root, f"{form}.non_contiguous")
    assert torch.equal(result, tensors[root].t())
    assert torch.equal(base, tensors[root])


@pytest.mark.parametrize("form",
                         ["allreduce_", "allreduce_async_", "broadcast_", "broadcast_async_"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_in_place_forms_return_their_argument(form, layout):
    """As in Horovod and torch's own in-place ops: the caller gets back its own tensor."""
    tensor = torch.ones(3, 4) if layout == "contiguous" else torch.ones(4, 3).t()
    name = f"{form}.returns_argument.{layout}"
    if form.startswith("allreduce"):
        result = allreduce_in_place_with(form, tensor, name, hvd.Sum)
    else:
        result = broadcast_with(form, tensor, 0, name)
    assert result is tensor


IN_PLACE_FORMS = ["allreduce_", "allreduce_async_", "broadcast_", "broadcast_async_"]


@pytest.mark.parametrize("form", IN_PLACE_FORMS)
def test_in_place_writes_back_into_a_view_of_a_leaf_that_requires_grad(rank_tensor, form):
    """The copy back is the operation's write, outside autograd (as an optimizer's update
    of a parameter is): torch would refuse it in a view of a leaf that requires grad."""
    tensors = contributions(rank_tensor, lambda r: (3, 4), torch.float32, -2.0, 2.0)
    leaf = tensors[hvd.rank()].clone().requires_grad_()
    view = leaf.t()
    name = f"{form}.view_of_grad_leaf"
    if form.startswith("allreduce"):
        result = allreduce_in_place_with(form, view, name, hvd.Max)
        expected = reduce_locally(tensors, "Max", torch.float32)
    else:
        result = broadcast_with(form, view, hvd.size() - 1, name)
        expected = tensors[hvd.size() - 1]
    assert result is view and leaf.requires_grad and leaf.grad_fn is None
    assert_matches(leaf.detach(), expected)
