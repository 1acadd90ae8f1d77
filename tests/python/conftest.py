"""pytest set-up for running the suite on every rank of an MPI job:

    mpirun -np N .venv/bin/python -m pytest tests/python -q -p no:cacheprovider

horde is initialized once per process, before collection, so tests may use hvd.size() in
their parameters. Every rank runs the same tests in the same order, so a test must call the
same collectives on every rank. Only rank 0 prints pytest's report; the other ranks print
just their failures, prefixed with their rank, and still exit non-zero when a test fails.

Every test runs under a time limit (120 s unless set otherwise, e.g. --timeout): a rank stuck
inside a collective is killed, which fails the whole mpirun instead of hanging it.
"""

import os
import subprocess
import sys
import textwrap
import zlib

import pytest
import torch

import horde.torch as hvd

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pytest_ranks import limit_every_test, report_only_on_rank_zero  # noqa: E402


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    # Process sets may be added and removed after init (test_process_sets.py); the
    # variable changes nothing else.
    os.environ.setdefault("HORDE_DYNAMIC_PROCESS_SETS", "1")
    hvd.init()
    report_only_on_rank_zero(config, hvd.rank())  # trylast: the terminal reporter exists by now


def pytest_collection_modifyitems(config, items):
    limit_every_test(config, items)


@pytest.fixture
def rank_tensor(request):
    """rank_tensor(rank, shape, dtype, low, high): the tensor that ``rank`` contributes in this
    test, uniform in [low, high) (whole numbers for integer and bool dtypes). It comes from a
    generator seeded by the test's id and ``rank``, so every rank can rebuild every rank's
    contribution and compute a collective's expected result locally."""
    test_seed = zlib.crc32(request.node.nodeid.encode())

    def make(rank, shape, dtype, low, high):
        generator = torch.Generator().manual_seed(test_seed * 1009 + rank)
        if dtype.is_floating_point:
            values = (torch.rand(shape, generator=generator, dtype=torch.float64) * (high - low)
                      + low)
        else:
            values = torch.randint(low, high, shape, generator=generator)
        return values.to(dtype)

    return make


@pytest.fixture
def run_python():
    """run_python(code, env={}, launcher=(), with_stderr=False, timeout=60): runs ``code``
    in a fresh Python (under the ``launcher`` command, e.g. mpirun, if given) and returns
    its stdout, or (stdout, stderr) with ``with_stderr``; fails the test if it exits
    non-zero or runs over ``timeout`` seconds. The child gets this environment without the
    outer MPI job's variables (a child that saw them would try to join that job) and
    without horde settings, plus ``env``."""
    from _child_job import child_environment

    def run(code, env=None, launcher=(), with_stderr=False, timeout=60):
        child_env = child_environment(**(env or {}))
        done = subprocess.run([*launcher, sys.executable, "-c", textwrap.dedent(code)],
                              env=child_env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"exit code {done.returncode}\n{done.stdout}\n{done.stderr}"
        return (done.stdout, done.stderr) if with_stderr else done.stdout

    return run


@pytest.fixture
def process_set():
    """process_set(ranks): adds the set on every rank; removed at the end of the test."""
    added = []

    def add(ranks):
        added.append(hvd.add_process_set(ranks))
        return added[-1]

    yield add
    for ps in added:
        if ps.process_set_id is not None:
            hvd.remove_process_set(ps)
