"""ShardedOptimizer (ZeRO stages 1 and 2): the same trajectory as DistributedOptimizer,
1/N of the optimizer state on each rank, whole state dicts that plain torch optimizers
load and that load back on any number of ranks, and clear refusals.

Every rank draws the same global batch of GLOBAL rows and trains on its own slice, so the
averaged gradient is the gradient of the global mean loss whatever the number of ranks.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import horde.torch as hvd

GLOBAL = 12  # rows per step: divisible by 1, 2, 3 and 4 ranks
STEPS = 100
# A bucket of 64 bytes (16 float32): parameters span buckets and ranks.
TINY_BUCKETS_MB = 64 / (1 << 20)


def make_model():
    torch.manual_seed(1234)  # the same initial weights on every rank and in the reference
    return nn.Sequential(nn.Linear(5, 11), nn.Tanh(), nn.Linear(11, 3))


def my_batch(step):
    generator = torch.Generator().manual_seed(7919 * step + 1)
    x = torch.randn(GLOBAL, 5, generator=generator)
    y = torch.randn(GLOBAL, 3, generator=generator)
    rows = GLOBAL // hvd.size()
    mine = slice(hvd.rank() * rows, (hvd.rank() + 1) * rows)
    return x[mine], y[mine]


OPTIMIZERS = {
    "sgd_momentum": (lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9), None),
    "adam_decay_clip": (lambda params: torch.optim.Adam(params, lr=0.01, weight_decay=0.01),
                        0.5),
}


def backward(model, optimizer, step):
    x, y = my_batch(step)
    optimizer.zero_grad()
    F.mse_loss(model(x), y).backward()


def reference_step(model, optimizer, step, clip):
    backward(model, optimizer, step)
    if clip is None:
        optimizer.step()
        return None
    optimizer.synchronize()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    with optimizer.skip_synchronize():
        optimizer.step()
    return norm


def sharded_step(model, optimizer, step, clip):
    backward(model, optimizer, step)
    norm = optimizer.clip_grad_norm_(clip) if clip is not None else None
    optimizer.step()
    return norm


def pair(name, stage, **kwargs):
    make, clip = OPTIMIZERS[name]
    ref_model, model = make_model(), make_model()
    ref = hvd.DistributedOptimizer(make(ref_model.parameters()),
                                   named_parameters=ref_model.named_parameters())
    sharded = hvd.ShardedOptimizer(make(model.parameters()),
                                   named_parameters=model.named_parameters(), stage=stage,
                                   **kwargs)
    return ref_model, ref, model, sharded, clip


@pytest.mark.parametrize("stage", [1, 2])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_same_trajectory_as_distributed_optimizer(name, stage):
    ref_model, ref, model, sharded, clip = pair(name, stage, bucket_cap_mb=TINY_BUCKETS_MB)
    user_class = type(OPTIMIZERS[name][0]([torch.zeros(1, requires_grad=True)]))
    assert isinstance(sharded, user_class) and type(sharded).__name__ == user_class.__name__
    clipped = 0
    for step in range(STEPS):
        ref_norm = reference_step(ref_model, ref, step, clip)
        norm = sharded_step(model, sharded, step, clip)
        if clip is not None:
            torch.testing.assert_close(norm, ref_norm, rtol=1e-5, atol=0)
            clipped += int(ref_norm > clip)
        for (n, p), q in zip(ref_model.named_parameters(), model.parameters()):
            torch.testing.assert_close(q, p, rtol=1e-6, atol=1e-7,
                                       msg=lambda m: f"step {step}, {n}: {m}")
        grads = [p.grad for p in model.parameters()]
        if stage == 2:
            assert all(g is None for g in grads), "stage 2 keeps no whole gradients"
        else:
            assert all(g is not None for g in grads)
    if clip is not None:
        assert 0 < clipped < STEPS, f"clipping should bind in some steps only: {clipped}"


def test_two_backward_passes_per_step_follow_distributed_optimizer():
    make, _ = OPTIMIZERS["adam_decay_clip"]
    ref_model, model = make_model(), make_model()
    ref = hvd.DistributedOptimizer(make(ref_model.parameters()), backward_passes_per_step=2,
                                   named_parameters=ref_model.named_parameters())
    sharded = hvd.ShardedOptimizer(make(model.parameters()), backward_passes_per_step=2,
                                   named_parameters=model.named_parameters(),
                                   bucket_cap_mb=TINY_BUCKETS_MB)
    for step in range(10):
        for net, optimizer in ((ref_model, ref), (model, sharded)):
            optimizer.zero_grad()
            for micro in range(2):
                x, y = my_batch(2 * step + micro)
                (F.mse_loss(net(x), y) / 2).backward()
            optimizer.step()
        for p, q in zip(ref_model.parameters(), model.parameters()):
            torch.testing.assert_close(q, p, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("stage", [1, 2])
def test_fp16_compression_follows_distributed_optimizer_with_it(stage):
    """Gradients reduce-scattered as float16 step as DistributedOptimizer's allreduced as
    float16 do, to float16's precision."""
    make, _ = OPTIMIZERS["sgd_momentum"]
    ref_model, model = make_model(), make_model()
    ref = hvd.DistributedOptimizer(make(ref_model.parameters()),
                                   named_parameters=ref_model.named_parameters(),
                                   compression=hvd.Compression.fp16)
    sharded = hvd.ShardedOptimizer(make(model.parameters()),
                                   named_parameters=model.named_parameters(), stage=stage,
                                   compression=hvd.Compression.fp16,
                                   bucket_cap_mb=TINY_BUCKETS_MB)
    for step in range(10):
        reference_step(ref_model, ref, step, None)
        sharded_step(model, sharded, step, None)
        for p, q in zip(ref_model.parameters(), model.parameters()):
            assert q.dtype == torch.float32
            torch.testing.assert_close(q, p, rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("stage", [1, 2])
def test_parameters_given_new_data_or_not_contiguous_follow_distributed_optimizer(stage):
    """The parameters live in the optimizer's flat buckets, where the allgather lands;
    one that is not contiguous keeps its own memory and layout, and one given new data
    (``p.data = ...``) is taken at the next step."""
    make, clip = OPTIMIZERS["adam_decay_clip"]
    ref_model, model = make_model(), make_model()
    with torch.no_grad():
        model[0].weight.data = model[0].weight.data.t().contiguous().t()  # column-major
    assert not model[0].weight.is_contiguous()
    ref = hvd.DistributedOptimizer(make(ref_model.parameters()),
                                   named_parameters=ref_model.named_parameters())
    sharded = hvd.ShardedOptimizer(make(model.parameters()),
                                   named_parameters=model.named_parameters(), stage=stage,
                                   bucket_cap_mb=TINY_BUCKETS_MB)
    for step in range(20):
        if step == 10:
            for net in (ref_model, model):
                net[2].bias.data = torch.full((3,), 0.25)
                net[2].weight.data = net[2].weight.data.clone() * 0.5
        reference_step(ref_model, ref, step, clip)
        sharded_step(model, sharded, step, clip)
        for (n, p), q in zip(ref_model.named_parameters(), model.parameters()):
            torch.testing.assert_close(q, p, rtol=1e-6, atol=1e-7,
                                       msg=lambda m: f"step {step}, {n}: {m}")
    assert model[0].weight.stride() == (1, 11), "the column-major weight kept its layout"


def test_a_parameter_given_another_shape_fails_the_step_and_the_next_collective_works():
    model = make_model()
    make, _ = OPTIMIZERS["sgd_momentum"]
    sharded = hvd.ShardedOptimizer(make(model.parameters()),
                                   named_parameters=model.named_parameters())
    x, _ = my_batch(0)
    model[2].bias.data = torch.zeros(1)  # broadcast over the 3 outputs: forward still works
    model(x).sum().backward()
    with pytest.raises(ValueError, match=r"parameter '2.bias' is now shaped \[1\], not \[3\]"):
        sharded.step()
    assert hvd.allreduce(torch.ones(3), op=hvd.Sum).tolist() == [hvd.size()] * 3
    model[2].bias.data = torch.zeros(3)
    sharded.zero_grad()
    model(x).sum().backward()
    sharded.step()
    assert model[2].bias.abs().sum() > 0, "the step after the repair updates the bias"


@pytest.mark.skipif(hvd.size() % 2 == 1, reason="splits the ranks into two halves")
@pytest.mark.parametrize("stage", [1, 2])
def test_on_a_process_set_it_follows_distributed_optimizer_on_that_set(process_set, stage):
    half = hvd.size() // 2
    halves = [process_set(range(half)), process_set(range(half, hvd.size()))]
    mine = hvd.rank() // half
    ps = halves[mine]
    make, _ = OPTIMIZERS["adam_decay_clip"]
    ref_model, model = make_model(), make_model()
    ref = hvd.DistributedOptimizer(make(ref_model.parameters()), process_set=ps,
                                   named_parameters=ref_model.named_parameters())
    sharded = hvd.ShardedOptimizer(make(model.parameters()), process_set=ps, stage=stage,
                                   named_parameters=model.named_parameters(),
                                   bucket_cap_mb=TINY_BUCKETS_MB)
    rows = GLOBAL // ps.size()
    for step in range(10):
        # Each half trains on data of its own, split among its ranks.
        generator = torch.Generator().manual_seed(7919 * step + 1 + 101 * mine)
        x = torch.randn(GLOBAL, 5, generator=generator)
        y = torch.randn(GLOBAL, 3, generator=generator)
        mine_rows = slice(ps.rank() * rows, (ps.rank() + 1) * rows)
        x, y = x[mine_rows], y[mine_rows]
        for net, optimizer in ((ref_model, ref), (model, sharded)):
            optimizer.zero_grad()
            F.mse_loss(net(x), y).backward()
            optimizer.step()
        for p, q in zip(ref_model.parameters(), model.parameters()):
            torch.testing.assert_close(q, p, rtol=1e-6, atol=1e-7)
    # The whole state, gathered on the set's last rank (roots are job ranks) and sent to
    # the set's other ranks: what the reference holds.
    root = ps.ranks[-1]
    with pytest.raises(ValueError, match=f"root_rank {ranks_outside(ps)[0]} is not in process"):
        sharded.consolidate_state_dict(root_rank=ranks_outside(ps)[0])
    hvd.broadcast_optimizer_state(sharded, root_rank=root, process_set=ps)
    sharded.consolidate_state_dict(root_rank=root)
    whole = hvd.broadcast_object(sharded.state_dict() if hvd.rank() == root else None, root,
                                 process_set=ps)["state"]
    expected = ref.state_dict()["state"]
    assert sorted(whole) == sorted(expected), (sorted(whole), sorted(expected))
    for index, state in expected.items():
        torch.testing.assert_close(whole[index]["exp_avg"], state["exp_avg"], rtol=1e-5,
                                   atol=1e-7)
    weights = hvd.allgather_object(model[0].weight.detach().clone())
    assert torch.equal(weights[0], weights[half - 1])
    assert not torch.allclose(weights[0], weights[half]), "the halves trained apart"


def ranks_outside(process_set):
    return [r for r in range(hvd.size()) if r not in process_set.ranks]


def test_zero_grad_between_backward_and_step_is_refused():
    model = make_model()
    sharded = hvd.ShardedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    backward(model, sharded, 0)
    with pytest.raises(AssertionError, match="before optimizer.step"):
        sharded.zero_grad()
    sharded.step()
    sharded.zero_grad()


def test_each_rank_holds_its_share_of_the_state():
    make, _ = OPTIMIZERS["adam_decay_clip"]
    model = make_model()
    sharded = hvd.ShardedOptimizer(make(model.parameters()), stage=2,
                                   bucket_cap_mb=TINY_BUCKETS_MB)
    for step in range(2):
        sharded_step(model, sharded, step, None)
    total = sum(p.numel() for p in model.parameters())
    buckets = len(sharded.param_groups[0]["params"])
    for key in ("exp_avg", "exp_avg_sq"):
        held = sum(s[key].numel() for s in sharded.state.values())
        # Each bucket's padding adds less than one element a rank.
        assert held <= total / hvd.size() + buckets, (key, held, total)


def test_stage_2_keeps_the_buffers_of_its_buckets_in_flight_between_steps():
    """One bucket: one buffer in flight, kept and used again every step (no allocation);
    many buckets: never more buffers kept than there are buckets."""
    make, _ = OPTIMIZERS["adam_decay_clip"]
    for cap, most in ((1, 1), (TINY_BUCKETS_MB, None)):
        model = make_model()
        sharded = hvd.ShardedOptimizer(make(model.parameters()), stage=2, bucket_cap_mb=cap)
        buckets = len(sharded.param_groups[0]["params"])
        kept = []
        for step in range(3):
            sharded_step(model, sharded, step, None)
            held = sharded._shards.held_buffers()
            assert 1 <= len(held) <= (most or buckets), (cap, step, len(held), buckets)
            kept.append(sorted(b.data_ptr() for b in held))
        if most == 1:
            assert kept[0] == kept[1] == kept[2], "the one bucket's buffer is used again"


def test_a_consolidated_state_dict_loads_into_a_plain_optimizer_and_back():
    ref_model, ref, model, sharded, clip = pair("adam_decay_clip", 2,
                                                bucket_cap_mb=TINY_BUCKETS_MB)
    for step in range(3):
        reference_step(ref_model, ref, step, clip)
        sharded_step(model, sharded, step, clip)
    sharded.consolidate_state_dict(root_rank=0)
    whole = hvd.broadcast_object(sharded.state_dict() if hvd.rank() == 0 else None, 0)
    expected = ref.state_dict()
    assert whole["param_groups"] == expected["param_groups"]
    for index, state in expected["state"].items():
        for key, value in state.items():
            torch.testing.assert_close(whole["state"][index][key], value, rtol=1e-6, atol=1e-8)
    # A plain optimizer takes it as it is.
    plain = torch.optim.Adam(make_model().parameters(), lr=0.01, weight_decay=0.01)
    plain.load_state_dict(whole)
    # A fresh sharded optimizer resumes from it exactly where the first one was.
    resumed_model = make_model()
    resumed_model.load_state_dict(model.state_dict())
    resumed = hvd.ShardedOptimizer(torch.optim.Adam(resumed_model.parameters(), lr=0.5),
                                   bucket_cap_mb=2 * TINY_BUCKETS_MB)
    resumed.load_state_dict(whole)
    assert resumed.param_groups[0]["lr"] == 0.01
    for step in range(3, 6):
        sharded_step(model, sharded, step, clip)
        sharded_step(resumed_model, resumed, step, clip)
        for p, q in zip(model.parameters(), resumed_model.parameters()):
            torch.testing.assert_close(q, p, rtol=1e-6, atol=1e-8)


def test_a_rank_state_dict_loads_back_on_the_same_rank_only():
    model = make_model()
    sharded = hvd.ShardedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    sharded_step(model, sharded, 0, None)
    mine = sharded.state_dict()
    assert mine["horde_sharded"]["rank"] == hvd.rank()
    sharded.load_state_dict(mine)
    other = dict(mine, horde_sharded=dict(mine["horde_sharded"], rank=hvd.rank() + 1))
    with pytest.raises(ValueError, match="load a whole one"):
        sharded.load_state_dict(other)


def test_the_ranks_own_state_dicts_merge_into_the_whole_one():
    model = make_model()
    model[0].bias.requires_grad_(False)  # numbered in a whole state dict, not sharded
    sharded = hvd.ShardedOptimizer(torch.optim.Adam(model.parameters(), lr=0.01),
                                   bucket_cap_mb=TINY_BUCKETS_MB)
    sharded_step(model, sharded, 0, None)
    mine = sharded.state_dict()
    merged = hvd.merge_sharded_state_dicts(hvd.allgather_object(mine))
    sharded.consolidate_state_dict(0)
    whole = hvd.broadcast_object(sharded.state_dict() if hvd.rank() == 0 else None, 0)
    assert merged["param_groups"] == whole["param_groups"]
    assert sorted(merged["state"]) == sorted(whole["state"]) == [0, 2, 3]
    for index, state in whole["state"].items():
        assert sorted(merged["state"][index]) == sorted(state)
        for key, value in state.items():
            torch.testing.assert_close(merged["state"][index][key], value, rtol=0, atol=0)
    if hvd.size() > 1:
        only_mine = (f"one state dict from each of the {hvd.size()} ranks of one optimizer, "
                     f"got ranks \\[{hvd.rank()}\\]")
        with pytest.raises(ValueError, match=only_mine):
            hvd.merge_sharded_state_dicts([mine])
    with pytest.raises(ValueError, match="expected the state_dict\\(\\) of every rank"):
        hvd.merge_sharded_state_dicts([whole])


def test_broadcast_optimizer_state_sends_what_the_root_loaded():
    """A script that resumes on rank 0 loads the checkpoint there and broadcasts it."""
    make, clip = OPTIMIZERS["sgd_momentum"]
    plain_model = make_model()
    plain = make(plain_model.parameters())
    F.mse_loss(plain_model(torch.ones(2, 5)), torch.zeros(2, 3)).backward()
    plain.step()
    checkpoint = plain.state_dict()
    model = make_model()
    sharded = hvd.ShardedOptimizer(make(model.parameters()))
    sharded_step(model, sharded, 0, None)
    if hvd.rank() == 0:
        sharded.load_state_dict(checkpoint)
    hvd.broadcast_optimizer_state(sharded, root_rank=0)
    sharded.consolidate_state_dict(0)
    whole = hvd.broadcast_object(sharded.state_dict() if hvd.rank() == 0 else None, 0)
    for index, state in checkpoint["state"].items():
        torch.testing.assert_close(whole["state"][index]["momentum_buffer"],
                                   state["momentum_buffer"], rtol=0, atol=0)


@pytest.mark.parametrize("make,message", [
    (lambda p: hvd.ShardedOptimizer(torch.optim.LBFGS(p)), "LBFGS needs whole parameters"),
    (lambda p: hvd.ShardedOptimizer(torch.optim.SparseAdam(p)), "SparseAdam steps sparse"),
    (lambda p: hvd.ShardedOptimizer(torch.optim.SGD(p, lr=0.1), op=hvd.Adasum),
     r"DistributedOptimizer\(op=hvd.Adasum\)"),
    (lambda p: hvd.ShardedOptimizer(torch.optim.SGD(p, lr=0.1), stage=3),
     "stage must be 1"),
])
def test_what_sharding_cannot_do_is_refused_at_construction(make, message):
    with pytest.raises(ValueError, match=message):
        make(make_model().parameters())


def test_a_sparse_gradient_fails_the_step_on_every_rank_and_the_next_collective_works():
    embedding = nn.Embedding(10, 4, sparse=True)
    sharded = hvd.ShardedOptimizer(torch.optim.SGD(embedding.parameters(), lr=0.1))
    embedding(torch.tensor([1, 2])).sum().backward()
    with pytest.raises(ValueError, match="sparse gradient"):
        sharded.step()
    assert hvd.allreduce(torch.ones(3), op=hvd.Sum).tolist() == [hvd.size()] * 3


# Saved on 4 ranks (whole on the root, and each rank its own), resumed on 2 and 3: the next
# step is the one the 4 ranks took.
RESUME_JOB = """
import json, os, sys
import torch
import horde.torch as hvd
hvd.init()  # before the import: the test module asks for size() as it loads


def say(result):  # one write: the ranks' lines must not interleave
    os.write(1, f"rank {{hvd.rank()}}: result: {{result}}\\n".encode())


sys.path.insert(0, {tests!r})
from test_sharded_optimizer import make_model, sharded_step, OPTIMIZERS

make, clip = OPTIMIZERS["adam_decay_clip"]
model = make_model()
if {mode!r} == "save":
    optimizer = hvd.ShardedOptimizer(make(model.parameters()), bucket_cap_mb=64 / (1 << 20))
    for step in range(5):
        sharded_step(model, optimizer, step, clip)
    torch.save(optimizer.state_dict(), {shards!r}.format(hvd.rank()))  # this rank's own
    optimizer.consolidate_state_dict(root_rank=0)
    if hvd.rank() == 0:
        torch.save({{"model": model.state_dict(), "optimizer": optimizer.state_dict()}},
                   {checkpoint!r})
    sharded_step(model, optimizer, 5, clip)
    if hvd.rank() == 0:
        torch.save(model.state_dict(), {after!r})
    say(json.dumps(True))
else:
    # From the root's whole checkpoint, and from the four ranks' own files merged.
    checkpoint = torch.load({checkpoint!r})
    merged = hvd.merge_sharded_state_dicts([torch.load({shards!r}.format(r)) for r in range(4)])
    expected = torch.load({after!r})
    same = True
    for whole in (checkpoint["optimizer"], merged):
        model = make_model()
        model.load_state_dict(checkpoint["model"])
        optimizer = hvd.ShardedOptimizer(make(model.parameters()), bucket_cap_mb=1)
        optimizer.load_state_dict(whole)
        sharded_step(model, optimizer, 5, clip)
        same = same and all(torch.allclose(p, expected[n], rtol=1e-5, atol=1e-7)
                            for n, p in model.state_dict().items())
    say(json.dumps(same))
"""


@pytest.mark.skipif(hvd.size() != 1, reason="starts jobs of its own: in the 1-rank pass only")
@pytest.mark.timeout(600)  # three jobs of its own, each within 240 s
def test_a_checkpoint_saved_on_four_ranks_resumes_on_two_and_three(run_python, tmp_path):
    import os

    from _child_job import mpirun, results_by_rank
    paths = dict(tests=os.path.dirname(os.path.abspath(__file__)),
                 checkpoint=str(tmp_path / "checkpoint.pt"), after=str(tmp_path / "after.pt"),
                 shards=str(tmp_path / "rank{}.pt"))
    out = run_python(RESUME_JOB.format(mode="save", **paths), launcher=mpirun(4), timeout=240)
    assert len(results_by_rank(out)) == 4, out
    for ranks in (2, 3):
        out = run_python(RESUME_JOB.format(mode="load", **paths), launcher=mpirun(ranks),
                         timeout=240)
        results = results_by_rank(out)
        assert len(results) == ranks and all(results.values()), out
