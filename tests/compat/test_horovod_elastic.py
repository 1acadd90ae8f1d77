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
        assert sorted(sampler.processed_indices) == sorted(
            i for r in range(hvd.size()) for i in list(range(10))[r::hvd.size()][:2])
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
