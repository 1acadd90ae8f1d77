"""Tensor fusion: a burst of small allreduces is packed into fewer collectives."""

import pytest
import torch

import horde.torch as hvd

NUM_TENSORS = 300
ELEMENTS = 10


def stats_delta(before, after):
    return {key: after[key] - before[key] for key in before}


def test_burst_of_small_allreduces_is_fused():
    def contribution(rank, i):
        return torch.arange(ELEMENTS, dtype=torch.float32) * (i + 1) + rank

    before = hvd.runtime_stats()
    handles = [hvd.allreduce_async(contribution(hvd.rank(), i), name=f"fusion.{i}", op=hvd.Sum)
               for i in range(NUM_TENSORS)]
    results = [hvd.synchronize(handle) for handle in handles]
    delta = stats_delta(before, hvd.runtime_stats())

    # Every rank executes the same responses in the same order, so the counts agree.
    counts = torch.tensor([delta["responses_executed"], delta["fused_responses"],
                           delta["fused_tensors"]])
    assert torch.equal(hvd.allgather(counts.unsqueeze(0), name="fusion.counts"),
                       counts.repeat(hvd.size(), 1))

    for i, result in enumerate(results):
        expected = sum(contribution(r, i) for r in range(hvd.size()))
        assert torch.equal(result, expected), f"tensor fusion.{i}"
    assert delta["allreduce_tensors"] == NUM_TENSORS
    assert delta["allreduce_bytes"] == NUM_TENSORS * ELEMENTS * 4
    assert delta["error_responses"] == 0
    # Submitting a tensor is faster than a negotiation round, so tensors queue up while a
    # round runs and the next round carries them together: fusion happens on any number of
    # ranks (with more ranks, rounds also wait for the slowest rank).
    assert delta["fused_responses"] >= 1
    assert delta["fused_tensors"] >= 2
    assert delta["responses_executed"] < NUM_TENSORS
    unfused = delta["responses_executed"] - delta["fused_responses"]
    assert unfused + delta["fused_tensors"] == NUM_TENSORS


def test_burst_with_mixed_signatures_is_reduced_correctly():
    # Only allreduces that agree on dtype, reduce op and scale factors may share a buffer.
    dtypes = [torch.float32, torch.float64, torch.int32, torch.float16]
    ops = {"Sum": hvd.Sum, "Max": hvd.Max, "Average": hvd.Average}
    cases = [(i, dtypes[i % 4], list(ops)[i % 3], [1.0, 2.0][i % 2]) for i in range(60)]

    def contribution(rank, i):
        return torch.arange(i % 5 + 1, dtype=torch.float64) * (i + 1) + rank

    handles = [hvd.allreduce_async(contribution(hvd.rank(), i).to(dtype), name=f"fusion.mixed.{i}",
                                   op=ops[op_name], prescale_factor=prescale)
               for i, dtype, op_name, prescale in cases]
    results = [hvd.synchronize(handle) for handle in handles]
    for (i, dtype, op_name, prescale), result in zip(cases, results):
        scaled = torch.stack([contribution(r, i) * prescale for r in range(hvd.size())])
        expected = {"Sum": scaled.sum(0), "Max": scaled.max(0).values,
                    "Average": scaled.sum(0) / hvd.size()}[op_name].to(dtype)
        assert result.dtype == dtype
        torch.testing.assert_close(result, expected, rtol=1e-2 if dtype == torch.float16 else 1e-6,
                                   atol=0, msg=f"tensor fusion.mixed.{i}")


# Subprocess check, independent of the job's size: run once per job, on rank 0.
@pytest.mark.skipif(hvd.rank() != 0, reason="runs its subprocess on rank 0 only")
@pytest.mark.parametrize("variable", ["HORDE_FUSION_THRESHOLD", "HOROVOD_FUSION_THRESHOLD"])
def test_fusion_threshold_zero_disables_fusion(run_python, variable):
    out = run_python(f"""
        import torch
        import horde.torch as hvd
        hvd.init()
        handles = [hvd.allreduce_async(torch.full((4,), float(i)), name=f"t{{i}}", op=hvd.Sum)
                   for i in range({NUM_TENSORS})]
        ok = all(torch.equal(hvd.synchronize(h), torch.full((4,), float(i)))
                 for i, h in enumerate(handles))
        stats = hvd.runtime_stats()
        print(ok, stats["responses_executed"], stats["fused_tensors"])
    """, env={variable: "0"})
    assert out.split() == ["True", str(NUM_TENSORS), "0"], out
