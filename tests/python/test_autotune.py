"""Autotuning in a real 2-rank job: HORDE_AUTOTUNE=1 searches fusion threshold, cycle time
and the response cache while the job reduces gradients, settles, applies the same
parameters on every rank, and logs every sample (HORDE_AUTOTUNE_LOG). The job starts its
own ranks (runs in the 1-rank pass only), with short samples."""

import csv
import json
from pathlib import Path

import pytest

import horde.torch as hvd
from _child_job import CHILD_PRELUDE

MPIRUN_2 = [str(Path(__file__).resolve().parents[2] / "scripts" / "mpirun.sh"), "-np", "2"]

pytestmark = pytest.mark.skipif(hvd.size() != 1,
                                reason="starts its own job: only in the 1-rank run")


def test_autotune_settles_on_the_same_parameters_on_every_rank(run_python, tmp_path):
    log = tmp_path / "autotune.csv"
    out = run_python(CHILD_PRELUDE + """
import json, time
grads = [torch.ones(n) for n in (10, 1000, 50000, 300000)]
deadline = time.monotonic() + 60
steps = 0
say("started")
def keep_going():
    # Decided together: a rank that stopped on its own clock would leave the other
    # waiting in a collective it never joins.
    flags = torch.tensor([float(hvd.runtime_stats()["autotune_settled"]),
                          float(time.monotonic() < deadline)])
    settled, in_time = hvd.allreduce(flags, name="progress", op=hvd.Min).tolist()
    return settled < 1 and in_time > 0
while steps % 20 != 0 or keep_going():
    handles = [hvd.allreduce_async_(g, name=f"g{i}", op=hvd.Sum) for i, g in enumerate(grads)]
    for h in handles:
        hvd.synchronize(h)
    for g in grads:
        g.fill_(1.0)
    steps += 1
say(f"steps: {steps}")
stats = hvd.runtime_stats()
chosen = {k: stats[k] for k in ("fusion_threshold_bytes", "cycle_time_ms", "cache_enabled",
                                "autotune_settled")}
say("chosen: " + json.dumps(chosen))
check = hvd.allreduce(torch.ones(3), name="after", op=hvd.Sum)
say(f"after: {check.tolist()}")
""", env={"HORDE_AUTOTUNE": "1", "HORDE_AUTOTUNE_LOG": str(log),
          "HORDE_AUTOTUNE_SAMPLE_SECONDS": "0.2"}, launcher=MPIRUN_2, timeout=100)
    chosen = [json.loads(line.split("chosen: ", 1)[1]) for line in out.splitlines()
              if "chosen: " in line]
    assert len(chosen) == 2, out
    assert chosen[0] == chosen[1], f"ranks disagree: {chosen}"
    assert chosen[0]["autotune_settled"], out
    assert out.count("after: [2.0, 2.0, 2.0]") == 2, out

    rows = list(csv.DictReader(open(log)))
    # The default 128 MiB and 1 ms are among the candidates: 4 thresholds (128, 1, 8, 32
    # MiB), 4 cycle times (1, 0.5, 2, 5 ms), the cache on and off.
    assert len(rows) == 4 + 4 + 2, rows
    assert rows[-1]["state"] == "settled"
    assert all(float(r["bytes_per_second"]) > 0 for r in rows), rows
    tried = {(int(r["fusion_threshold_bytes"]), float(r["cycle_time_ms"]), r["cache_enabled"])
             for r in rows}
    assert len(tried) >= 8, tried


def test_an_unwritable_autotune_log_fails_init_with_its_name(run_python):
    out = run_python("""
import horde.torch as hvd
try:
    hvd.init()
    print("no error")
except ValueError as e:
    print("error:", e)
""", env={"HORDE_AUTOTUNE": "1", "HORDE_AUTOTUNE_LOG": "/nonexistent-dir/tune.csv"})
    assert ("error: HORDE_AUTOTUNE_LOG: cannot open the autotune log "
            "'/nonexistent-dir/tune.csv'") in out, out
