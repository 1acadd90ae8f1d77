"""Adasum (op=hvd.Adasum): allreduce, grouped and fused allreduces, its errors, and
DistributedOptimizer(op=hvd.Adasum), against a float64 numpy reference of Horovod's
recursive algorithm. Runs on 1, 2 and 4 ranks; on one rank Adasum is the identity.
"""

import pytest
import torch

import horde.torch as hvd

FLOAT_TYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
# Below this squared norm a vector counts as zero (Horovod's guard, about the square root
# of the smallest normal double).
ZERO_NORM2 = 2.2250738585072014e-308 ** 0.5


def needs_ranks(n):
    return pytest.mark.skipif(hvd.size() < n, reason=f"needs {n} ranks")


def combine(a, b):
    """Adasum of two float64 vectors, with Horovod's guard for (near) zero vectors."""
    dot, aa, bb = a @ b, a @ a, b @ b
    ca = 1.0 - dot / (2.0 * aa) if aa >= ZERO_NORM2 else 1.0
    cb = 1.0 - dot / (2.0 * bb) if bb >= ZERO_NORM2 else 1.0
    return ca * a + cb * b


def reference(tensors, dtype=torch.float64):
    """Adasum of one tensor per rank (a power-of-two count): rank pairs (0,1), (2,3), ...
    first, then their results pairwise, ... as the recursive halving combines them; each
    level's result is rounded to ``dtype``, as the ranks store it."""
    shape = tensors[0].shape
    vectors = [t.to(torch.float64).numpy().reshape(-1) for t in tensors]
    while len(vectors) > 1:
        vectors = [combine(vectors[i], vectors[i + 1]) for i in range(0, len(vectors), 2)]
        vectors = [torch.from_numpy(v).to(dtype).to(torch.float64).numpy() for v in vectors]
    return torch.from_numpy(vectors[0]).reshape(shape).to(dtype)


def assert_collectives_work(name):
    """A failed Adasum leaves the runtime healthy: the next collective works."""
    total = hvd.allreduce(torch.ones(3), name=name, op=hvd.Sum)
    assert torch.equal(total, torch.full((3,), float(hvd.size())))


def assert_same_on_every_rank(tensor, name):
    gathered = hvd.allgather(tensor.detach().reshape(1, -1), name=name)
    for r in range(hvd.size()):
        assert torch.equal(gathered[r], gathered[0]), f"rank {r} differs from rank 0"


# ---------------------------------------------------------------- allreduce

@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
def test_orthogonal_vectors_add(dtype):
    t = torch.zeros(3 * hvd.size(), dtype=dtype)
    t[3 * hvd.rank():3 * hvd.rank() + 3] = hvd.rank() + 1
    expected = torch.arange(1, hvd.size() + 1, dtype=dtype).repeat_interleave(3)
    assert torch.equal(hvd.allreduce(t, name=f"adasum.orthogonal.{dtype}", op=hvd.Adasum), expected)


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
def test_identical_vectors_give_themselves(dtype):
    t = (torch.arange(37, dtype=torch.float64) / 7 - 2).to(dtype)
    assert torch.equal(hvd.allreduce(t, name=f"adasum.identical.{dtype}", op=hvd.Adasum), t)


SHAPES = [(), (1,), (2,), (3,), (7,), (3, 5), (2, 3, 5), (1001,), (64, 33)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_matches_the_reference(rank_tensor, dtype, shape):
    tensors = [rank_tensor(r, shape, dtype, -1, 1) for r in range(hvd.size())]
    result = hvd.allreduce(tensors[hvd.rank()], name=f"adasum.ref.{dtype}.{shape}", op=hvd.Adasum)
    assert result.dtype == dtype and result.shape == torch.Size(shape)
    tolerance = (dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32
                 else dict(rtol=1e-12, atol=1e-12))
    torch.testing.assert_close(result, reference(tensors, dtype), **tolerance)
    assert_same_on_every_rank(result, f"adasum.ref.{dtype}.{shape}.check")


def test_in_place_and_async_forms(rank_tensor):
    tensors = [rank_tensor(r, (4, 9), torch.float64, -1, 1) for r in range(hvd.size())]
    mine = tensors[hvd.rank()].clone()
    assert hvd.allreduce_(mine, name="adasum.in_place", op=hvd.Adasum) is mine
    torch.testing.assert_close(mine, reference(tensors), rtol=1e-12, atol=1e-12)
    handle = hvd.allreduce_async(tensors[hvd.rank()], name="adasum.async", op=hvd.Adasum)
    torch.testing.assert_close(hvd.synchronize(handle), reference(tensors), rtol=1e-12, atol=1e-12)


def test_prescale_and_postscale_apply_as_for_sum(rank_tensor):
    tensors = [rank_tensor(r, (11,), torch.float64, -1, 1) for r in range(hvd.size())]
    result = hvd.allreduce(tensors[hvd.rank()], name="adasum.scaled", op=hvd.Adasum,
                           prescale_factor=3.0, postscale_factor=0.25)
    expected = reference([3.0 * t for t in tensors]) * 0.25
    torch.testing.assert_close(result, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype, value", [(torch.float16, 60000.0), (torch.bfloat16, 3e38),
                                          (torch.float32, 3e38)],
                         ids=["float16", "bfloat16", "float32"])
def test_values_near_the_type_limit_stay_finite(dtype, value):
    # Their squares overflow the type: dot products and combination run in float64.
    t = torch.tensor([value, -value, value / 2, 0.0], dtype=dtype)
    assert torch.equal(hvd.allreduce(t, name=f"adasum.limit.{dtype}", op=hvd.Adasum), t)
    one_hot = torch.zeros(hvd.size(), dtype=dtype)
    one_hot[hvd.rank()] = value
    summed = hvd.allreduce(one_hot, name=f"adasum.limit.orthogonal.{dtype}", op=hvd.Adasum)
    assert torch.equal(summed, torch.full((hvd.size(),), value, dtype=dtype))


# ---------------------------------------------------------------- fused, per tensor

def fusion_inputs(rank_tensor, rank):
    """Tensors whose coefficients differ: one identical on every rank (its result is
    itself), one one-hot per rank (the sum), random ones, and odd sizes. Coefficients of
    the whole fused buffer would get none of them right."""
    identical = torch.linspace(-1, 1, 10, dtype=torch.float64)
    one_hot = torch.zeros(hvd.size(), 3, dtype=torch.float64)
    one_hot[rank] = rank + 1.0
    return [identical, one_hot, torch.tensor(0.5 + rank, dtype=torch.float64),
            rank_tensor(rank, (5, 7), torch.float64, -1, 1),
            rank_tensor(rank * 7 + 1, (1,), torch.float64, -1, 1),
            rank_tensor(rank * 7 + 2, (33,), torch.float64, -1, 1)]


def check_fusion_results(results, rank_tensor):
    per_rank = [fusion_inputs(rank_tensor, r) for r in range(hvd.size())]
    for i, result in enumerate(results):
        expected = reference([inputs[i] for inputs in per_rank])
        torch.testing.assert_close(result, expected, rtol=1e-12, atol=1e-12,
                                   msg=lambda m: f"tensor {i}: {m}")
    assert torch.equal(results[0], per_rank[0][0])
    assert torch.equal(results[1].sum(dim=1),
                       torch.arange(1, hvd.size() + 1, dtype=torch.float64) * 3)


def test_grouped_allreduce_reduces_each_tensor_on_its_own(rank_tensor):
    inputs = fusion_inputs(rank_tensor, hvd.rank())
    before = hvd.runtime_stats()
    results = hvd.grouped_allreduce(inputs, name="adasum.grouped", op=hvd.Adasum)
    # A group is released as one unit, so these small tensors share one fused buffer.
    assert hvd.runtime_stats()["fused_tensors"] - before["fused_tensors"] == len(inputs)
    check_fusion_results(results, rank_tensor)
    separate = [hvd.allreduce(t, name=f"adasum.separate.{i}", op=hvd.Adasum)
                for i, t in enumerate(inputs)]
    for grouped, alone in zip(results, separate):
        torch.testing.assert_close(grouped, alone, rtol=1e-12, atol=1e-12)


def test_async_allreduces_that_fuse_reduce_each_tensor_on_its_own(rank_tensor):
    inputs = fusion_inputs(rank_tensor, hvd.rank())
    rounds = 20  # submitted faster than a round: most rounds fuse several
    before = hvd.runtime_stats()
    handles = [hvd.allreduce_async(t, name=f"adasum.burst.{k}.{i}", op=hvd.Adasum)
               for k in range(rounds) for i, t in enumerate(inputs)]
    results = [hvd.synchronize(h) for h in handles]
    assert hvd.runtime_stats()["fused_tensors"] - before["fused_tensors"] >= 2
    for k in range(rounds):
        check_fusion_results(results[k * len(inputs):(k + 1) * len(inputs)], rank_tensor)


def test_mixed_ops_in_one_burst_keep_their_own_reductions():
    # Adasum and Sum responses never share a fused buffer.
    t = torch.zeros(hvd.size(), dtype=torch.float32)
    t[hvd.rank()] = 2.0
    handles = [hvd.allreduce_async(t, name=f"adasum.mixed.{i}",
                                   op=[hvd.Adasum, hvd.Sum, hvd.Average][i % 3])
               for i in range(30)]
    for i, h in enumerate(handles):
        expected = torch.full((hvd.size(),), 2.0 if i % 3 < 2 else 2.0 / hvd.size())
        assert torch.equal(hvd.synchronize(h), expected), f"allreduce {i}"


# ---------------------------------------------------------------- join and errors

@needs_ranks(2)
def test_a_joined_rank_contributes_zeros_which_leave_the_others_alone(rank_tensor):
    last = hvd.size() - 1
    tensors = [rank_tensor(r, (6, 5), torch.float64, -1, 1) for r in range(hvd.size())]
    if hvd.rank() == last:
        # Joins first: the others' allreduce needs its zeros to complete.
        assert hvd.join() != last
        return
    result = hvd.allreduce(tensors[hvd.rank()], name="adasum.joined", op=hvd.Adasum)
    assert hvd.join() != last
    tensors[last] = torch.zeros_like(tensors[last])
    torch.testing.assert_close(result, reference(tensors), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.bool], ids=str)
def test_integer_and_bool_tensors_are_refused(dtype):
    with pytest.raises(ValueError, match=f"Adasum is not defined for {str(dtype)[6:]} tensors"):
        hvd.allreduce(torch.ones(4, dtype=dtype), name="adasum.int", op=hvd.Adasum)
    assert_collectives_work(f"adasum.after.{dtype}")


def test_reducescatter_with_adasum_is_not_implemented():
    # NotImplementedError, a RuntimeError, as Horovod raises for what it does not support.
    with pytest.raises(NotImplementedError, match="Adasum is not supported for reducescatter"):
        hvd.reducescatter(torch.ones(4, 2), name="adasum.reducescatter", op=hvd.Adasum)
    with pytest.raises(RuntimeError, match="Adasum is not supported for reducescatter"):
        hvd.grouped_reducescatter([torch.ones(4, 2)], name="adasum.grouped_reducescatter",
                                  op=hvd.Adasum)
    assert_collectives_work("adasum.after.reducescatter")


@needs_ranks(4)
def test_a_process_set_of_three_ranks_is_refused_on_each_of_them(process_set):
    three = process_set([0, 1, 2])
    if three.included():
        with pytest.raises(NotImplementedError,
                           match=r"Adasum needs a power-of-two number of ranks, but "
                                 r"the process set has 3 ranks; expected 1, 2, 4, 8"):
            hvd.allreduce(torch.ones(5), name="adasum.three", op=hvd.Adasum, process_set=three)
        total = hvd.allreduce(torch.ones(2), name="adasum.three.after", op=hvd.Sum,
                              process_set=three)
        assert torch.equal(total, torch.full((2,), 3.0))
    model = torch.nn.Linear(2, 1)
    if three.included():
        with pytest.raises(NotImplementedError,
                           match="op=Adasum needs a power-of-two number of ranks"):
            hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), op=hvd.Adasum,
                                     process_set=three)
    else:  # outside the set: a plain local optimizer, as in Horovod
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), op=hvd.Adasum,
                                 process_set=three)
    assert_collectives_work("adasum.after.three")


@needs_ranks(4)
def test_a_process_set_of_two_ranks_reduces_among_them(process_set, rank_tensor):
    pair = process_set([1, 3])
    if pair.included():
        tensors = {r: rank_tensor(r, (9,), torch.float64, -1, 1) for r in (1, 3)}
        result = hvd.allreduce(tensors[hvd.rank()], name="adasum.pair", op=hvd.Adasum,
                               process_set=pair)
        torch.testing.assert_close(result, reference([tensors[1], tensors[3]]), rtol=1e-12,
                                   atol=1e-12)
    assert_collectives_work("adasum.after.pair")


# ---------------------------------------------------------------- DistributedOptimizer

OPTIMIZERS = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.1),
    "momentum": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=0.01),
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
}


def make_model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))


def loss_of(model, rank, batch=0):
    """The loss on `rank`'s `batch`: y = x.w + noise, different data on every rank."""
    generator = torch.Generator().manual_seed(1000 * batch + rank)
    x = torch.randn(8, 4, generator=generator)
    y = (x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
         + 0.1 * torch.randn(8, 1, generator=generator))
    return torch.nn.functional.mse_loss(model(x), y)


def local_deltas(make_optimizer, rank, batches=(0,)):
    """What one step of the plain optimizer does to each parameter on `rank` alone."""
    model = make_model()
    optimizer = make_optimizer(model.parameters())
    before = [p.detach().clone() for p in model.parameters()]
    for batch in batches:
        loss_of(model, rank, batch).backward()
    optimizer.step()
    return [p.detach() - b for p, b in zip(model.parameters(), before)]


def expected_after_step(start, make_optimizer, batches=(0,)):
    """start + the Adasum over ranks of each parameter's local delta (the delta rule)."""
    deltas = [local_deltas(make_optimizer, r, batches) for r in range(hvd.size())]
    return [s + reference([d[i] for d in deltas], torch.float32) for i, s in enumerate(start)]


def adasum_optimizer(model, make_optimizer, **kwargs):
    return hvd.DistributedOptimizer(make_optimizer(model.parameters()), op=hvd.Adasum,
                                    named_parameters=model.named_parameters(), **kwargs)


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


@pytest.mark.parametrize("kind", OPTIMIZERS)
def test_optimizer_step_applies_the_adasum_of_the_local_deltas(kind):
    model = make_model()
    start = [p.detach().clone() for p in model.parameters()]
    optimizer = adasum_optimizer(model, OPTIMIZERS[kind])
    assert isinstance(optimizer, type(OPTIMIZERS[kind]([torch.zeros(1, requires_grad=True)])))
    loss_of(model, hvd.rank()).backward()
    optimizer.step()
    for p, expected in zip(model.parameters(), expected_after_step(start, OPTIMIZERS[kind])):
        torch.testing.assert_close(p.detach(), expected, rtol=1e-5, atol=1e-6)
    assert_same_on_every_rank(flat(model), f"adasum.optimizer.{kind}.check")


def test_optimizer_trains_a_model_identically_on_every_rank():
    model = make_model()
    optimizer = adasum_optimizer(model, OPTIMIZERS["momentum"])

    def global_loss():
        with torch.no_grad():
            return sum(loss_of(model, r).item() for r in range(hvd.size()))
    initial = global_loss()
    for _ in range(30):
        optimizer.zero_grad()
        loss_of(model, hvd.rank()).backward()
        optimizer.step()
    assert global_loss() < 0.5 * initial
    assert_same_on_every_rank(flat(model), "adasum.train.check")


def test_backward_passes_per_step_accumulate_before_the_delta():
    model = make_model()
    start = [p.detach().clone() for p in model.parameters()]
    optimizer = adasum_optimizer(model, OPTIMIZERS["sgd"], backward_passes_per_step=2)
    loss_of(model, hvd.rank(), 0).backward()
    loss_of(model, hvd.rank(), 1).backward()
    optimizer.step()
    expected_parameters = expected_after_step(start, OPTIMIZERS["sgd"], (0, 1))
    for p, expected in zip(model.parameters(), expected_parameters):
        torch.testing.assert_close(p.detach(), expected, rtol=1e-5, atol=1e-6)
    assert_same_on_every_rank(flat(model), "adasum.passes.check")


def test_fp16_compression_reduces_deltas_in_float16():
    model = make_model()
    start = [p.detach().clone() for p in model.parameters()]
    optimizer = adasum_optimizer(model, OPTIMIZERS["sgd"], compression=hvd.Compression.fp16)
    loss_of(model, hvd.rank()).backward()
    optimizer.step()
    for p, expected in zip(model.parameters(), expected_after_step(start, OPTIMIZERS["sgd"])):
        torch.testing.assert_close(p.detach(), expected, rtol=5e-3, atol=1e-4)
    assert_same_on_every_rank(flat(model), "adasum.fp16.check")


def test_a_parameter_unused_on_some_ranks_gets_the_others_delta():
    # Only rank 0 uses `extra`: the others' optimizers leave it alone (no gradient), so
    # their deltas are zeros, which Adasum passes over; no rank waits for a missing one.
    model = make_model()
    extra = torch.nn.Parameter(torch.tensor([0.5, -0.5]))
    start = extra.detach().clone()
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(list(model.parameters()) + [extra], lr=0.1), op=hvd.Adasum)
    loss = loss_of(model, hvd.rank())
    if hvd.rank() == 0:
        loss = loss + (extra ** 2).sum()
    loss.backward()
    optimizer.step()
    torch.testing.assert_close(extra.detach(), start - 0.1 * 2 * start)
    assert_same_on_every_rank(torch.cat([flat(model), extra.detach()]), "adasum.unused.check")


@needs_ranks(2)
def test_synchronize_does_nothing_and_skip_synchronize_is_refused_as_in_horovod():
    model = make_model()
    start = [p.detach().clone() for p in model.parameters()]
    optimizer = adasum_optimizer(model, OPTIMIZERS["sgd"])
    loss_of(model, hvd.rank()).backward()
    optimizer.synchronize()
    with pytest.raises(AssertionError, match="skip_synchronize.. is not supported with op=Adasum"):
        with optimizer.skip_synchronize():
            pass
    with pytest.raises(AssertionError, match="zero_grad.. was called after loss.backward"):
        optimizer.zero_grad()
    optimizer.step()
    for p, expected in zip(model.parameters(), expected_after_step(start, OPTIMIZERS["sgd"])):
        torch.testing.assert_close(p.detach(), expected, rtol=1e-5, atol=1e-6)
