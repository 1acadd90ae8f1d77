"""After a failed reduction the DistributedOptimizer is usable: the script catches the
error (as the README invites) and goes on with zero_grad(), backward() and step() as on a
fresh step, and every rank ends with the same parameters.

The failure is real: rank 1 skips a step (its data loader raised, say) and waits, so rank
0's reductions stall and fail after HORDE_STALL_SHUTDOWN_TIME_SECONDS. That needs a job
of its own with second-scale stall settings, so these tests run in the 1-rank pass only.
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
    # Rank 0's step 2 failed (a stall: rank 1 skipped it); every other step worked on both.
    assert [step for step, _ in results["rank 0"]["failures"]] == [2], out
    assert "stall" in results["rank 0"]["failures"][0][1], out
    assert results["rank 1"]["failures"] == [], out
    for rank in results.values():
        assert rank["same_parameters"], out
        assert all(count == 0 for count in rank["handles"].values()), out
