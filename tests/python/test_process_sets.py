"""Process sets: collectives among some ranks, each set negotiating on its own.

Runs in every pass of the suite (1, 2 and 4 ranks); a test that needs more ranks than
the pass has skips. The suite's job runs with HORDE_DYNAMIC_PROCESS_SETS=1 (see
conftest), so sets are added and removed after init(); without it they are refused,
which a child job checks. Each test removes the sets it added.
"""

import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

import horde.torch as hvd
from _child_job import CHILD_PRELUDE, child_environment

MPIRUN_2 = [str(Path(__file__).resolve().parents[2] / "scripts" / "mpirun.sh"), "-np", "2"]


def needs_ranks(n):
    return pytest.mark.skipif(hvd.size() < n, reason=f"needs {n} ranks")


def odd_ranks():
    """A set that is not the global one, whose ranks differ from its own ranks numbering."""
    return [r for r in range(hvd.size()) if r % 2 == 1]


def expected_sum(rank_tensor, ranks, shape, dtype=torch.float64):
    return sum(rank_tensor(r, shape, dtype, -10, 10) for r in ranks)


def test_global_process_set_covers_every_rank():
    ps = hvd.global_process_set
    assert ps.process_set_id == 0 and ps.ranks == list(range(hvd.size()))
    assert ps.size() == hvd.size() and ps.rank() == hvd.rank() and ps.included()
    with pytest.raises(ValueError, match=r"global process set \(id 0\) cannot be removed"):
        hvd.remove_process_set(ps)


@pytest.mark.parametrize("ranks, message", [
    ([], r"needs at least one rank; got \[\]"),
    ([0, 0], r"rank 0 appears more than once"),
    ([-1], r"rank -1 is out of range; ranks are 0 to"),
    ([10 ** 6], r"rank 1000000 is out of range"),
])
def test_bad_ranks_are_refused_on_every_rank(ranks, message):
    with pytest.raises(ValueError, match=message):
        hvd.add_process_set(ranks)
    hvd.barrier()  # every rank failed locally, none is left inside a collective


def test_malformed_sets_and_sets_not_added_are_refused():
    with pytest.raises(ValueError, match="list of ranks"):
        hvd.ProcessSet("01")
    with pytest.raises(ValueError, match="ranks must be ints"):
        hvd.ProcessSet([0.5])
    with pytest.raises(ValueError, match=r"already exists \(id 0\)"):
        hvd.add_process_set(range(hvd.size()))
    never_added = hvd.ProcessSet([0])
    with pytest.raises(ValueError, match=r"process set \[0\] is not registered"):
        hvd.allreduce(torch.ones(1), process_set=never_added)
    with pytest.raises(ValueError, match="process_set must be a ProcessSet"):
        hvd.allreduce(torch.ones(1), process_set=[0])


@needs_ranks(2)
def test_a_rank_outside_the_set_gets_a_value_error_naming_it(process_set):
    ps = process_set(odd_ranks())
    assert ps.included() == (hvd.rank() % 2 == 1)
    if ps.included():
        assert ps.rank() == ps.ranks.index(hvd.rank())
        assert hvd.allreduce(torch.ones(2), op=hvd.Sum, process_set=ps).tolist() == [ps.size()] * 2
    else:
        assert ps.rank() == -1
        expected = (rf"rank {hvd.rank()} is not in process set {ps.process_set_id} "
                    rf"\(ranks \[{', '.join(map(str, ps.ranks))}\]\)")
        with pytest.raises(ValueError, match=expected):
            hvd.allreduce(torch.ones(2), process_set=ps)
        with pytest.raises(ValueError, match=expected):
            hvd.barrier(process_set=ps)


@needs_ranks(2)
def test_every_collective_kind_on_a_set(process_set, rank_tensor):
    ps = process_set(odd_ranks())
    if not ps.included():
        return
    me, n, members = hvd.rank(), ps.size(), ps.ranks
    mine = rank_tensor(me, (3, 2), torch.float64, -10, 10)
    total = expected_sum(rank_tensor, members, (3, 2))
    assert torch.allclose(hvd.allreduce(mine, op=hvd.Sum, name="ps.ar", process_set=ps), total)
    in_place = mine.clone()
    hvd.allreduce_(in_place, op=hvd.Average, process_set=ps)
    assert torch.allclose(in_place, total / n)
    grouped = hvd.grouped_allreduce([mine, mine * 2], op=hvd.Sum, process_set=ps)
    assert torch.allclose(grouped[0], total) and torch.allclose(grouped[1], total * 2)

    rows = torch.full((me + 1, 2), float(me))
    gathered = torch.cat([torch.full((r + 1, 2), float(r)) for r in members])
    assert torch.equal(hvd.allgather(rows, process_set=ps), gathered)
    assert torch.equal(hvd.grouped_allgather([rows], process_set=ps)[0], gathered)

    root = members[-1]
    assert torch.equal(hvd.broadcast(mine, root, process_set=ps),
                       rank_tensor(root, (3, 2), torch.float64, -10, 10))
    with pytest.raises(ValueError, match=rf"root_rank 0 is not in process set {ps.process_set_id}"):
        hvd.broadcast(mine, 0, process_set=ps)

    sent = torch.arange(n, dtype=torch.float32) + 100 * me
    received, splits = hvd.alltoall(sent, splits=[1] * n, process_set=ps)
    assert received.tolist() == [100.0 * r + ps.rank() for r in members]
    assert splits.tolist() == [1] * n

    stacked = torch.ones(2 * n, 3) * (me + 1)
    share = hvd.reducescatter(stacked, op=hvd.Sum, process_set=ps)
    assert torch.equal(share, torch.full((2, 3), float(sum(r + 1 for r in members))))
    assert torch.equal(hvd.grouped_reducescatter([stacked], op=hvd.Sum, process_set=ps)[0], share)
    hvd.barrier(process_set=ps)

    assert hvd.allgather_object({"rank": me}, process_set=ps) == [{"rank": r} for r in members]
    assert hvd.broadcast_object(f"from {me}", root_rank=root, process_set=ps) == f"from {root}"
    params = {"w": torch.full((2,), float(me))}
    hvd.broadcast_parameters(params, root_rank=root, process_set=ps)
    assert params["w"].tolist() == [float(root)] * 2

    # Gradients flow within the set: each member's rows get the set's average of the
    # incoming gradients (Horovod's allgather rule), here n ones / n.
    x = torch.ones(2, requires_grad=True)
    hvd.allgather(x, process_set=ps).sum().backward()
    assert x.grad.tolist() == [1.0] * 2


@needs_ranks(4)
def test_disjoint_sets_run_the_same_names_concurrently(process_set):
    low, high = process_set([0, 1]), process_set([2, 3])
    mine = low if low.included() else high
    steps = 150
    # The same names on both sets and on the global set, all in flight at once.
    handles = [(hvd.allreduce_async(torch.full((4,), float(hvd.rank() + i)), op=hvd.Sum,
                                    name=f"step.{i}", process_set=mine),
                hvd.allreduce_async(torch.full((2,), float(i)), op=hvd.Sum, name=f"step.{i}"))
               for i in range(steps)]
    for i, (in_set, in_world) in enumerate(handles):
        expected = sum(r + i for r in mine.ranks)
        assert hvd.synchronize(in_set).tolist() == [float(expected)] * 4
        assert hvd.synchronize(in_world).tolist() == [float(i * hvd.size())] * 2


@needs_ranks(4)
def test_a_thread_on_a_set_and_one_on_the_global_set_proceed_together(process_set):
    # Each thread blocks in its own collectives; neither may wait for the other's.
    low, high = process_set([0, 1]), process_set([2, 3])
    mine = low if low.included() else high
    results, errors = [], []

    def work():
        try:
            for i in range(50):
                results.append(hvd.allreduce(torch.ones(1), op=hvd.Sum, name=f"t.{i}",
                                             process_set=mine).item())
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    worker = threading.Thread(target=work)
    worker.start()
    for i in range(50):
        assert hvd.allreduce(torch.ones(1), op=hvd.Sum, name=f"t.{i}").item() == hvd.size()
    worker.join(60)
    assert not worker.is_alive() and not errors, errors
    assert results == [2.0] * 50


@needs_ranks(4)
def test_overlapping_sets_alternately_and_concurrently(process_set):
    first, second = process_set([0, 1, 2]), process_set([1, 2, 3])
    mine = [ps for ps in (first, second) if ps.included()]
    for i in range(10):  # alternately, each synchronized before the next
        for ps in mine:
            out = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum, name=f"alt.{i}",
                                process_set=ps)
            assert out.item() == float(sum(ps.ranks))
    # Concurrently: ranks in both sets submit to them in opposite orders before waiting.
    order = mine if hvd.rank() % 2 else list(reversed(mine))
    pending = [(ps, hvd.allreduce_async(torch.full((3,), float(i)), op=hvd.Sum, name=f"c.{i}",
                                        process_set=ps))
               for i in range(40) for ps in order]
    for i, (ps, handle) in enumerate(pending):
        assert hvd.synchronize(handle).tolist() == [float(i // len(order) * ps.size())] * 3


@needs_ranks(4)
def test_mismatched_shapes_fail_on_the_set_and_the_next_operation_works(process_set):
    ps = process_set([1, 2, 3])
    if ps.included():
        # The message names world ranks, as everything else the user sees does.
        expected = (rf"^process set {ps.process_set_id} \(ranks \[1, 2, 3\]\): ranks disagree on "
                    r"the shape of allreduce 'mismatched.shape': \[1\] on rank 1; \[2\] on rank 2; "
                    r"\[3\] on rank 3")
        with pytest.raises(hvd.HordeInternalError, match=expected):
            hvd.allreduce(torch.ones(hvd.rank()), name="mismatched.shape", process_set=ps)
        after = hvd.allreduce(torch.ones(2), op=hvd.Sum, name="after.mismatch", process_set=ps)
        assert after.tolist() == [float(ps.size())] * 2
    after = hvd.allreduce(torch.ones(1), op=hvd.Sum, name="world.after.mismatch")
    assert after.item() == hvd.size()


@needs_ranks(4)
def test_distributed_optimizer_averages_over_its_set_only(process_set):
    pairs = [process_set([0, 1]), process_set([2, 3])]
    mine = pairs[0] if hvd.rank() < 2 else pairs[1]
    torch.manual_seed(3)
    model = torch.nn.Linear(4, 1, bias=False)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                         named_parameters=model.named_parameters(),
                                         process_set=mine)
    optimizer.zero_grad()
    # The gradient of sum(w . x) is x: rank r contributes x = r + 1.
    model(torch.full((1, 4), float(hvd.rank() + 1))).sum().backward()
    optimizer.step()
    expected_grad = sum(r + 1.0 for r in mine.ranks) / len(mine.ranks)
    assert model.weight.grad.eq(expected_grad).all(), (model.weight.grad, mine.ranks)


@needs_ranks(2)
def test_remove_then_add_again(process_set):
    ps = process_set(odd_ranks())
    old_id = ps.process_set_id
    assert hvd.remove_process_set(ps) is True
    assert ps.process_set_id is None
    with pytest.raises(ValueError, match="is not registered"):
        hvd.allreduce(torch.ones(1), process_set=ps)
    with pytest.raises(ValueError, match="is not registered"):
        hvd.remove_process_set(ps)
    again = process_set(ps)  # the same object, registered anew under a new id
    assert again is ps and ps.process_set_id > old_id
    if ps.included():
        assert hvd.allreduce(torch.ones(1), op=hvd.Sum, process_set=ps).item() == ps.size()


@needs_ranks(2)
def test_init_with_process_sets_after_a_shutdown():
    early = hvd.add_process_set(odd_ranks())
    sets = [hvd.ProcessSet([0]), hvd.ProcessSet(odd_ranks())]
    with pytest.raises(ValueError, match="already initialized"):
        hvd.init(process_sets=sets)
    hvd.shutdown()
    try:
        hvd.init(process_sets=sets)
        ids = [ps.process_set_id for ps in sets]
        assert 0 < ids[0] < ids[1] and early.process_set_id < ids[0]
        for ps in sets:
            if ps.included():
                assert hvd.allreduce(torch.ones(1), op=hvd.Sum, process_set=ps).item() == ps.size()
        # A set of the previous init is gone with it.
        with pytest.raises(ValueError, match=rf"unknown process set id {early.process_set_id}"):
            hvd.allreduce(torch.ones(1), process_set=early)
    finally:
        hvd.shutdown()
        hvd.init()
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == hvd.size()


@pytest.mark.skipif(hvd.size() != 1, reason="starts its own job: only in the 1-rank run")
def test_without_dynamic_process_sets_only_init_registers_sets(run_python):
    prelude = CHILD_PRELUDE.replace(
        "hvd.init()\n", "ps = hvd.ProcessSet([1])\nhvd.init(process_sets=[ps])\n")
    out = run_python(prelude + """
for what, change in [("add", lambda: hvd.add_process_set([0])),
                     ("remove", lambda: hvd.remove_process_set(ps))]:
    try:
        change()
        say(f"{what}: no error")
    except ValueError as e:
        say(f"{what}: {e}")
if ps.included():
    total = within(20, lambda: hvd.allreduce(torch.ones(1), op=hvd.Sum, process_set=ps))
    say(f"sum: {total.item()}")
""", launcher=MPIRUN_2)
    for rank in (0, 1):
        assert (f"rank {rank}: add: add_process_set after init() needs "
                "HORDE_DYNAMIC_PROCESS_SETS=1 (or HOROVOD_DYNAMIC_PROCESS_SETS=1)") in out, out
        assert (f"rank {rank}: remove: remove_process_set needs "
                "HORDE_DYNAMIC_PROCESS_SETS=1") in out, out
    assert "rank 1: sum: 1.0" in out and "rank 0: sum" not in out, out


@pytest.mark.skipif(hvd.size() != 1, reason="starts its own job: only in the 1-rank run")
def test_a_failed_rank_fails_the_pending_operations_of_its_sets_too():
    env = child_environment()
    code = CHILD_PRELUDE.replace(
        "hvd.init()\n", "ps = hvd.ProcessSet([0, 1])\nhvd.init(process_sets=[ps])\n")
    code += """
if rank == 1:
    hvd.allreduce(torch.ones(2), name="warmup", process_set=ps)
    raise RuntimeError("boom")
if rank == 0:
    hvd.allreduce(torch.ones(2), name="warmup", process_set=ps)
    try:
        within(20, lambda: hvd.allreduce(torch.ones(2), name="never.on.rank1", process_set=ps))
        say("set: no error")
    except hvd.HordeInternalError as e:
        say(f"set: {e}")
"""
    done = subprocess.run([*MPIRUN_2[:-1], "3", sys.executable, "-c", code], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0, done.stdout
    expected = "rank 0: set: process set 1 (ranks [0, 1]): rank 1 failed: RuntimeError: boom"
    assert expected in done.stdout, done.stdout + done.stderr
