"""Collectives over spanning trees (HORDE_TOPOLOGY): with a link matrix file, the
allreduces and broadcasts the plan predicts faster on trees run there, and their results
are those of MPI's: integers exact, floats the same on every rank and from run to run.

A link matrix file plans trees whatever the hosts, so these run on one machine; each test
starts its own job (the setting is read at init), in the 1-rank pass only. The real links
of several hosts are measured in tests/launcher/topology_netns_test.sh.
"""

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import horde.torch as hvd
from _child_job import child_environment, mpirun, results_by_rank

pytestmark = pytest.mark.skipif(hvd.size() != 1,
                                reason="starts its own job: only in the 1-rank run")

# Two islands, {0,1} and {2,3}, 2 Gbit/s inside and 0.25 between: trees win from a few
# hundred KiB.
ISLANDS = """
# two islands
latency_us 50
-    2    0.25 0.25
2    -    0.25 0.25
0.25 0.25 -    2
0.25 0.25 2    -
"""

# Three ranks, the last one slow.
SLOW_LAST = """
-   1   0.1
1   -   0.1
0.1 0.1 -
"""

# The checks every rank runs, and says as "rank N: result: {...}".
JOB = (Path(__file__).resolve().parents[1] / "launcher" / "topology_job.py").read_text()


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def timeline_phases(path):
    text = open(path).read().rstrip().rstrip(",")
    events = json.loads(text if text.endswith("]") else text + "]")
    return {e.get("name") for e in events if isinstance(e, dict)}


@pytest.mark.parametrize("ranks,matrix", [(4, ISLANDS), (3, SLOW_LAST)], ids=["islands4", "slow3"])
def test_trees_give_mpis_results(run_python, tmp_path, ranks, matrix):
    links = write(tmp_path, "links.txt", matrix)
    timeline = str(tmp_path / "timeline.json")
    env = {"HORDE_TOPOLOGY": links, "HORDE_TIMELINE": timeline}
    out = run_python(JOB, env=env, launcher=mpirun(ranks), timeout=240)
    results = results_by_rank(out)
    assert len(results) == ranks, out
    for rank, got in results.items():
        failed = [k for k, v in got.items() if v is False]
        assert not failed, f"{rank}: {failed}\n{out}"
    # Every rank holds the root's bytes: the same float result everywhere.
    assert len({got["floats digest"] for got in results.values()}) == 1, out
    phases = timeline_phases(timeline)
    assert {"TREE_ALLREDUCE", "TREE_BROADCAST", "MPI_ALLREDUCE"} <= phases, sorted(map(str, phases))


def test_off_and_one_host_stay_on_mpi(run_python, tmp_path):
    """HORDE_TOPOLOGY=off, and auto on one host (nothing to measure): no trees."""
    for value in ("off", "auto"):
        timeline = str(tmp_path / f"timeline-{value}.json")
        env = {"HORDE_TOPOLOGY": value, "HORDE_TIMELINE": timeline}
        out = run_python(JOB, env=env, launcher=mpirun(2), timeout=240)
        assert len(results_by_rank(out)) == 2, out
        phases = timeline_phases(timeline)
        assert "TREE_ALLREDUCE" not in phases and "MPI_ALLREDUCE" in phases, sorted(phases)


INIT_FAILS = """
import json
import os

import horde.torch as hvd

rank = os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("PMI_RANK", "0")


def say(line):
    os.write(1, f"rank {rank}: {line}\\n".encode())


try:
    hvd.init()
    say("result: " + json.dumps("no error"))
except Exception as e:  # noqa: BLE001 - the test reads the message
    say("result: " + json.dumps(type(e).__name__ + ": " + str(e)))
"""


@pytest.mark.parametrize("name,text,expected", [
    ("missing", None, "HORDE_TOPOLOGY: cannot read the link matrix file '{path}' "
                      "(expected auto, off, or a file written by horderun --probe-topology)"),
    ("three.txt", SLOW_LAST, "HORDE_TOPOLOGY: '{path}' has links for 3 ranks; this job has 2"),
    ("bad.txt", "- 1\n1 x\n", "HORDE_TOPOLOGY: '{path}': link matrix line 2: 'x' is not a "
                              "number of Gbit/s"),
    ("elsewhere.txt", "hosts far1 far2\n- 1\n1 -\n",
     "HORDE_TOPOLOGY: '{path}' names the hosts far1, far2; rank 0 runs on '{host}', which it "
     "does not name"),
])
def test_bad_link_files_fail_init_on_every_rank(run_python, tmp_path, name, text, expected):
    host = socket.gethostname()
    path = write(tmp_path, name, text.format(host=host)) if text is not None else str(
        tmp_path / name)
    out = run_python(INIT_FAILS, env={"HORDE_TOPOLOGY": path}, launcher=mpirun(2), timeout=60)
    results = results_by_rank(out)
    assert len(results) == 2, out
    for rank, message in results.items():
        assert expected.format(path=path, host=host) in message, f"{rank}: {message}"


A_RANK_DIES = """
import os
import time

import torch

import horde.torch as hvd

hvd.init()
hvd.allreduce(torch.ones(1 << 20), name="warm")  # on the trees
if hvd.rank() == 2:
    os._exit(7)  # gone mid-job, as a killed process is
start = time.monotonic()
try:
    hvd.allreduce(torch.ones(1 << 20), name="after")
    print(f"rank {hvd.rank()}: no error", flush=True)
except Exception as e:  # noqa: BLE001 - what the survivors see is reported
    print(f"rank {hvd.rank()}: {type(e).__name__} after {time.monotonic() - start:.1f} s",
          flush=True)
"""


def test_a_rank_dying_mid_job_ends_it_without_a_hang(tmp_path):
    """A rank that exits while the others reduce over the trees: the job ends (Open MPI
    stops the others, as with MPI's own collectives) within the test's limit."""
    links = write(tmp_path, "links.txt", ISLANDS)
    started = time.monotonic()
    done = subprocess.run([*mpirun(4), sys.executable, "-c", A_RANK_DIES],
                          env=child_environment(HORDE_TOPOLOGY=links), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "rank 0: no error" not in done.stdout, done.stdout
    assert time.monotonic() - started < 120
