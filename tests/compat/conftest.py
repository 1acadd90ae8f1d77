"""Horovod's tests and scripts, run against horde through the ``horovod`` alias package in
alias/ (see its __init__): the tests import ``horovod.torch`` and never name horde.

    mpirun -np N .venv/bin/python -m pytest tests/compat -q -p no:cacheprovider

Every rank runs every test in the same order; only rank 0 reports, the other ranks print
their failures."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "alias"))
sys.path.insert(0, os.path.dirname(HERE))

# As Horovod's test_torch.py sets them, before init.
os.environ["HOROVOD_TIMELINE"] = "DYNAMIC"
os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"

import pytest  # noqa: E402

import horovod.torch as hvd  # noqa: E402
from pytest_ranks import limit_every_test, report_only_on_rank_zero  # noqa: E402


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    hvd.init()
    report_only_on_rank_zero(config, hvd.rank())


def pytest_collection_modifyitems(config, items):
    limit_every_test(config, items)
