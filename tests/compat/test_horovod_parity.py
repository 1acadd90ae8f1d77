"""What a Horovod script or test can observe beyond names: the optimizer on ranks outside
its process set, its generated parameter names, the exception classes of what is not
implemented, and Adasum near each float type's limits (sparse embeddings under SparseAdam:
test_horovod_training.py).
Modeled on Horovod's test_torch.py and test_adasum_pytorch.py; every test leaves no
process set behind, even when it fails."""

import contextlib

import pytest
import torch
import torch.nn as nn

import horovod.torch as hvd


@contextlib.contextmanager
def added_process_set(ranks):
    """A process set that is removed again on every rank, whatever the test does."""
    process_set = hvd.add_process_set(hvd.ProcessSet(ranks))
    try:
        yield process_set
    finally:
        hvd.remove_process_set(process_set)


def test_optimizer_outside_its_process_set_is_a_plain_local_optimizer():
    hvd.init()
    if hvd.size() < 2:
        pytest.skip("needs a rank outside the set")
    torch.manual_seed(7)
    models = [nn.Linear(3, 2), nn.Linear(3, 2)]  # one per set, trained on its own
    with added_process_set([0]) as first, added_process_set(range(1, hvd.size())) as rest:
        optimizers = [hvd.DistributedOptimizer(torch.optim.SGD(m.parameters(), lr=0.5),
                                               named_parameters=m.named_parameters(),
                                               process_set=s)
                      for m, s in zip(models, (first, rest))]
        mine = 0 if first.included() else 1
        for model, optimizer in zip(models, optimizers):
            before = [p.detach().clone() for p in model.parameters()]
            optimizer.zero_grad()
            model(torch.full((4, 3), float(hvd.rank() + 1))).sum().backward()
            local = [p.grad.clone() for p in model.parameters()]
            optimizer.step()
            if model is models[mine]:
                continue
            # Not a member: no collective, the step is the plain local one.
            for p, start, grad in zip(model.parameters(), before, local):
                assert torch.allclose(p.detach(), start - 0.5 * grad)
        # Members of a set averaged within it: the same parameters on each of its ranks.
        gathered = hvd.allgather_object([p.detach() for p in models[mine].parameters()],
                                        process_set=(first, rest)[mine])
        assert all(torch.equal(a, b) for other in gathered for a, b in zip(gathered[0], other))


def test_optimizer_parameter_names_without_named_parameters():
    hvd.init()
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    base = torch.optim.SGD([{"params": model[0].parameters()},
                            {"params": model[1].parameters(), "lr": 0.01}], lr=0.1)
    optimizer = hvd.DistributedOptimizer(base)
    names = optimizer._parameter_names
    assert isinstance(names, dict)
    assert set(names) == set(model.parameters())
    assert len(set(names.values())) == len(names), "generated names must be unique"
    assert hvd.allgather_object(sorted(names.values())) == [sorted(names.values())] * hvd.size()
    named = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                     named_parameters=model.named_parameters())
    assert named._parameter_names == {p: n for n, p in model.named_parameters()}


def test_what_horovod_does_not_implement_raises_not_implemented_error():
    hvd.init()
    with pytest.raises(NotImplementedError):
        hvd.reducescatter(torch.ones(hvd.size() * 2), op=hvd.Adasum)
    # Caught as RuntimeError, as Horovod's scripts catch it.
    with pytest.raises(RuntimeError):
        hvd.grouped_reducescatter([torch.ones(hvd.size() * 2)], op=hvd.Adasum)
    assert hvd.allreduce(torch.ones(2), op=hvd.Sum).tolist() == [hvd.size()] * 2
    if hvd.size() < 3:
        return
    with added_process_set(range(3)) as three:
        if three.included():
            with pytest.raises(NotImplementedError):
                hvd.allreduce(torch.ones(3), op=hvd.Adasum, process_set=three)
            model = nn.Linear(2, 1)
            with pytest.raises(NotImplementedError):
                hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         op=hvd.Adasum, process_set=three)


def adasum_reference(vectors):
    """Horovod's recursive pairing in float64: rank r with r ^ 1, then groups of two..."""
    zero_norm2 = 2.2250738585072014e-308 ** 0.5
    while len(vectors) > 1:
        paired = []
        for a, b in zip(vectors[0::2], vectors[1::2]):
            dot, aa, bb = a @ b, a @ a, b @ b
            ca = 1.0 - dot / (2.0 * aa) if aa >= zero_norm2 else 1.0
            cb = 1.0 - dot / (2.0 * bb) if bb >= zero_norm2 else 1.0
            paired.append(ca * a + cb * b)
        vectors = paired
    return vectors[0]


ADASUM_TYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


@pytest.mark.parametrize("dtype", ADASUM_TYPES, ids=str)
@pytest.mark.parametrize("magnitude", ["smallest_normal", "sqrt_largest"])
@pytest.mark.parametrize("shape", ["parallel", "orthogonal"])
def test_adasum_near_the_limits_of_each_float_type(dtype, magnitude, shape):
    hvd.init()
    size = hvd.size()
    if size & (size - 1):
        pytest.skip("Adasum needs a power-of-two number of ranks")
    info = torch.finfo(dtype)
    # Two elements per rank: float16's smallest normal squared is 3.7e-9, so the squared
    # norm stays below 1e-8 (where an older guard took such vectors for zero), and squares
    # of sqrt(largest) / 4 stay within float64.
    scale = info.tiny if magnitude == "smallest_normal" else info.max ** 0.5 / 4
    vectors = []
    for r in range(size):
        if shape == "parallel":
            v = torch.tensor([1.0, 1.25], dtype=torch.float64) * scale
        else:
            v = torch.zeros(size * 2, dtype=torch.float64)
            v[r * 2:(r + 1) * 2] = scale
        vectors.append(v.to(dtype))
    result = hvd.allreduce(vectors[hvd.rank()], op=hvd.Adasum,
                           name=f"parity.adasum.{dtype}.{magnitude}.{shape}")
    expected = adasum_reference([v.to(torch.float64) for v in vectors]).to(dtype)
    assert result.dtype == dtype
    assert torch.isfinite(result.to(torch.float64)).all()
    torch.testing.assert_close(result.to(torch.float64), expected.to(torch.float64),
                               rtol=1e-2 if info.bits == 16 else 1e-6, atol=0.0)
    # Identical vectors give their average, the vector itself, whenever their squared
    # norm exists in float64 (float64's smallest normal squared underflows: such vectors
    # count as zero there, as in Horovod, and add up).
    if shape == "parallel" and float(vectors[0].to(torch.float64).pow(2).sum()) > 0:
        torch.testing.assert_close(result, vectors[0], rtol=1e-2 if info.bits == 16 else 1e-6,
                                   atol=0.0)
