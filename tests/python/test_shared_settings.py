"""Settings that ranks must share: a 2-rank child job in which each rank gets its own
environment (mpirun's MPMD form, ``-np 1 ... : -np 1 ...``). Every rank must run with
rank 0's values, say so in the log, and compute correct results; a malformed value on
one rank must fail init() on both, naming it. They run in the 1-rank pass only.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import horde.torch as hvd
from _child_job import CHILD_PRELUDE, mpirun

pytestmark = pytest.mark.skipif(hvd.size() != 1,
                                reason="starts its own job: only in the 1-rank run")

OUTER_JOB = ("OMPI_", "PMIX_", "PRTE_", "HYDRA_", "HORDE_", "HOROVOD_")


def run_per_rank_env(code, env_of_rank):
    """Runs ``code`` on 2 ranks, rank r with ``env_of_rank[r]`` added to a clean
    environment (as conftest's run_python cleans it) before anything imports horde;
    returns (stdout, stderr). The job is one scripts/mpirun.sh command, in the words of
    the MPI on PATH; each rank sets its own variables from its launcher's rank."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(OUTER_JOB) or key.startswith("OMPI_ALLOW_RUN_AS_ROOT")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               ENV_OF_RANK=json.dumps(env_of_rank))
    own_env = textwrap.dedent("""
        import json as _json, os as _os
        _launcher_rank = int(_os.environ.get("OMPI_COMM_WORLD_RANK")
                             or _os.environ.get("PMI_RANK") or 0)
        _os.environ.update(_json.loads(_os.environ["ENV_OF_RANK"])[_launcher_rank])
        """)
    command = mpirun(len(env_of_rank)) + [sys.executable, "-c", own_env + textwrap.dedent(code)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, f"exit code {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout, done.stderr


def test_rank_zeros_fusion_and_cache_settings_rule_and_results_are_right():
    out, err = run_per_rank_env(CHILD_PRELUDE + """
def steps():
    for step in range(5):
        handles = [hvd.allreduce_async(torch.full((3,), float(rank + i + step)), name=f"p.{i}",
                                       op=hvd.Sum) for i in range(60)]
        for i, handle in enumerate(handles):
            expected = float(2 * (i + step) + 1)
            got = hvd.synchronize(handle)
            assert got.tolist() == [expected] * 3, (step, i, got)
    return hvd.runtime_stats()

stats = within(60, steps)
say(f"ok fusion={stats['fusion_threshold_bytes']} fused={stats['fused_responses']}")
""", [{"HORDE_FUSION_THRESHOLD": "0", "HORDE_CACHE_CAPACITY": "4"}, {}])
    for rank in (0, 1):
        # Fusion off everywhere (rank 0's 0), so nothing fused on either rank.
        assert f"rank {rank}: ok fusion=0 fused=0" in out, (out, err)
    for variable, values, chosen in [
            ("HORDE_FUSION_THRESHOLD", "0 on rank 0; 134217728 on rank 1", "0"),
            ("HORDE_CACHE_CAPACITY", "1024 on rank 1; 4 on rank 0", "4")]:
        line = (f"{variable} differs across ranks ({values}); every rank uses rank 0's value, "
                f"{chosen}: ranks with different values would not issue the same collectives")
        for rank in (0, 1):
            assert f"[horde rank {rank} WARNING] {line}" in err, err


def test_a_setting_malformed_on_one_rank_fails_init_on_every_rank():
    out, err = run_per_rank_env("""
import os
import horde.torch as hvd
try:
    hvd.init()
    os.write(1, b"init succeeded\\n")
except ValueError as e:
    os.write(1, f"init failed: {e}\\n".encode())
""", [{}, {"HORDE_CACHE_CAPACITY": "-3"}])
    malformed = "invalid value '-3' for HORDE_CACHE_CAPACITY: expected a non-negative integer"
    assert f"init failed: {malformed}\n" in out, out
    assert ("init failed: init() failed because another rank's settings are malformed: rank 1: "
            f"{malformed}\n") in out, out
    assert "init succeeded" not in out, out
