"""A joined rank contributes the identity of the reduce op: the others' Min, Max and
Product come out as if it were not there (zeros would make Min 0 for positive values,
Max 0 for negative ones and Product 0), Sum and Average as before (Average still
divides by size(), truncating for integers). The last rank joins first; every other
rank reduces once, then joins.
"""

import math

import pytest
import torch

import horde.torch as hvd

needs_two_ranks = pytest.mark.skipif(hvd.size() < 2, reason="needs at least 2 ranks")


def contribution(rank, op_name, dtype):
    """One sign per test, so that a zero from the joined rank would show: negative for
    Max where the dtype has negatives, positive otherwise."""
    value = 3 + rank
    return -value if op_name == "Max" and dtype != torch.uint8 else value


def expected_result(op_name, dtype):
    active = [contribution(r, op_name, dtype) for r in range(hvd.size() - 1)]
    if op_name == "Average":
        total = sum(active)
        return total / hvd.size() if dtype.is_floating_point else int(total / hvd.size())
    return {"Min": min, "Max": max, "Sum": sum, "Product": math.prod}[op_name](active)


@needs_two_ranks
@pytest.mark.parametrize("dtype",
                         [torch.float32, torch.float64, torch.int32, torch.int64, torch.uint8],
                         ids=lambda d: str(d).split(".")[1])
@pytest.mark.parametrize("op_name", ["Min", "Max", "Product", "Sum", "Average"])
def test_joined_rank_contributes_the_identity(dtype, op_name):
    if hvd.rank() == hvd.size() - 1:
        hvd.join()
        return
    mine = torch.full((4,), contribution(hvd.rank(), op_name, dtype), dtype=dtype)
    result = hvd.allreduce(mine, name=f"join.identity.{op_name}.{dtype}", op=getattr(hvd, op_name))
    expected = torch.full((4,), expected_result(op_name, dtype), dtype=dtype)
    assert torch.equal(result, expected), (result, expected)
    hvd.join()
