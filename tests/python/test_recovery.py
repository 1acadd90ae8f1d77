"""After a failed reduction the DistributedOptimizer is usable: the script catches the
error (as the README invites) and goes on with zero_grad(), backward() and step() as on a
fresh step, and every rank ends with the same parameters.

The failure is real: rank 1 skips a step (its data loader raised, say) and waits, so rank
0's reductions stall and fail after HORDE_STALL_SHUTDOWN_TIME_SECONDS. Ranks pair a
name's submissions in order, so rank 1's next step is the one rank 0's failed: it fails
at once with the same error, and from then on each rank's step pairs the other's next
one; rank 0's last step, with no partner, fails at the end. Both ranks count two failed
steps (rank 1's own skip among them) and apply the same updates. That needs a job of its
own with second-scale stall settings, so these tests run in the 1-rank pass only.

Also: a failure between backward() and step() (a logging allreduce that fails), after
which the script goes back to a saved state with load_state_dict(), as an elastic job
does: the step in progress is dropped and training goes on.
"""

import json
from pathlib import Path

import pytest

import horde.torch as hvd
from _child_job import CHILD_PRELUDE, results_by_rank

MPIRUN_2 = [str(Path(__file__).resolve().parents[2] / "scripts" / "mpirun.sh"), "-np", "2"]

pytestmark = pytest.mark.skipif(hvd.size() != 1,
                                reason="starts its own job: only in the 1-rank run")

TRAIN_THROUGH_A_FAILED_STEP = CHILD_PRELUDE + """
import json, time
from horde.torch.handles import _handle_table_sizes

config = json.loads(os.environ["RECOVERY_CONFIG"])
marker = os.environ["RECOVERY_MARKER"]
torch.manual_seed(0)
embedding = nn.Embedding(20, 4, sparse=config.get("sparse", False))
head = nn.Linear(4, 2)
model = nn.ModuleDict({"embedding": embedding, "head": head})
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
optimizer = hvd.DistributedOptimizer(
    torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters(),
    **config.get("options", {}))
passes = config.get("options", {}).get("backward_passes_per_step", 1)
failures = []
for step in range(6):
    if step == 2 and rank == 1:
        try:
            raise RuntimeError("a bad batch on rank 1")
        except RuntimeError:
            deadline = time.monotonic() + 30  # until rank 0's step has failed
            while not os.path.exists(marker) and time.monotonic() < deadline:
                time.sleep(0.01)
            failures.append((step, "skipped: a bad batch on rank 1"))
            continue
    optimizer.zero_grad()
    for p in range(passes):
        words = torch.tensor([[step, rank + 3, p + 7]])
        head(embedding(words).sum(1)).pow(2).mean().backward()
    try:
        within(30, optimizer.step)
    except hvd.HordeInternalError as e:
        failures.append((step, str(e).splitlines()[0]))
        open(marker, "w").close()
# Rank 0's last step waits for a partner until the stall fails it: rank 1 gathers only
# after that, or its gather would wait as long and fail with it.
if rank == 0:
    open(marker + ".done", "w").close()
deadline = time.monotonic() + 30
while not os.path.exists(marker + ".done") and time.monotonic() < deadline:
    time.sleep(0.01)
params = [p.detach() for p in model.parameters()]
every_rank = hvd.allgather_object(params, name="recovery.params")
same = all(torch.equal(a, b) for other in every_rank for a, b in zip(every_rank[0], other))
say("result: " + json.dumps({"failures": failures, "same_parameters": same,
                              "handles": _handle_table_sizes()}))
"""

CONFIGS = {
    "plain": {},
    "passes2": {"options": {"backward_passes_per_step": 2}},
    "groups": {"options": {"num_groups": 2}},
    "sparse": {"sparse": True},
    "sparse_as_dense": {"sparse": True, "options": {"sparse_as_dense": True}},
    "bucket_view": {"options": {"gradient_as_bucket_view": True}},
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_training_goes_on_after_a_caught_failed_step(run_python, tmp_path, name):
    out = run_python(TRAIN_THROUGH_A_FAILED_STEP, env={
        "HORDE_STALL_CHECK_TIME_SECONDS": "1", "HORDE_STALL_SHUTDOWN_TIME_SECONDS": "1",
        "RECOVERY_CONFIG": json.dumps(CONFIGS[name]), "RECOVERY_MARKER": str(tmp_path / "failed")},
        launcher=MPIRUN_2)
    results = results_by_rank(out)
    assert set(results) == {"rank 0", "rank 1"}, out
    # Rank 0's step 2 failed (a stall: rank 1 skipped it), and so did rank 1's next step,
    # with the same error; rank 0's last step had no partner.
    rank0, rank1 = results["rank 0"]["failures"], results["rank 1"]["failures"]
    assert [step for step, _ in rank0] == [2, 5], out
    assert [step for step, _ in rank1] == [2, 3], out
    assert "stall" in rank0[0][1] and rank1[1][1] == rank0[0][1], out
    for rank in results.values():
        assert rank["same_parameters"], out
        assert all(count == 0 for count in rank["handles"].values()), out


ABANDONED_STEP = CHILD_PRELUDE + """
import copy, json

config = json.loads(os.environ["RECOVERY_CONFIG"])
torch.manual_seed(0)
model = nn.Linear(4, 2)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
options = dict(config.get("options", {}))
if options.get("op") == "adasum":
    options["op"] = hvd.Adasum
optimizer = hvd.DistributedOptimizer(
    torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
    named_parameters=model.named_parameters(), **options)
saved = (copy.deepcopy(model.state_dict()), copy.deepcopy(optimizer.state_dict()))
dropped = []
for step in range(4):
    optimizer.zero_grad()
    model(torch.full((2, 4), float(step + rank))).pow(2).mean().backward()
    if step == 1:
        try:  # shapes differ across ranks: fails on every rank, after backward()
            hvd.allreduce(torch.ones(rank + 1), name="loss.for.logging")
        except hvd.HordeInternalError:
            dropped.append(step)
            model.load_state_dict(saved[0])
            optimizer.load_state_dict(saved[1])
            continue
    within(30, optimizer.step)
    saved = (copy.deepcopy(model.state_dict()), copy.deepcopy(optimizer.state_dict()))
params = [p.detach() for p in model.parameters()]
every_rank = hvd.allgather_object(params, name="abandoned.params")
same = all(torch.equal(a, b) for other in every_rank for a, b in zip(every_rank[0], other))
say("result: " + json.dumps({"dropped": dropped, "same_parameters": same}))
"""


@pytest.mark.parametrize("name", ["plain", "bucket_view", "adasum"])
def test_loading_a_state_mid_step_drops_that_step(run_python, name):
    config = {"options": {"op": "adasum"}} if name == "adasum" else CONFIGS[name]
    out = run_python(ABANDONED_STEP, env={"RECOVERY_CONFIG": json.dumps(config)},
                     launcher=MPIRUN_2)
    results = results_by_rank(out)
    assert set(results) == {"rank 0", "rank 1"}, out
    for result in results.values():
        assert result["dropped"] == [1], out
        assert result["same_parameters"], out
