"""How an elastic horderun gives up: each a one-line reason, a non-zero exit, within
its time limit, and no rank left behind."""

import re

import pytest

from test_elastic_local import HORDERUN, PYTHON, Job, discovery_script

pytestmark = pytest.mark.timeout(120)

# Writes its pid where the test checks that no rank outlives horderun.
SLEEPER = [PYTHON, "-c", "import os, time; d = os.environ['JOB_PID_DIR']; "
           "open(os.path.join(d, str(os.getpid())), 'w').write(str(os.getpid())); time.sleep(300)"]
EXIT3 = [PYTHON, "-c", "import sys; sys.exit(3)"]


def run_job(tmp_path, args, command, discovery_text=None, script=None):
    if script is None:
        script, _ = discovery_script(tmp_path, discovery_text)
    job = Job(tmp_path, [*args, "--host-discovery-script", script], command)
    code = job.finish()
    return code, [line for line in job.err().splitlines() if line.startswith("horderun: ")]


def test_below_min_np_for_longer_than_the_elastic_timeout(tmp_path):
    code, lines = run_job(tmp_path, ["-np", "2", "--elastic-timeout", "2"], SLEEPER,
                          "localhost:1\n")
    assert code == 1
    assert lines[-1] == ("horderun: only 1 usable slot(s) (localhost:1) for 2 s "
                         "(--elastic-timeout), expected at least --min-np 2"), lines


def test_more_resets_than_the_reset_limit(tmp_path):
    code, lines = run_job(tmp_path, ["-np", "3", "--min-np", "1", "--reset-limit", "1"], EXIT3,
                          "localhost:3\n")
    assert code == 1
    assert lines[-1].startswith("horderun: giving up: rank ") and lines[-1].endswith(
        "and the job was already reset 1 time(s) (--reset-limit 1)"), lines
    assert sum(line.startswith("horderun: reset ") for line in lines) == 1


@pytest.mark.parametrize("output, message", [
    ("a b\n", "host discovery script {}, line 1: host name 'a b' is not allowed"),
    ("node1:x\n", "host discovery script {}, line 1: expected 'host' or 'host:slots'"),
    ("localhost\n-oProxyCommand=id\n", "host discovery script {}, line 2: host name "
     "'-oProxyCommand=id' is not allowed"),
])
def test_a_discovery_script_that_prints_garbage(tmp_path, output, message):
    script, _ = discovery_script(tmp_path, output)
    code, lines = run_job(tmp_path, ["-np", "1"], SLEEPER, script=script)
    assert code == 1
    assert lines[-1].startswith("horderun: " + message.format(script)), lines


def test_a_discovery_script_that_keeps_failing_mid_job_stops_it(tmp_path):
    count = tmp_path / "count"
    script = tmp_path / "discover.sh"
    # The first two runs succeed; later ones fail, for longer than --elastic-timeout.
    script.write_text(f"#!/bin/sh\necho x >> {count}\n"
                      f"[ $(wc -l < {count}) -le 2 ] || {{ echo 'inventory down' >&2; exit 4; }}\n"
                      "echo localhost:2\n")
    script.chmod(0o755)
    code, lines = run_job(tmp_path, ["-np", "2", "--elastic-timeout", "3"], SLEEPER,
                          script=str(script))
    assert code == 1
    failed = f"host discovery script {script} failed with exit code 4: 'inventory down'"
    assert lines.count(f"horderun: {failed}; keeping the last hosts and retrying for up to 3 s "
                       "(--elastic-timeout)") == 1, lines
    assert re.fullmatch(r"horderun: host discovery has failed for \d+ s \(--elastic-timeout\); "
                        r"the last run: " + re.escape(failed), lines[-1]), lines


def test_elastic_flags_without_a_discovery_script(tmp_path):
    import subprocess
    run = subprocess.run([HORDERUN, "-np", "2", "--min-np", "1", *SLEEPER], capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 2
    assert "add --host-discovery-script SCRIPT" in run.stderr
