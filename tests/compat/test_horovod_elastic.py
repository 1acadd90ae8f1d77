"""Horovod's elastic script pattern through ``import horovod.torch``, on N ranks of a
plain (not elastic) job: the names exist where Horovod has them, commit/restore/sync
behave as in Horovod, and the decorated function runs once and lets errors through."""

import pytest
import torch

import horovod.torch as hvd
from horovod.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt


def test_the_elastic_names():
    for name in ["run", "State", "ObjectState", "TorchState", "ElasticSampler"]:
        assert hasattr(hvd.elastic, name), name
    assert hvd.HostsUpdatedInterrupt is HostsUpdatedInterrupt
    assert issubclass(HorovodInternalError, RuntimeError)


def test_commit_restore_and_sync_as_in_horovod():
    hvd.init()
    torch.manual_seed(hvd.rank())  # different on every rank until sync()
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = torch.utils.data.TensorDataset(torch.arange(10.0).unsqueeze(1))
    sampler = hvd.elastic.ElasticSampler(data, shuffle=False)
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=3, batch=0)
    calls = []
    state.register_reset_callbacks([lambda: calls.append(hvd.size())])

    @hvd.elastic.run
    def train(state):
        weights = hvd.allgather(model.weight.detach().reshape(1, -1))
        assert all(torch.equal(row, weights[0]) for row in weights), "sync() left ranks apart"
        list(iter(sampler))
        sampler.record_batch(0, 2)
        state.batch = 1
        state.commit()  # commit also checks for host updates: none here
        assert sampler.state_dict() == {"epoch": 0, "processed_num": 2 * hvd.size()}
        before = model.weight.detach().clone()
        with torch.no_grad():
            model.weight.add_(1.0)
        state.epoch, state.batch = 9, 7
        state.restore()
        assert torch.equal(model.weight, before) and (state.epoch, state.batch) == (3, 1)
        return "done"

    assert train(state) == "done"
    assert calls == []  # no reset happened


def test_errors_propagate_outside_an_elastic_job():
    hvd.init()
    state = hvd.elastic.ObjectState(step=0)

    @hvd.elastic.run
    def train(state):
        raise HostsUpdatedInterrupt(skip_sync=True)

    with pytest.raises(HostsUpdatedInterrupt):
        train(state)


def test_elastic_sampler_counts_processed_samples_as_horovod_does():
    """Horovod's ElasticSampler since 0.24: processed_num, record_batch adding
    batch_size * size(), a state dict of epoch and processed_num, and reset() splitting
    what is left of the epoch's order."""
    import math
    import random

    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    data = list(range(21))
    sampler = hvd.elastic.ElasticSampler(data, shuffle=False)
    assert len(sampler) == math.ceil(21 / size)
    padded = data + data[:len(sampler) * size - 21]
    assert list(iter(sampler)) == padded[rank::size]
    sampler.record_batch(0, 3)
    assert sampler.processed_num == 3 * size
    assert sampler.state_dict() == {"epoch": 0, "processed_num": 3 * size}
    sampler.reset()
    assert sampler.remaining_indices == data[3 * size:]
    sampler.set_epoch(1)
    assert sampler.state_dict() == {"epoch": 1, "processed_num": 0}

    shuffled = hvd.elastic.ElasticSampler(data, shuffle=True, seed=5)
    shuffled.load_state_dict({"epoch": 2, "processed_num": size})
    order = list(range(21))
    random.Random(5 + 2).shuffle(order)
    assert shuffled.remaining_indices == order[size:]
    # A state dict of the API before 0.24 still loads: its count of processed indices.
    shuffled.load_state_dict({"epoch": 3, "processed_indices": {4, 9, 11}})
    assert shuffled.processed_num == 3 and shuffled.epoch == 3
