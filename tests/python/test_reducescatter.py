"""reducescatter: every rank's tensor (one shape on every rank) is reduced and rank r
keeps its share of the first dimension d -- d // size rows, plus one if r < d % size --
checked against the result each rank computes locally from every rank's (seeded)
contribution."""

import pytest
import torch

import horde.torch as hvd

needs_two_ranks = pytest.mark.skipif(hvd.size() < 2, reason="needs at least 2 ranks")

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.bool]
OPS = {"Sum": hvd.Sum, "Average": hvd.Average}
# Reduced 16-bit floats are rounded to 16 bits after every pairwise step.
TOLERANCE = {torch.float16: dict(rtol=1e-2, atol=1e-2), torch.bfloat16: dict(rtol=4e-2, atol=4e-2)}


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def rows_of(rank, first_dim):
    """[start, end) of the rows ``rank`` keeps, by Horovod's rule."""
    base, extra = divmod(first_dim, hvd.size())
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def expected_share(tensors, op_name, dtype, prescale=1.0, postscale=1.0):
    """The reduction computed in float64 and cast back (integer Average truncates toward
    zero; bool Sum is `or`), this rank's rows of it."""
    total = sum(t.double() * prescale for t in tensors)
    if op_name == "Average":
        total = total / hvd.size()
    start, end = rows_of(hvd.rank(), tensors[0].shape[0])
    return (total * postscale)[start:end].to(dtype)


def assert_matches(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual, expected, **TOLERANCE.get(expected.dtype, {}))


def value_range(dtype):
    if dtype == torch.bool:
        return 0, 2
    if dtype == torch.uint8:
        return 0, 60
    return (-2.0, 2.0) if dtype.is_floating_point else (-30, 30)


# First dimensions: a multiple of size, one more (uneven), fewer rows than ranks, none.
FIRST_DIMS = {"even": lambda n: 2 * n, "uneven": lambda n: 2 * n + 1,
              "fewer_than_ranks": lambda n: n - 1 if n > 1 else 1, "empty": lambda n: 0}
CASES = [(dtype, op_name, dims) for dtype in DTYPES for op_name in OPS for dims in FIRST_DIMS
         if not (dtype == torch.bool and op_name == "Average")]


@pytest.mark.parametrize("dtype,op_name,dims", CASES,
                         ids=[f"{dtype_name(d)}-{o}-{f}" for d, o, f in CASES])
def test_reducescatter(rank_tensor, dtype, op_name, dims):
    shape = (FIRST_DIMS[dims](hvd.size()), 3)
    tensors = [rank_tensor(r, shape, dtype, *value_range(dtype)) for r in range(hvd.size())]
    mine = tensors[hvd.rank()].clone()
    result = hvd.reducescatter(mine, name=f"reducescatter.{dtype_name(dtype)}.{op_name}.{dims}",
                               op=OPS[op_name])
    assert_matches(result, expected_share(tensors, op_name, dtype))
    assert torch.equal(mine, tensors[hvd.rank()])  # the input is left alone


@pytest.mark.parametrize("trailing", [(), (2, 2)], ids=["1d", "3d"])
def test_reducescatter_of_other_ranks(rank_tensor, trailing):
    shape = (2 * hvd.size() + 1,) + trailing
    tensors = [rank_tensor(r, shape, torch.float32, -1, 1) for r in range(hvd.size())]
    result = hvd.reducescatter(tensors[hvd.rank()], name=f"reducescatter.ranks.{len(trailing)}")
    assert_matches(result, expected_share(tensors, "Average", torch.float32))


SCALED_CASES = [(torch.float32, "Sum", 0.5, 3.0), (torch.float64, "Average", 2.0, 0.25),
                (torch.float16, "Sum", 0.5, 2.0), (torch.bfloat16, "Average", 2.0, 0.5),
                (torch.int32, "Sum", 3.0, 1.0)]


@pytest.mark.parametrize("dtype,op_name,prescale,postscale", SCALED_CASES)
def test_reducescatter_scale_factors(rank_tensor, dtype, op_name, prescale, postscale):
    shape = (2 * hvd.size() + 1, 2)
    tensors = [rank_tensor(r, shape, dtype, *value_range(dtype)) for r in range(hvd.size())]
    mine = tensors[hvd.rank()].clone()
    result = hvd.reducescatter(mine, name=f"reducescatter.scaled.{dtype_name(dtype)}.{op_name}",
                               op=OPS[op_name], prescale_factor=prescale,
                               postscale_factor=postscale)
    assert_matches(result, expected_share(tensors, op_name, dtype, prescale, postscale))
    assert torch.equal(mine, tensors[hvd.rank()])  # prescaling works on a copy


# From 1 MiB on, the reduce-scatter runs on horde's ring: uneven rows of several of its
# segments, alone, fused, and scaled.
LARGE_CASES = [(torch.float32, "Average", 1.0), (torch.int64, "Sum", 1.0),
               (torch.float16, "Sum", 0.5), (torch.float64, "Sum", 2.0)]


@pytest.mark.parametrize("dtype,op_name,prescale", LARGE_CASES,
                         ids=[f"{dtype_name(d)}-{o}" for d, o, _ in LARGE_CASES])
def test_large_reducescatters_alone_and_fused(rank_tensor, dtype, op_name, prescale):
    shapes = [(1000 * hvd.size() + 1, 300), (7 * hvd.size() + 3, 200)]
    tensors = [[rank_tensor(r, shape, dtype, *value_range(dtype)) for r in range(hvd.size())]
               for shape in shapes]
    alone = hvd.reducescatter(tensors[0][hvd.rank()], op=OPS[op_name], prescale_factor=prescale,
                              name=f"reducescatter.large.{dtype_name(dtype)}")
    assert_matches(alone, expected_share(tensors[0], op_name, dtype, prescale))
    fused = hvd.grouped_reducescatter([t[hvd.rank()] for t in tensors], op=OPS[op_name],
                                      prescale_factor=prescale,
                                      name=f"reducescatter.large.fused.{dtype_name(dtype)}")
    for result, each in zip(fused, tensors):
        assert_matches(result, expected_share(each, op_name, dtype, prescale))


def test_reducescatter_async_and_unnamed(rank_tensor):
    tensors = [rank_tensor(r, (hvd.size() + 1,), torch.float64, -1, 1) for r in range(hvd.size())]
    handle = hvd.reducescatter_async(tensors[hvd.rank()], op=hvd.Sum)
    assert_matches(hvd.synchronize(handle), expected_share(tensors, "Sum", torch.float64))
    again = hvd.reducescatter(tensors[hvd.rank()], op=hvd.Sum)
    assert_matches(again, expected_share(tensors, "Sum", torch.float64))


def assert_next_reducescatter_works(name):
    result = hvd.reducescatter(torch.ones(hvd.size(), 2), name=name, op=hvd.Sum)
    assert torch.equal(result, torch.full((1, 2), float(hvd.size())))


@pytest.mark.parametrize("op_name", ["Min", "Max", "Product"])
def test_reducescatter_supports_only_sum_and_average(op_name):
    with pytest.raises(ValueError) as error:
        hvd.reducescatter(torch.ones(4), name=f"reducescatter.op.{op_name}",
                          op=getattr(hvd, op_name))
    assert (f"reducescatter 'reducescatter.op.{op_name}': reduce op {op_name} is not supported; "
            "reducescatter supports Sum and Average") in str(error.value)
    assert_next_reducescatter_works(f"reducescatter.op.{op_name}.after")


def test_reducescatter_rejects_scalars_and_bool_average():
    with pytest.raises(ValueError, match="a scalar has no first dimension to split"):
        hvd.reducescatter(torch.tensor(1.0), name="reducescatter.scalar")
    with pytest.raises(ValueError, match="Average is not defined for bool tensors"):
        hvd.reducescatter(torch.ones(2, dtype=torch.bool), name="reducescatter.bool")
    assert_next_reducescatter_works("reducescatter.rejects.after")


@needs_two_ranks
def test_reducescatter_shapes_must_match_on_every_rank():
    name = "reducescatter.shape.mismatch"
    with pytest.raises(hvd.HordeInternalError) as error:
        hvd.reducescatter(torch.ones(hvd.size() + hvd.rank(), 2), name=name)
    message = str(error.value)
    assert f"ranks disagree on the shape of reducescatter '{name}': " in message, message
    assert f"[{hvd.size()}, 2] on rank 0" in message, message
    assert_next_reducescatter_works(f"{name}.after")


@pytest.mark.parametrize("op_name,prescale,postscale",
                         [("Sum", 1.0, 1.0), ("Average", 1.0, 1.0), ("Average", 2.0, 0.5),
                          ("Sum", 3.0, 1.0)])
def test_reducescatter_gradient_is_the_scaled_allgather_of_gradients(rank_tensor, op_name,
                                                                     prescale, postscale):
    """loss = (output * w).sum() with this rank's w: the gradient of each rank's rows is
    the w of the rank that kept them, times the scale factors and, for Sum, the set's
    size (Horovod's rule: Average gives the allgathered gradient unscaled)."""
    d = 2 * hvd.size() + 1
    shares = [rows_of(r, d) for r in range(hvd.size())]
    weights = [rank_tensor(r, (end - start, 2), torch.float64, -2, 2)
               for r, (start, end) in enumerate(shares)]
    mine = torch.ones(d, 2, dtype=torch.float64, requires_grad=True)
    output = hvd.reducescatter(mine, name=f"reducescatter.grad.{op_name}.{prescale}",
                               op=OPS[op_name], prescale_factor=prescale,
                               postscale_factor=postscale)
    (output * weights[hvd.rank()]).sum().backward()
    scale = prescale * postscale * (1 if op_name == "Average" else hvd.size())
    torch.testing.assert_close(mine.grad, torch.cat(weights) * scale)
