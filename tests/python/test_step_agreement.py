"""A step that fails on one rank only fails on every rank alike.

Rank 1 alone cannot prepare one of its gradients at step 2 (its compressor raises, or a
failure is injected where an allocation could fail on that rank alone), and the script
catches step()'s error and goes on, as the docs invite. Every rank must then fail that
same step (rank 1 with its own error, the others naming rank 1), apply no update, and
pair the same gradients in every later step: the parameters stay identical after every
step, not only at the end. With default settings (no stall limit) nothing may hang.

A step that fails by a stall (a rank late past HORDE_STALL_SHUTDOWN_TIME_SECONDS) fails
on the late rank too, with the same error, when it gets there.

Each case starts its own 2-rank job, so these tests run in the 1-rank pass only.
"""

import json
from pathlib import Path

import pytest

import horde.torch as hvd
from _child_job import CHILD_PRELUDE, results_by_rank

MPIRUN_2 = [str(Path(__file__).resolve().parents[2] / "scripts" / "mpirun.sh"), "-np", "2"]

pytestmark = pytest.mark.skipif(hvd.size() != 1,
                                reason="starts its own job: only in the 1-rank run")

ONE_RANK_FAILS_ONE_STEP = CHILD_PRELUDE + """
import json, zlib
from horde.torch.compression import Compressor
from horde.torch.handles import _handle_table_sizes

config = json.loads(os.environ["AGREEMENT_CONFIG"])
armed = {"step": None}


class FlakyCompressor(Compressor):
    # Raises once, on rank 1, for the tensor of `config["fail_numel"]` elements: as an
    # out-of-memory in that rank's fp16 copy would.
    @staticmethod
    def compress(tensor):
        if armed["step"] is not None and tensor.numel() == config["fail_numel"]:
            armed["step"] = None
            raise RuntimeError("rank 1 ran out of memory compressing a gradient")
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


torch.manual_seed(0)
embedding = nn.Embedding(20, 4, sparse=config.get("sparse", False))
head = nn.Linear(4, 3)
spare = nn.Linear(2, 5)  # no gradient on any rank: reduced as zeros by synchronize()
model = nn.ModuleDict({"embedding": embedding, "head": head, "spare": spare})
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
options = dict(config.get("options", {}))
if config["inject"] == "compressor":
    options["compression"] = FlakyCompressor
if options.get("op") == "adasum":
    options["op"] = hvd.Adasum
base = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
optimizer = hvd.DistributedOptimizer(base, named_parameters=model.named_parameters(), **options)
passes = options.get("backward_passes_per_step", 1)
names = [name for name, _ in model.named_parameters()]
outcomes, sums = [], []
for step in range(6):
    if step == 2 and rank == 1:
        if config["inject"] == "compressor":
            armed["step"] = step
        else:
            optimizer._reducer.fail_next_start(names.index(config["fail_param"]))
    optimizer.zero_grad()
    for p in range(passes):
        words = torch.tensor([[step, rank + 3, p + 7]])
        head(embedding(words).sum(1)).pow(2).mean().backward()
    try:
        within(30, optimizer.step)
        outcomes.append("ok")
    except Exception as e:  # noqa: BLE001 - which error each rank raised is the point
        outcomes.append(type(e).__name__ + ": " + str(e).splitlines()[0])
    sums.append(zlib.crc32(b"".join(p.detach().numpy().tobytes() for p in model.parameters())))
every_rank = hvd.allgather_object(sums, name="agreement.sums")
say("result: " + json.dumps({"outcomes": outcomes, "same_after_every_step":
                              all(other == every_rank[0] for other in every_rank),
                              "handles": _handle_table_sizes()}))
"""

# inject: "compressor" (FlakyCompressor raises for the tensor of fail_numel elements) or
# "start" (fail_next_start on the parameter fail_param).
CASES = {
    # The hook path: head.weight's gradient is started from backward.
    "hook": {"inject": "compressor", "fail_numel": 12},
    # The batch path: spare.weight has no gradient and is started by synchronize().
    "batch": {"inject": "compressor", "fail_numel": 10},
    "passes2": {"inject": "compressor", "fail_numel": 12,
                "options": {"backward_passes_per_step": 2}},
    "groups": {"inject": "compressor", "fail_numel": 12, "options": {"num_groups": 2}},
    "sparse": {"inject": "start", "fail_param": "embedding.weight", "sparse": True},
    "sparse_as_dense": {"inject": "compressor", "fail_numel": 80, "sparse": True,
                        "options": {"sparse_as_dense": True}},
    "bucket_view": {"inject": "start", "fail_param": "head.weight",
                    "options": {"gradient_as_bucket_view": True}},
    "adasum": {"inject": "compressor", "fail_numel": 12, "options": {"op": "adasum"}},
}


def run_case(run_python, name, env=None):
    out = run_python(ONE_RANK_FAILS_ONE_STEP, env={
        "AGREEMENT_CONFIG": json.dumps(CASES[name]), **(env or {})}, launcher=MPIRUN_2)
    results = results_by_rank(out)
    assert set(results) == {"rank 0", "rank 1"}, out
    return results, out


@pytest.mark.parametrize("name", list(CASES))
def test_a_step_failing_on_one_rank_fails_on_every_rank(run_python, name):
    results, out = run_case(run_python, name)
    rank0, rank1 = results["rank 0"]["outcomes"], results["rank 1"]["outcomes"]
    # Step 2 failed on both ranks, every other step worked on both.
    for outcomes in (rank0, rank1):
        assert [step for step, o in enumerate(outcomes) if o != "ok"] == [2], out
    if CASES[name]["inject"] == "compressor":
        assert rank1[2] == "RuntimeError: rank 1 ran out of memory compressing a gradient", out
    else:
        assert "a failure injected into the reduction of" in rank1[2], out
    assert rank0[2].startswith("HordeInternalError: "), out
    assert "the step failed on rank 1" in rank0[2], out
    for result in results.values():
        assert result["same_after_every_step"], out
        assert all(count == 0 for count in result["handles"].values()), out


LATE_RANK = CHILD_PRELUDE + """
import json, time, zlib

config = json.loads(os.environ["AGREEMENT_CONFIG"])
torch.manual_seed(0)
model = nn.Linear(4, 3)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
options = dict(config.get("options", {}))
if options.get("op") == "adasum":
    options["op"] = hvd.Adasum
base = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
optimizer = hvd.DistributedOptimizer(base, named_parameters=model.named_parameters(), **options)
outcomes, seconds, alike, sums = [], [], [], []
for step in range(5):
    if step == 2 and rank == 1:
        time.sleep(float(os.environ["LATE_SECONDS"]))
    optimizer.zero_grad()
    start = time.monotonic()
    model(torch.full((2, 4), float(step + rank))).pow(2).mean().backward()
    try:
        within(30, optimizer.step)
        outcomes.append("ok")
    except hvd.HordeInternalError as e:
        outcomes.append(str(e))
        alike.append(e.failed_on_every_rank)
    seconds.append(time.monotonic() - start)
    sums.append(zlib.crc32(b"".join(p.detach().numpy().tobytes() for p in model.parameters())))
every_rank = hvd.allgather_object(sums, name="late.sums")
say("result: " + json.dumps({"outcomes": outcomes, "seconds": seconds, "alike": alike,
                              "same_after_every_step":
                              all(other == every_rank[0] for other in every_rank)}))
"""

SHUTDOWN_SECONDS = 3


@pytest.mark.parametrize("name", ["hook", "groups", "bucket_view", "adasum"])
def test_a_late_rank_fails_the_step_the_others_failed_by_a_stall(run_python, name):
    # Rank 1 sleeps past the stall shutdown time before step 2. Rank 0's step 2 fails at
    # the shutdown time (not twice it), rank 1's step 2 fails with the same error when it
    # comes, and step 3 pairs step 3 on both ranks.
    out = run_python(LATE_RANK, env={
        "AGREEMENT_CONFIG": json.dumps(CASES[name]), "LATE_SECONDS": str(SHUTDOWN_SECONDS + 1.5),
        "HORDE_STALL_CHECK_TIME_SECONDS": "60",
        "HORDE_STALL_SHUTDOWN_TIME_SECONDS": str(SHUTDOWN_SECONDS)}, launcher=MPIRUN_2)
    results = results_by_rank(out)
    assert set(results) == {"rank 0", "rank 1"}, out
    rank0, rank1 = results["rank 0"], results["rank 1"]
    for result in (rank0, rank1):
        assert [step for step, o in enumerate(result["outcomes"]) if o != "ok"] == [2], out
        assert result["alike"] == [True], out
        assert result["same_after_every_step"], out
    assert rank0["outcomes"][2] == rank1["outcomes"][2], out
    assert "rank 1 has not submitted allreduce 'grad." in rank0["outcomes"][2] or (
        "rank 1 has not submitted allreduce 'adasum." in rank0["outcomes"][2]), out
    assert SHUTDOWN_SECONDS <= rank0["seconds"][2] < SHUTDOWN_SECONDS + 1.3, out
    assert rank1["seconds"][2] < 1, out  # it fails at once: the others have moved on
