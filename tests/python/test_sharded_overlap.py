"""ShardedOptimizer(overlap_allgather=True): step() returns with the parameters' allgathers
in flight, each module's forward waits for its own, and the trajectory is still
DistributedOptimizer's; horde's
own readers of parameters (broadcast_parameters, elastic commits) write them first, and a
weight read outside its module's forward fails the step instead of training on its old
value."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import horde.torch as hvd
from test_sharded_optimizer import OPTIMIZERS, TINY_BUCKETS_MB, my_batch, pair

STEPS = 30


def train_step(model, optimizer, step):
    x, y = my_batch(step)
    optimizer.zero_grad()
    F.mse_loss(model(x), y).backward()
    optimizer.step()


def assert_same_parameters(model, ref_model, step):
    for (n, p), q in zip(ref_model.named_parameters(), model.parameters()):
        torch.testing.assert_close(q, p, rtol=1e-6, atol=1e-7,
                                   msg=lambda m: f"step {step}, {n}: {m}")


@pytest.mark.parametrize("stage", [1, 2])
def test_parameters_are_written_by_the_next_forward_and_follow_distributed_optimizer(stage):
    ref_model, ref, model, sharded, _ = pair("sgd_momentum", stage, overlap_allgather=True,
                                             bucket_cap_mb=TINY_BUCKETS_MB)
    for step in range(STEPS):
        train_step(ref_model, ref, step)
        train_step(model, sharded, step)
        assert sharded._shards.gathering(), "step() waited for the allgathers"
        if step % 2:
            sharded.wait_for_parameters()
        else:
            model(my_batch(step)[0])  # the forward writes each layer's parameters
        assert_same_parameters(model, ref_model, step)


def test_broadcast_parameters_and_elastic_state_write_the_parameters_first():
    ref_model, ref, model, sharded, _ = pair("adam_decay_clip", 2, overlap_allgather=True,
                                             bucket_cap_mb=TINY_BUCKETS_MB)
    train_step(ref_model, ref, 0)
    train_step(model, sharded, 0)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    assert_same_parameters(model, ref_model, 0)

    train_step(ref_model, ref, 1)
    train_step(model, sharded, 1)
    state = hvd.elastic.TorchState(model=model, optimizer=sharded)
    state.save()  # what commit() keeps: the parameters of the step
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    state.restore()
    assert_same_parameters(model, ref_model, 1)


class ReadsAWeightOfAnotherModule(nn.Module):
    """Uses `encoder.weight` in its own forward, never calling `encoder`: a read that no
    module's forward pre-hook precedes."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.head = nn.Linear(5, 4)  # 24 elements: bucket 0, written by its own forward
        self.encoder = nn.Linear(5, 5)  # buckets 1 and 2, which no forward writes

    def forward(self, x):
        return self.head(torch.tanh(F.linear(x, self.encoder.weight)))


def test_a_weight_read_outside_its_module_fails_the_step_and_the_next_collective_works():
    model = ReadsAWeightOfAnotherModule()
    make, _ = OPTIMIZERS["sgd_momentum"]
    sharded = hvd.ShardedOptimizer(make(model.parameters()),
                                   named_parameters=model.named_parameters(),
                                   overlap_allgather=True, bucket_cap_mb=96 / (1 << 20))
    x = my_batch(0)[0]
    model(x).sum().backward()
    sharded.step()  # the first step: nothing was pending during its forward
    sharded.zero_grad()
    model(x).sum().backward()
    with pytest.raises(ValueError, match="'encoder.weight' got a gradient before its update"):
        sharded.step()
    assert hvd.allreduce(torch.ones(3), op=hvd.Sum).tolist() == [hvd.size()] * 3

    # With wait_for_parameters() before the forward, the same model trains.
    sharded.zero_grad()
    sharded.wait_for_parameters()
    model(x).sum().backward()
    sharded.step()
