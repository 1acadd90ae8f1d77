"""The launcher's half of the commit contract with the ranks (python/horde/common/elastic):
rank 0 announces `horde elastic: generation G holds commit ID`; horderun passes the newest
ID to later generations as HORDE_ELASTIC_EXPECT_COMMIT; ranks that find no commit of the
job exit with 76 and horderun stops. Small rank scripts play the ranks' part."""

import pytest

from test_elastic_local import PYTHON, Job, discovery_script

pytestmark = pytest.mark.timeout(120)


def rank_script(tmp_path, body):
    script = tmp_path / "rank.py"
    script.write_text(
        "import os, sys, time\n"
        "rank = int(os.environ['OMPI_COMM_WORLD_RANK'])\n"
        "gen = int(os.environ['HORDE_ELASTIC_GENERATION'])\n"
        f"marker = {str(tmp_path / 'announced')!r}\n"
        + body)
    return [PYTHON, str(script)]


def horderun_lines(job):
    return [line for line in job.err().splitlines() if line.startswith("horderun: ")]


def test_the_newest_commit_reaches_later_generations_and_its_loss_stops_the_job(tmp_path):
    command = rank_script(tmp_path, (
        "if gen > 0:\n"
        "    print('expect=' + os.environ.get('HORDE_ELASTIC_EXPECT_COMMIT', '-'), flush=True)\n"
        "    sys.exit(76)\n"
        "if rank == 0:\n"
        "    sys.stderr.write('horde elastic: generation 0 holds commit c-17\\n')\n"
        "    sys.stderr.flush()\n"
        "    open(marker, 'w').close()\n"
        "    time.sleep(60)\n"
        "while not os.path.exists(marker): time.sleep(0.05)\n"
        "time.sleep(0.5)  # the announcement has reached horderun\n"
        "sys.exit(3)\n"))
    script, _ = discovery_script(tmp_path, "localhost:2\n")
    job = Job(tmp_path, ["-np", "2", "--min-np", "1", "--elastic-timeout", "5",
                         "--host-discovery-script", script], command)
    assert job.wait_for(r"^expect=(\S+)$").group(1) == "c-17", job.err()
    assert job.finish() == 1, job.err()
    lines = horderun_lines(job)
    assert lines[-1] == ("horderun: no host that holds a commit of this job is left (the newest "
                         "was c-17); job stopped"), lines
    assert any(line.startswith("horderun: reset 1: rank 1 on localhost failed (exit code 3)") and
               line.endswith("; restarting from the last commit") for line in lines), lines


def test_a_reset_before_any_commit_does_not_claim_one(tmp_path):
    command = rank_script(tmp_path, (
        "if gen > 0: sys.exit(0)\n"
        "if rank == 1: sys.exit(3)\n"
        "time.sleep(60)\n"))
    script, _ = discovery_script(tmp_path, "localhost:2\n")
    job = Job(tmp_path, ["-np", "2", "--min-np", "1", "--host-discovery-script", script], command)
    assert job.finish() == 0, job.err()
    resets = [line for line in horderun_lines(job) if line.startswith("horderun: reset ")]
    assert len(resets) == 1 and resets[0].endswith(
        "; restarting from the start (no commit was announced yet)"), resets
