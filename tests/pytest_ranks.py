"""What the pytest suites that run on every rank of an MPI job share (tests/python,
tests/compat): only rank 0 reports, and every test has a time limit."""

import os
import sys

import pytest

DEFAULT_TIMEOUT_S = 120


def report_only_on_rank_zero(config, rank):
    """Replaces pytest's report on ranks other than 0 with FailureReporter's."""
    if rank == 0:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        config.pluginmanager.unregister(reporter)
    config.pluginmanager.register(FailureReporter(rank), "horde_failure_reporter")


def limit_every_test(config, items):
    """Gives every test a time limit unless --timeout, PYTEST_TIMEOUT, the ini file or a
    timeout marker sets one. The thread method also fires while the main thread waits
    inside C++, where a SIGALRM handler would not run until the wait returned."""
    if not config.pluginmanager.hasplugin("timeout"):
        raise pytest.UsageError("the suite needs pytest-timeout (Debian: python3-pytest-timeout)")
    configured = config.getoption("timeout") is not None or config.getini("timeout")
    if configured or os.environ.get("PYTEST_TIMEOUT"):
        return
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(DEFAULT_TIMEOUT_S, method="thread"))


class FailureReporter:
    """Replaces pytest's report on ranks other than 0: prints only failures, to stderr."""

    def __init__(self, rank):
        self.rank = rank

    def pytest_runtest_logreport(self, report):
        if report.failed:
            sys.stderr.write(f"\n[rank {self.rank}] FAILED {report.nodeid} ({report.when})\n"
                             f"{report.longreprtext}\n")

    def pytest_collectreport(self, report):
        if report.failed:
            sys.stderr.write(f"\n[rank {self.rank}] ERROR collecting {report.nodeid}\n"
                             f"{report.longreprtext}\n")
