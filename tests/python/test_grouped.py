"""grouped_allreduce and its in-place and asynchronous forms: a list of tensors reduced
as one unit (negotiated together, released together, fused where they fit)."""

import pytest
import torch

import horde.torch as hvd

SHAPES = [(), (3,), (2, 3), (4, 1, 2), (0,)]
DTYPE_SETS = {"float32": [torch.float32] * 5,
              "mixed": [torch.float32, torch.float64, torch.int32, torch.float16, torch.float32]}
OPS = {"Sum": hvd.Sum, "Average": hvd.Average, "Max": hvd.Max}


def contributions(rank_tensor, dtypes):
    """[rank][member] tensors: every rank's members, so each rank can compute the result."""
    return [[rank_tensor(r * 10 + i, shape, dtype, -8, 8)
             for i, (shape, dtype) in enumerate(zip(SHAPES, dtypes))]
            for r in range(hvd.size())]


def expected_result(every, i, op_name, prescale=1.0, postscale=1.0):
    stacked = torch.stack([every[r][i].to(torch.float64) * prescale for r in range(hvd.size())])
    if op_name == "Max":
        out = stacked.max(0).values if stacked.numel() else stacked.sum(0)
    else:
        out = stacked.sum(0)
        if op_name == "Average":
            out = out / hvd.size()
    return out * postscale


def assert_member(result, expected, dtype):
    assert result.dtype == dtype and result.shape == expected.shape
    if dtype.is_floating_point:
        tol = 1e-2 if dtype == torch.float16 else 1e-5
        torch.testing.assert_close(result.to(torch.float64), expected, rtol=tol, atol=tol)
    else:  # integer Average truncates toward zero, as the plain allreduce does
        assert torch.equal(result, expected.to(dtype))


FORMS = ["grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
         "grouped_allreduce_async_"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("op_name", list(OPS))
@pytest.mark.parametrize("dtypes", list(DTYPE_SETS))
def test_grouped_allreduce(rank_tensor, form, op_name, dtypes):
    dtypes = DTYPE_SETS[dtypes]
    every = contributions(rank_tensor, dtypes)
    mine = [t.clone() for t in every[hvd.rank()]]
    name = f"grouped.{form}.{op_name}.{len(set(dtypes))}"
    op = OPS[op_name]
    if form in ("grouped_allreduce", "grouped_allreduce_"):
        results = getattr(hvd, form)(mine, name=name, op=op)
    else:
        handle = getattr(hvd, form)(mine, name=name, op=op)
        assert isinstance(handle, int)
        results = hvd.synchronize(handle)
    assert isinstance(results, list) and len(results) == len(SHAPES)
    in_place = form.endswith("_")
    for i, (result, dtype) in enumerate(zip(results, dtypes)):
        assert (result is mine[i]) == in_place, i
        if not in_place:
            assert torch.equal(mine[i], every[hvd.rank()][i]), f"input {i} changed"
        assert_member(result, expected_result(every, i, op_name), dtype)


@pytest.mark.parametrize("form", ["grouped_allreduce_", "grouped_allreduce_async_"])
def test_grouped_allreduce_in_place_non_contiguous(rank_tensor, form):
    every = [[rank_tensor(r * 10 + i, (3, 4), torch.float64, -1, 1) for i in range(3)]
             for r in range(hvd.size())]
    mine = [t.clone().t() for t in every[hvd.rank()]]  # transposed views: not contiguous
    assert not mine[0].is_contiguous()
    if form == "grouped_allreduce_":
        results = hvd.grouped_allreduce_(mine, name=f"grouped.noncontig.{form}", op=hvd.Sum)
    else:
        results = hvd.synchronize(hvd.grouped_allreduce_async_(
            mine, name=f"grouped.noncontig.{form}", op=hvd.Sum))
    for i, result in enumerate(results):
        assert result is mine[i]
        torch.testing.assert_close(result, sum(every[r][i] for r in range(hvd.size())).t())


def test_grouped_allreduce_poll_and_scale_factors(rank_tensor):
    every = contributions(rank_tensor, DTYPE_SETS["float32"])
    handle = hvd.grouped_allreduce_async(every[hvd.rank()], name="grouped.scaled", op=hvd.Average,
                                         prescale_factor=0.5, postscale_factor=3.0)
    while not hvd.poll(handle):
        pass
    results = hvd.synchronize(handle)
    for i, result in enumerate(results):
        assert_member(result, expected_result(every, i, "Average", 0.5, 3.0), torch.float32)


def test_grouped_allreduce_unnamed_and_single_member():
    results = hvd.grouped_allreduce([torch.full((2,), hvd.rank() + 1.0)], op=hvd.Sum)
    assert len(results) == 1 and results[0].tolist() == [hvd.size() * (hvd.size() + 1) / 2] * 2
    results = hvd.grouped_allreduce([torch.ones(1), torch.ones(2)], op=hvd.Sum)
    assert [r.tolist() for r in results] == [[hvd.size()], [hvd.size()] * 2]


def test_grouped_allreduce_of_nothing_raises():
    with pytest.raises(ValueError, match="non-empty"):
        hvd.grouped_allreduce_async([], name="grouped.empty")


def test_grouped_allreduce_fp16_compression_restores_dtypes(rank_tensor):
    dtypes = [torch.float32, torch.float64]
    every = [[rank_tensor(r * 10 + i, (4,), dtype, -1, 1) for i, dtype in enumerate(dtypes)]
             for r in range(hvd.size())]
    results = hvd.grouped_allreduce(every[hvd.rank()], name="grouped.fp16", op=hvd.Sum,
                                    compression=hvd.Compression.fp16)
    for i, (result, dtype) in enumerate(zip(results, dtypes)):
        assert result.dtype == dtype
        expected = sum(every[r][i] for r in range(hvd.size()))
        torch.testing.assert_close(result, expected, rtol=1e-2, atol=1e-2)


def stats_delta(before, after):
    return {key: after[key] - before[key] for key in before}


@pytest.mark.parametrize("dtypes,responses", [("float32", 1), ("mixed", 4)])
def test_group_goes_through_one_fused_response(rank_tensor, dtypes, responses):
    """The group's members are released in the same round, so those that share a
    signature (dtype, op, scale factors) share one fused response: one for five float32
    tensors; one per dtype (float32 x2, float64, int32, float16) for the mixed group."""
    dtypes = DTYPE_SETS[dtypes]
    every = contributions(rank_tensor, dtypes)
    before = hvd.runtime_stats()
    hvd.grouped_allreduce(every[hvd.rank()], name=f"grouped.stats.{len(set(dtypes))}", op=hvd.Sum)
    delta = stats_delta(before, hvd.runtime_stats())
    counts = torch.tensor([delta["responses_executed"], delta["fused_responses"],
                           delta["fused_tensors"]])
    gathered = hvd.allgather(counts.unsqueeze(0), name=f"grouped.stats.{len(set(dtypes))}.counts")
    assert torch.equal(gathered, counts.repeat(hvd.size(), 1))
    assert delta["allreduce_tensors"] == len(SHAPES)
    assert delta["responses_executed"] == responses, delta
    fused_members = len(SHAPES) if responses == 1 else 2  # the mixed group's two float32s
    assert delta["fused_responses"] == 1 and delta["fused_tensors"] == fused_members, delta
    assert delta["error_responses"] == 0


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_grouped_allreduce_gradient(rank_tensor, op_name):
    """loss = sum_i (result_i * w_i).sum() with rank-dependent weights: each input's
    gradient is the grouped allreduce (same op) of every rank's weights."""
    shapes = [(3,), (2, 2)]
    weights = [[rank_tensor(r * 10 + i, shape, torch.float64, -2, 2)
                for i, shape in enumerate(shapes)]
               for r in range(hvd.size())]
    inputs = [torch.ones(shape, dtype=torch.float64, requires_grad=True) for shape in shapes]
    results = hvd.grouped_allreduce(inputs, name=f"grouped.grad.{op_name}", op=OPS[op_name])
    assert all(r.requires_grad for r in results)
    sum((r * w).sum() for r, w in zip(results, weights[hvd.rank()])).backward()
    for i, x in enumerate(inputs):
        expected = sum(weights[r][i] for r in range(hvd.size()))
        if op_name == "Average":
            expected = expected / hvd.size()
        torch.testing.assert_close(x.grad, expected)
