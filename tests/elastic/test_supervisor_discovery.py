"""How horderun's elastic supervisor reads its discovery script: stdout only, hosts as a
set, failures after the first good run retried; the script starts with default signals."""

import socket

import pytest

from test_elastic_local import PYTHON, Job

pytestmark = pytest.mark.timeout(120)


def counting_script(tmp_path, body):
    """A discovery script that counts its runs in `count` ($n is this run's number)."""
    count = tmp_path / "count"
    script = tmp_path / "discover.sh"
    script.write_text(f"#!/bin/sh\necho x >> {count}\nn=$(wc -l < {count})\n{body}")
    script.chmod(0o755)
    return str(script), count


def after_runs(count, runs):
    """A rank that exits 0 once the discovery script has run `runs` times."""
    return [PYTHON, "-c", f"import os, time\nwhile not os.path.exists({str(count)!r}) or "
            f"len(open({str(count)!r}).read().split()) < {runs}:\n    time.sleep(0.1)\n"]


def horderun_lines(job):
    return [line for line in job.err().splitlines() if line.startswith("horderun: ")]


def test_the_same_hosts_in_another_order_are_no_change(tmp_path):
    me = socket.gethostname()
    script, count = counting_script(tmp_path, (
        f"if [ $((n % 2)) = 0 ]; then printf 'localhost:1\\n{me}:1\\n'; "
        f"else printf '{me}:1\\nlocalhost:1\\n'; fi\n"))
    job = Job(tmp_path, ["-np", "2", "--host-discovery-script", script], after_runs(count, 5))
    assert job.finish() == 0, job.err()
    lines = horderun_lines(job)
    assert sum(" elastic generation " in line for line in lines) == 1, lines
    assert not [line for line in lines if "reset" in line], lines


def test_stderr_is_logged_and_failures_after_the_first_run_are_retried(tmp_path):
    script, count = counting_script(tmp_path, (
        "echo 'warning: inventory is slow' >&2\n"
        "if [ $n -ge 3 ] && [ $n -le 5 ]; then echo 'inventory down' >&2; exit 4; fi\n"
        "echo localhost:1\n"))
    job = Job(tmp_path, ["-np", "1", "--host-discovery-script", script], after_runs(count, 8))
    assert job.finish() == 0, job.err()
    lines = horderun_lines(job)
    assert "horderun: host discovery script stderr: warning: inventory is slow" in lines, lines
    assert lines.count(
        f"horderun: host discovery script {script} failed with exit code 4: 'inventory down'; "
        "keeping the last hosts and retrying for up to 600 s (--elastic-timeout)") == 1, lines
    assert lines.count(
        f"horderun: host discovery script {script} works again after 3 failed run(s)") == 1, lines
    assert sum(" elastic generation " in line for line in lines) == 1, lines


def test_the_script_starts_with_default_signals_and_none_blocked(tmp_path):
    status = tmp_path / "status"
    script, count = counting_script(tmp_path, (
        f"grep -E '^Sig(Blk|Ign)' /proc/$$/status > {status}\necho localhost:1\n"))
    job = Job(tmp_path, ["-np", "1", "--host-discovery-script", script], after_runs(count, 2))
    assert job.finish() == 0, job.err()
    assert status.read_text() == "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
