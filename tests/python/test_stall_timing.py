"""Stall limits are kept on time for cached and uncached operations alike: a 2-rank child
job warms the response cache with a few steps, then rank 1 skips a step. Rank 0's cached
operation and a new (uncached) one must be reported at HORDE_STALL_CHECK_TIME_SECONDS and
fail at HORDE_STALL_SHUTDOWN_TIME_SECONDS, within a second, measured on rank 0's own
clock from its submission; the next operation then works. They run in the 1-rank pass
only (each starts its own job).
"""

import json
from pathlib import Path

import pytest

import horde.torch as hvd
from _child_job import CHILD_PRELUDE

MPIRUN_2 = [str(Path(__file__).resolve().parents[2] / "scripts" / "mpirun.sh"), "-np", "2"]

pytestmark = pytest.mark.skipif(hvd.size() != 1,
                                reason="starts its own job: only in the 1-rank run")

# Rank 0 watches its own stderr (where the coordinator logs) to time the stall report,
# and polls both handles to time each failure; rank 1 skips step 3 and waits for a file
# that rank 0 writes once both have failed.
SKIPPED_STEP = CHILD_PRELUDE + """
import json, sys, time

marker = os.environ["STALL_TEST_MARKER"]
report_at = []

def watch_stderr():
    read_end, write_end = os.pipe()
    original = os.dup(2)
    os.dup2(write_end, 2)
    def pump():
        while True:
            chunk = os.read(read_end, 65536)
            if not chunk:
                return
            if b"stall: these operations have waited" in chunk and not report_at:
                report_at.append(time.monotonic())
            os.write(original, chunk)
    threading.Thread(target=pump, daemon=True).start()

if rank == 0:
    watch_stderr()
names = [f"w.{i}" for i in range(10)]
for step in range(3):  # warms the response cache
    for handle in [hvd.allreduce_async(torch.ones(4), name=n, op=hvd.Sum) for n in names]:
        hvd.synchronize(handle)
if rank == 0:
    start = time.monotonic()
    handles = {"cached": hvd.allreduce_async(torch.ones(4), name="w.0", op=hvd.Sum),
               "uncached": hvd.allreduce_async(torch.ones(4), name="fresh", op=hvd.Sum)}
    failed_at = {}
    while len(failed_at) < 2 and time.monotonic() - start < 40:
        for kind, handle in handles.items():
            if kind not in failed_at and hvd.poll(handle):
                failed_at[kind] = time.monotonic() - start
        time.sleep(0.01)
    errors = {}
    for kind, handle in handles.items():
        try:
            hvd.synchronize(handle)
            errors[kind] = "none"
        except hvd.HordeInternalError as e:
            errors[kind] = str(e)
    say("timing: " + json.dumps({"failed_at": failed_at, "errors": errors,
                                 "reported_at": report_at[0] - start if report_at else None}))
    open(marker, "w").close()
else:
    deadline = time.monotonic() + 60
    while not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.01)
after = within(20, lambda: hvd.allreduce(torch.full((3,), rank + 1.0), name="after", op=hvd.Sum))
say(f"after: {after.tolist()}")
"""


def run_skipped_step(run_python, tmp_path, check, shutdown):
    out = run_python(SKIPPED_STEP, env={
        "HORDE_STALL_CHECK_TIME_SECONDS": str(check),
        "HORDE_STALL_SHUTDOWN_TIME_SECONDS": str(shutdown),
        "STALL_TEST_MARKER": str(tmp_path / "failed_on_rank0")}, launcher=MPIRUN_2)
    timing = [line for line in out.splitlines() if line.startswith("rank 0: timing: ")]
    assert len(timing) == 1, out
    for rank in (0, 1):
        assert f"rank {rank}: after: [3.0, 3.0, 3.0]" in out, out
    return json.loads(timing[0][len("rank 0: timing: "):])


def test_a_shutdown_time_below_the_check_time_fails_on_time(run_python, tmp_path):
    timing = run_skipped_step(run_python, tmp_path, check=20, shutdown=3)
    for kind in ("cached", "uncached"):
        assert 2 <= timing["failed_at"][kind] <= 4, timing
        assert "HORDE_STALL_SHUTDOWN_TIME_SECONDS=3" in timing["errors"][kind], timing
    assert timing["reported_at"] is None, timing


def test_the_report_comes_at_the_check_time_and_the_failure_at_the_shutdown_time(run_python,
                                                                                 tmp_path):
    timing = run_skipped_step(run_python, tmp_path, check=2, shutdown=5)
    assert timing["reported_at"] is not None and 1 <= timing["reported_at"] <= 3, timing
    for kind in ("cached", "uncached"):
        assert 4 <= timing["failed_at"][kind] <= 6, timing
        assert "rank 1 has not submitted allreduce" in timing["errors"][kind], timing
