"""alltoall: rank r sends splits[j] rows of its tensor to rank j and receives, in rank
order, what every rank sent it. Every rank rebuilds every rank's (seeded) tensor and
splits, so it can compute its own expected output locally."""

from pathlib import Path

import pytest
import torch

import horde.torch as hvd
from _child_job import CHILD_PRELUDE

MPIRUN_2 = [str(Path(__file__).resolve().parents[2] / "scripts" / "mpirun.sh"), "-np", "2"]
needs_two_ranks = pytest.mark.skipif(hvd.size() < 2, reason="needs at least 2 ranks")

DTYPES = [torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.float64, torch.bool]


def uneven_splits(sender):
    """The rows ``sender`` sends to each rank: 0, 1 or 2, differing per pair of ranks."""
    return [(sender + 2 * receiver) % 3 for receiver in range(hvd.size())]


def expected_alltoall(tensors, splits_of):
    """What this rank receives: from each rank r, its rows bound for this rank."""
    me = hvd.rank()
    pieces = []
    for r, tensor in enumerate(tensors):
        offset = sum(splits_of(r)[:me])
        pieces.append(tensor[offset:offset + splits_of(r)[me]])
    return torch.cat(pieces), [splits_of(r)[me] for r in range(hvd.size())]


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


@pytest.mark.parametrize("splits_form", ["list", "tensor"])
@pytest.mark.parametrize("trailing", [(), (2, 3)], ids=["1d", "3d"])
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_name)
def test_alltoall_uneven_splits(rank_tensor, dtype, trailing, splits_form):
    low, high = (0, 2) if dtype == torch.bool else (-8, 8) if dtype != torch.uint8 else (0, 200)
    tensors = [rank_tensor(r, (sum(uneven_splits(r)),) + trailing, dtype, low, high)
               for r in range(hvd.size())]
    splits = uneven_splits(hvd.rank())
    if splits_form == "tensor":
        splits = torch.tensor(splits, dtype=torch.int32)
    output, received = hvd.alltoall(tensors[hvd.rank()], splits=splits,
                                    name=(f"alltoall.{dtype_name(dtype)}.{len(trailing)}."
                                          f"{splits_form}"))
    expected, expected_received = expected_alltoall(tensors, uneven_splits)
    assert output.dtype == dtype and output.shape == expected.shape
    assert torch.equal(output, expected)
    assert received.dtype == torch.int32 and received.tolist() == expected_received


def test_alltoall_even_split_returns_the_output_only(rank_tensor):
    tensors = [rank_tensor(r, (2 * hvd.size(), 3), torch.float32, -1, 1) for r in range(hvd.size())]
    output = hvd.alltoall(tensors[hvd.rank()], name="alltoall.even")
    assert isinstance(output, torch.Tensor)
    expected, _ = expected_alltoall(tensors, lambda r: [2] * hvd.size())
    assert torch.equal(output, expected)


@pytest.mark.parametrize("with_splits", [False, True])
def test_alltoall_async_synchronizes_to_output_and_received_splits(rank_tensor, with_splits):
    """As in Horovod, synchronize() gives (output, received_splits) with or without splits."""
    tensors = [rank_tensor(r, (hvd.size(),), torch.float64, -1, 1) for r in range(hvd.size())]
    splits = [1] * hvd.size() if with_splits else None
    handle = hvd.alltoall_async(tensors[hvd.rank()], splits=splits,
                                name=f"alltoall.async.{with_splits}")
    output, received = hvd.synchronize(handle)
    expected, expected_received = expected_alltoall(tensors, lambda r: [1] * hvd.size())
    assert torch.equal(output, expected)
    assert received.tolist() == expected_received


def test_alltoall_of_no_rows_and_of_rows_without_elements():
    empty = hvd.alltoall(torch.ones(0, 3), splits=[0] * hvd.size(), name="alltoall.no_rows")[0]
    assert empty.shape == (0, 3)
    hollow, received = hvd.alltoall(torch.ones(hvd.size(), 0), splits=[1] * hvd.size(),
                                    name="alltoall.hollow_rows")
    assert hollow.shape == (hvd.size(), 0) and received.tolist() == [1] * hvd.size()


def test_alltoall_unnamed_calls_match_in_order():
    for i in range(3):
        mine = torch.full((hvd.size(),), float(hvd.rank() * 10 + i))
        output = hvd.alltoall(mine)
        assert output.tolist() == [float(r * 10 + i) for r in range(hvd.size())]


def assert_next_alltoall_works(name):
    mine = torch.arange(hvd.size(), dtype=torch.int64) + 100 * hvd.rank()
    output = hvd.alltoall(mine, name=name)
    assert output.tolist() == [100 * r + hvd.rank() for r in range(hvd.size())]


# case -> (splits for a tensor of 2 * size() rows (or, for "indivisible", the rows), the
# error's text)
BAD_SPLITS = {
    "too_few": (lambda n: [2] * (n - 1) + [],
                "splits has {short} entries; expected one per rank ({n})"),
    "too_many": (lambda n: [2] * n + [0], "splits has {long} entries; expected one per rank ({n})"),
    "negative": (lambda n: [-1] + [2] * (n - 2) + [5] if n > 1 else [-1],
                 "splits[0] is -1; splits must not be negative"),
    "sum_too_small": (lambda n: [1] * n,
                      "splits sum to {n}; expected the first dimension of the tensor, {rows}"),
    "float_list": (lambda n: [2.0] * n,
                   "splits must be a 1-D integer tensor or a list of ints, one per rank"),
    "float_tensor": (lambda n: torch.full((n,), 2.0),
                     "splits must be a 1-D integer tensor or a list of ints, one per rank"),
    "matrix": (lambda n: torch.full((n, 1), 2), "got a 2-D torch.int64 tensor"),
    "not_a_list": (lambda n: 2,
                   "splits must be a 1-D integer tensor or a list of ints, one per rank; got 2"),
}


@pytest.mark.parametrize("case", list(BAD_SPLITS))
def test_alltoall_bad_splits_raise_value_error_at_submit(case):
    """Every rank passes the same bad splits: each raises ValueError, none waits."""
    make_splits, text = BAD_SPLITS[case]
    n = hvd.size()
    if case == "too_few" and n == 1:
        pytest.skip("a single rank cannot pass too few splits")
    message = text.format(n=n, short=n - 1, long=n + 1, rows=2 * n)
    with pytest.raises(ValueError) as error:
        hvd.alltoall(torch.ones(2 * n, 3), splits=make_splits(n), name=f"alltoall.bad.{case}")
    assert message in str(error.value), str(error.value)
    assert_next_alltoall_works(f"alltoall.bad.{case}.after")


@needs_two_ranks
def test_alltoall_without_splits_needs_a_divisible_first_dimension():
    with pytest.raises(ValueError) as error:
        hvd.alltoall(torch.ones(hvd.size() + 1), name="alltoall.indivisible")
    assert (f"alltoall 'alltoall.indivisible': the first dimension ({hvd.size() + 1}) cannot be "
            f"split evenly among {hvd.size()} ranks; pass splits") in str(error.value)
    assert_next_alltoall_works("alltoall.indivisible.after")


def test_alltoall_of_a_scalar_raises_value_error():
    with pytest.raises(ValueError, match="a scalar has no first dimension to split"):
        hvd.alltoall(torch.tensor(1.0), name="alltoall.scalar")
    assert_next_alltoall_works("alltoall.scalar.after")


@needs_two_ranks
def test_alltoall_trailing_dimensions_must_match_on_every_rank():
    name = "alltoall.trailing.mismatch"
    mine = torch.ones(hvd.size(), 3 if hvd.rank() == 0 else 4)
    with pytest.raises(hvd.HordeInternalError) as error:
        hvd.alltoall(mine, name=name)
    others = {2: "rank 1", 3: "ranks 1,2"}.get(hvd.size(), f"ranks 1-{hvd.size() - 1}")
    expected = (f"ranks disagree on the shape (all but the first dimension) of alltoall '{name}': "
                f"[*, 3] on rank 0; [*, 4] on {others}")
    assert expected in str(error.value), str(error.value)
    assert_next_alltoall_works(f"{name}.after")


@pytest.mark.skipif(hvd.size() != 1, reason="starts its own 2-rank job: only in the 1-rank run")
def test_bad_splits_on_one_rank_fail_there_and_the_stall_inspector_fails_the_other(
        run_python, tmp_path):
    """Only rank 1 passes bad splits. It raises ValueError at submit and never submits the
    alltoall, so rank 0's waits for it, like any operation one rank skips: the stall
    inspector reports it and, with a shutdown time, fails it instead of hanging. Both
    ranks then go on (rank 1 once rank 0's has failed, told by a file, or its next
    alltoall would wait long enough to fail too)."""
    out = run_python(CHILD_PRELUDE + """
import time
marker = os.environ["ALLTOALL_TEST_MARKER"]
if rank == 1:
    try:
        hvd.alltoall(torch.ones(4), splits=[3, 3], name="one.rank.bad")
    except ValueError as e:
        say("ValueError: " + str(e))
    deadline = time.monotonic() + 20
    while not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.01)
else:
    try:
        within(20, lambda: hvd.alltoall(torch.ones(4), splits=[2, 2], name="one.rank.bad"))
        say("error: none")
    except hvd.HordeInternalError as e:
        say("error: " + str(e).replace(chr(10), " "))
    open(marker, "w").close()
output = within(20, lambda: hvd.alltoall(torch.full((2,), float(rank)), name="after"))
say(f"after: {output.tolist()}")
""", env={"HORDE_STALL_CHECK_TIME_SECONDS": "1", "HORDE_STALL_SHUTDOWN_TIME_SECONDS": "2",
          "ALLTOALL_TEST_MARKER": str(tmp_path / "failed_on_rank0")},
        launcher=MPIRUN_2)
    assert ("rank 1: ValueError: alltoall 'one.rank.bad': splits sum to 6; expected the first "
            "dimension of the tensor, 4") in out, out
    assert "rank 0: error: " in out and "rank 0: error: none" not in out, out
    assert "rank 1 has not submitted alltoall 'one.rank.bad'" in out, out
    for r in (0, 1):
        assert f"rank {r}: after: [0.0, 1.0]" in out, out


def test_alltoall_gradient_is_the_alltoall_of_the_gradient_back(rank_tensor):
    """loss = (output * w).sum() with this rank's w: the gradient of the rows this rank
    sent to rank j is the part of w_j that multiplied them there."""
    weights = [rank_tensor(r, (sum(uneven_splits(q)[r] for q in range(hvd.size())), 2),
                           torch.float64, -2, 2) for r in range(hvd.size())]
    me = hvd.rank()
    mine = torch.ones(sum(uneven_splits(me)), 2, dtype=torch.float64, requires_grad=True)
    output, received = hvd.alltoall(mine, splits=uneven_splits(me), name="alltoall.grad")
    assert not received.requires_grad
    (output * weights[me]).sum().backward()
    expected = []
    for j in range(hvd.size()):
        offset = sum(uneven_splits(q)[j] for q in range(me))
        expected.append(weights[j][offset:offset + uneven_splits(me)[j]])
    torch.testing.assert_close(mine.grad, torch.cat(expected))


def test_alltoall_gradient_with_an_even_split(rank_tensor):
    weights = [rank_tensor(r, (hvd.size(),), torch.float64, -2, 2) for r in range(hvd.size())]
    mine = torch.ones(hvd.size(), dtype=torch.float64, requires_grad=True)
    (hvd.alltoall(mine, name="alltoall.grad.even") * weights[hvd.rank()]).sum().backward()
    expected = torch.stack([weights[j][hvd.rank()] for j in range(hvd.size())])
    torch.testing.assert_close(mine.grad, expected)
