"""Stalls: rank 1 never submits (or submits late) an operation that rank 0 did. The
coordinator logs a report naming the missing rank and the tensor; with a shutdown time the
operation fails on rank 0 instead of hanging, and later operations work on both ranks.

Each test starts its own 2-rank job with second-scale thresholds (a stall is what they
provoke, so they cannot run inside the suite's job); they run in the 1-rank pass only.
"""

import json
import math
from pathlib import Path

import pytest

import horde.torch as hvd
from _child_job import CHILD_PRELUDE

MPIRUN_2 = [str(Path(__file__).resolve().parents[2] / "scripts" / "mpirun.sh"), "-np", "2"]

pytestmark = pytest.mark.skipif(hvd.size() != 1,
                                reason="starts its own job: only in the 1-rank run")


def lines_of(out, prefix):
    return [line[len(prefix):] for line in out.splitlines() if line.startswith(prefix)]


def test_stalled_operation_fails_with_the_report_and_the_next_one_works(run_python, tmp_path):
    # Rank 1 skips the tensor. It submits the next one only after rank 0's has failed
    # (told by a file), or that one would wait long enough to fail too.
    out, err = run_python(CHILD_PRELUDE + """
import json, time
marker = os.environ["STALL_TEST_MARKER"]
if rank == 0:
    start = time.monotonic()
    handle = hvd.allreduce_async(torch.ones(2), name="skipped.by.rank1", op=hvd.Sum)
    try:
        within(20, lambda: hvd.synchronize(handle))
        say("error: none")
    except hvd.HordeInternalError as e:
        say("error: " + json.dumps({"seconds": time.monotonic() - start, "message": str(e)}))
    open(marker, "w").close()
else:
    deadline = time.monotonic() + 20
    while not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.01)
after = within(20, lambda: hvd.allreduce(torch.full((3,), rank + 1.0), name="after", op=hvd.Sum))
say(f"after: {after.tolist()}")
""", env={"HORDE_STALL_CHECK_TIME_SECONDS": "1", "HORDE_STALL_SHUTDOWN_TIME_SECONDS": "2",
          "STALL_TEST_MARKER": str(tmp_path / "failed_on_rank0")},
        launcher=MPIRUN_2, with_stderr=True)
    errors = lines_of(out, "rank 0: error: ")
    assert len(errors) == 1 and errors[0] != "none", out
    error = json.loads(errors[0])
    message = error["message"]
    assert 2 <= error["seconds"] < 10, error  # shutdown time 2 s, checked about once a second
    assert ("fail (HORDE_STALL_SHUTDOWN_TIME_SECONDS=2) on every rank: now on the ranks that did"
            in message), message
    assert "\n  rank 1 has not submitted allreduce 'skipped.by.rank1' (waiting " in message, message
    assert "likely causes:" in message and "hvd.join()" in message, message
    # The coordinator logged the same text, once.
    assert err.count(f"[horde rank 0 WARNING] {message}\n") == 1, err
    for rank in (0, 1):
        assert f"rank {rank}: after: [3.0, 3.0, 3.0]" in out, out


@pytest.mark.parametrize("disabled", [False, True], ids=["reported", "check_disabled"])
def test_late_operation_is_reported_while_it_waits_and_then_completes(run_python, disabled):
    out, err = run_python(CHILD_PRELUDE + """
import json, time
if rank == 1:
    time.sleep(2.5)
start = time.monotonic()
result = within(20, lambda: hvd.allreduce(torch.ones(2), name="late.on.rank1", op=hvd.Sum))
say("late: " + json.dumps({"seconds": time.monotonic() - start, "result": result.tolist()}))
""", env={"HORDE_STALL_CHECK_TIME_SECONDS": "1", "HORDE_STALL_CHECK_DISABLE": str(int(disabled))},
        launcher=MPIRUN_2, with_stderr=True)
    late = {rank: json.loads(lines_of(out, f"rank {rank}: late: ")[0]) for rank in (0, 1)}
    for rank in (0, 1):
        assert late[rank]["result"] == [2.0, 2.0], out
    reports = err.count("[horde rank 0 WARNING] stall: these operations have waited 1 s or more")
    if disabled:
        assert reports == 0, err
        return
    assert "\n  rank 1 has not submitted allreduce 'late.on.rank1' (waiting " in err, err
    assert "They keep waiting" in err, err
    # At most one report per check time while rank 0 waited, not one per round.
    assert 1 <= reports <= math.floor(late[0]["seconds"]) + 1, (late[0], err)
