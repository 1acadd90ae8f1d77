"""broadcast_parameters, broadcast_optimizer_state, broadcast_object, allgather_object.

Each rank builds its model and optimizer from its own seed (and trains them on its own
data), so every rank starts different; each rank also rebuilds the root's model and
optimizer locally, to know what the broadcast must produce.
"""

import dataclasses
import pickle

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import horde.torch as hvd
from horde.torch.functions import _parameter_device, _TensorSlot

ROOTS = sorted({0, hvd.size() - 1})


def make_model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 2))


def trained_model(r):
    """Rank r's model: seeded by r, with r + 1 training-mode forward passes on r's data,
    so the BatchNorm's running statistics and num_batches_tracked differ per rank."""
    model = make_model(100 + r)
    generator = torch.Generator().manual_seed(200 + r)
    with torch.no_grad():
        for _ in range(r + 1):
            model(torch.randn(6, 4, generator=generator))
    return model


def assert_state_dicts_equal(actual, expected):
    assert list(actual) == list(expected)
    for key in expected:
        assert torch.equal(actual[key], expected[key]), key


@pytest.mark.parametrize("root", ROOTS)
def test_broadcast_parameters_of_a_state_dict(root):
    model = trained_model(hvd.rank())
    hvd.broadcast_parameters(model.state_dict(), root)
    expected = trained_model(root).state_dict()
    assert "1.num_batches_tracked" in expected and "1.running_var" in expected
    assert_state_dicts_equal(model.state_dict(), expected)


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("form", ["named_parameters", "list_of_pairs", "list_of_tensors"])
def test_broadcast_parameters_of_named_parameters(root, form):
    """Parameters only: the buffers (BatchNorm's running statistics) stay this rank's own."""
    model = trained_model(hvd.rank())
    own_buffers = {name: b.clone() for name, b in model.named_buffers()}
    params = {"named_parameters": model.named_parameters(),
              "list_of_pairs": list(model.named_parameters()),
              "list_of_tensors": list(model.parameters())}[form]
    hvd.broadcast_parameters(params, root)
    root_model = trained_model(root)
    for (name, p), p_root in zip(model.named_parameters(), root_model.parameters()):
        assert torch.equal(p, p_root), name
        assert p.requires_grad and p.is_leaf
    for name, b in model.named_buffers():
        assert torch.equal(b, own_buffers[name]), name


def test_broadcast_parameters_rejects_a_single_tensor():
    with pytest.raises(ValueError, match="state_dict"):
        hvd.broadcast_parameters(torch.ones(3), 0)


# ---------------------------------------------------------------- optimizer state

OPTIMIZERS = {
    "sgd_momentum": lambda params, r: torch.optim.SGD(params, lr=0.1 * (r + 1), momentum=0.9,
                                                      nesterov=r % 2 == 0),
    "adam": lambda params, r: torch.optim.Adam(params, lr=0.01 * (r + 1),
                                               betas=(0.9, 0.99 - 0.01 * r)),
    # LBFGS keeps python ints and floats and lists of tensors in its state.
    "lbfgs": lambda params, r: torch.optim.LBFGS(params, lr=0.5, max_iter=2 + r, history_size=3),
}


def trained_optimizer(name, r, steps):
    """Rank r's model and optimizer after ``steps`` steps on r's own data."""
    model = make_model(300 + r)
    optimizer = OPTIMIZERS[name](model.parameters(), r)
    generator = torch.Generator().manual_seed(400 + r)
    for _ in range(steps):
        x, y = torch.randn(6, 4, generator=generator), torch.randn(6, 2, generator=generator)
        step(model, optimizer, x, y)
    return model, optimizer


def step(model, optimizer, x, y):
    def closure():
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss

    optimizer.step(closure)


def assert_optimizer_states_equal(actual, expected):
    assert actual["param_groups"] == expected["param_groups"]
    assert actual["state"].keys() == expected["state"].keys()
    for index, state in expected["state"].items():
        assert state.keys() == actual["state"][index].keys(), index
        for key, value in state.items():
            got = actual["state"][index][key]
            if torch.is_tensor(value):
                assert torch.equal(got, value) and got.dtype == value.dtype, (index, key)
                assert got.device == value.device, (index, key)
            elif isinstance(value, list):  # LBFGS: lists of tensors (and None)
                assert len(got) == len(value), (index, key)
                for g, v in zip(got, value):
                    assert (torch.equal(g, v) and g.device == v.device if torch.is_tensor(v)
                            else g == v), (index, key)
            else:
                assert got == value, (index, key)


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("name", list(OPTIMIZERS))
@pytest.mark.parametrize("steps_of", ["all_stepped", "only_root_stepped", "only_root_fresh"])
def test_broadcast_optimizer_state(name, root, steps_of):
    def steps(r):
        return {"all_stepped": r + 2, "only_root_stepped": 3 if r == root else 0,
                "only_root_fresh": 0 if r == root else r + 2}[steps_of]

    model, optimizer = trained_optimizer(name, hvd.rank(), steps(hvd.rank()))
    hvd.broadcast_parameters(model.state_dict(), root)
    hvd.broadcast_optimizer_state(optimizer, root)
    root_model, root_optimizer = trained_optimizer(name, root, steps(root))
    expected = root_optimizer.state_dict()
    assert bool(expected["state"]) == (steps(root) > 0)
    assert_optimizer_states_equal(optimizer.state_dict(), expected)
    assert optimizer.param_groups[0]["lr"] == root_optimizer.param_groups[0]["lr"]

    # From here every rank trains like the root: the same data gives the same weights.
    generator = torch.Generator().manual_seed(500)
    for _ in range(2):
        x, y = torch.randn(6, 4, generator=generator), torch.randn(6, 2, generator=generator)
        for m, opt in ((model, optimizer), (root_model, root_optimizer)):
            step(m, opt, x, y)
    assert_state_dicts_equal(model.state_dict(), root_model.state_dict())


@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "distributed"])
def test_broadcasting_a_fresh_adam_keeps_its_trajectory(wrapped):
    """Horovod initializes a fresh optimizer's state by a zero-gradient step, which moves
    Adam's step count and so every later update (6.5e-3 weight drift after 5 steps). horde
    must not: after the broadcast, the optimizer steps like a twin that was never
    broadcast -- exactly for a plain Adam; for a DistributedOptimizer, every rank has the
    same data, so averaging changes the gradients by rounding only."""
    if wrapped and hvd.size() & (hvd.size() - 1):
        pytest.skip("averaging over a rank count that is not a power of two rounds the gradients, "
                    "and Adam turns a rounded near-zero gradient into a full step of the other "
                    "sign")
    model, twin = make_model(7), make_model(7)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    if wrapped:
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    twin_optimizer = torch.optim.Adam(twin.parameters(), lr=0.01)
    hvd.broadcast_parameters(model.state_dict(), 0)
    hvd.broadcast_optimizer_state(optimizer, 0)
    assert optimizer.state_dict()["state"] == {}
    assert optimizer.state_dict()["param_groups"] == twin_optimizer.state_dict()["param_groups"]
    generator = torch.Generator().manual_seed(8)
    for _ in range(5):
        x, y = torch.randn(6, 4, generator=generator), torch.randn(6, 2, generator=generator)
        for m, opt in ((model, optimizer), (twin, twin_optimizer)):
            opt.zero_grad()
            F.mse_loss(m(x), y).backward()
            opt.step()
    assert all(int(state["step"]) == 5 for state in optimizer.state_dict()["state"].values())
    if not wrapped:
        assert_state_dicts_equal(model.state_dict(), twin.state_dict())
    for (name, p), p_twin in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(p, p_twin, rtol=1e-6, atol=1e-6, msg=lambda m: f"{name}: {m}")


# ------------------------------------------- where received optimizer state is allocated
# A rank receives the root's GPU state tensors on the GPU of its own parameters, and its
# CPU ones (Adam's step) on the CPU. Without a GPU only the CPU path runs end to end
# (above, and in tests/gpu/test_gpu_training.py with one); here the two helpers that make
# the choice are checked on their own.


class FakeParam:
    """Stands for a parameter on ``device``: _parameter_device reads only ``is_cuda`` and
    ``device``, so this checks which parameter it picks without a GPU (no tensor is made
    on the device)."""

    def __init__(self, device):
        self.device = torch.device(device)
        self.is_cuda = self.device.type == "cuda"


def test_parameter_device_is_the_first_gpu_parameters():
    groups = [{"params": [torch.zeros(2), FakeParam("cpu")]},
              {"params": [FakeParam("cuda:1"), FakeParam("cuda:0")]}]
    assert _parameter_device(groups) == torch.device("cuda", 1)


def test_parameter_device_is_the_cpu_without_gpu_parameters():
    model = make_model(1)
    adam = torch.optim.Adam(model.parameters())
    assert _parameter_device(adam.param_groups) == torch.device("cpu")
    assert _parameter_device([{"params": [FakeParam("cpu"), torch.zeros(1, device="meta")]}]) \
        == torch.device("cpu")
    assert _parameter_device([]) == torch.device("cpu")


def test_tensor_slot_records_the_device_kind_and_allocates_accordingly():
    cpu_slot = pickle.loads(pickle.dumps(_TensorSlot.of(torch.zeros(2, 3, dtype=torch.float64))))
    assert (cpu_slot.shape, cpu_slot.dtype, cpu_slot.on_gpu) == ((2, 3), torch.float64, False)
    # The device given for GPU slots (here 'meta' stands for this rank's GPU) is used only
    # for slots of tensors that were on a GPU on the root; CPU ones stay on the CPU.
    received = cpu_slot.allocate(torch.device("meta"))
    assert (received.shape, received.dtype) == ((2, 3), torch.float64)
    assert received.device == torch.device("cpu")
    gpu_slot = pickle.loads(pickle.dumps(_TensorSlot((4,), torch.float16, on_gpu=True)))
    received = gpu_slot.allocate(torch.device("meta"))
    assert (received.shape, received.dtype) == ((4,), torch.float16)
    assert received.device == torch.device("meta")


def test_broadcast_optimizer_state_on_the_cpu_keeps_every_tensor_on_the_cpu():
    """Adam's state after a step: exp_avg, exp_avg_sq and the step tensor, all on the CPU
    on every rank after the broadcast, equal to the root's."""
    model, optimizer = trained_optimizer("adam", hvd.rank(), 2)
    hvd.broadcast_optimizer_state(optimizer, 0)
    _, root_optimizer = trained_optimizer("adam", 0, 2)
    state = optimizer.state_dict()["state"]
    assert state and all(torch.is_tensor(state[i]["step"]) for i in state)
    assert all(value.device == torch.device("cpu")
               for entry in state.values() for value in entry.values() if torch.is_tensor(value))
    assert_optimizer_states_equal(optimizer.state_dict(), root_optimizer.state_dict())


# ---------------------------------------------------------------- objects


@dataclasses.dataclass
class Record:
    label: str
    values: list
    tensor: torch.Tensor = None


def object_of(r):
    """A nested object that differs per rank, its size too."""
    return {"rank": r, "name": f"rank-{r}" * (r + 1), "floats": [0.5 * r, float("inf")],
            "nested": {"tuple": (r, None, True), "set": {r, r + 1}, "bytes": bytes(range(r + 3))},
            "record": Record(f"r{r}", list(range(r)), torch.arange(r + 2, dtype=torch.float64))}


def assert_objects_equal(actual, expected):
    record, expected_record = actual.pop("record"), expected.pop("record")
    assert actual == expected
    assert (record.label, record.values) == (expected_record.label, expected_record.values)
    assert torch.equal(record.tensor, expected_record.tensor)


OBJECTS = {"dict": object_of, "list": lambda r: [r, "x" * r, [r, [r]]],
           "scalar": lambda r: r * 1.5, "none": lambda r: None,
           "large": lambda r: bytes([r % 256]) * (100_000 + r)}


@pytest.mark.parametrize("root", range(hvd.size()))
@pytest.mark.parametrize("kind", list(OBJECTS))
@pytest.mark.parametrize("named", [False, True], ids=["unnamed", "named"])
def test_broadcast_object_from_every_root(root, kind, named):
    make = OBJECTS[kind]
    name = f"object.{kind}.{root}" if named else None
    result = hvd.broadcast_object(make(hvd.rank()), root_rank=root, name=name)
    if kind == "dict":
        assert_objects_equal(result, make(root))
    else:
        assert result == make(root)


def test_broadcast_object_default_root_is_0():
    assert hvd.broadcast_object(object_of(hvd.rank()))["rank"] == 0


@pytest.mark.parametrize("kind", list(OBJECTS))
@pytest.mark.parametrize("named", [False, True], ids=["unnamed", "named"])
def test_allgather_object(kind, named):
    make = OBJECTS[kind]
    result = hvd.allgather_object(make(hvd.rank()), name=f"gather.{kind}" if named else None)
    assert isinstance(result, list) and len(result) == hvd.size()
    for r, item in enumerate(result):
        if kind == "dict":
            assert_objects_equal(item, make(r))
        else:
            assert item == make(r)


def test_broadcast_optimizer_state_with_an_untrainable_parameter():
    """Horovod's test_broadcast_state_no_grad: after the broadcast the trainable parameter
    has a zero gradient (a script may broadcast it) and the untrainable one keeps None;
    no step was taken, so the parameters are unchanged."""
    class ModelNoGrad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.tensor([1, 3], dtype=torch.int32),
                                        requires_grad=False)
            self.b = torch.nn.Parameter(torch.rand(4))

        def forward(self, x):
            return torch.index_select(self.b, 0, self.a.long()) * x

    model = ModelNoGrad()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, weight_decay=1e-6, momentum=0.9,
                                nesterov=True)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    weights = model.b.detach().clone()
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    a, b = optimizer.param_groups[0]["params"]
    assert a.grad is None
    assert torch.equal(b.grad, torch.zeros(4))
    assert torch.equal(hvd.broadcast(b.grad, root_rank=0), b.grad)
    assert torch.equal(model.b.detach(), weights)
    # Training goes on as usual from there.
    optimizer.zero_grad()
    model(torch.ones(2)).sum().backward()
    optimizer.step()
    assert not torch.equal(model.b.detach(), weights)
