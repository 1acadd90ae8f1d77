"""Host names are data: the installed horderun, given host names that ssh, mpirun or a
shell would execute, refuses them in one line with exit code 2 and runs nothing. Each
payload would create a marker file; none may appear.

    .venv/bin/python -m pytest tests/launcher/test_hostile_hosts.py -q
"""

import os
import subprocess
import sys

import pytest

HORDERUN = os.environ.get("HORDERUN") or os.path.join(os.path.dirname(sys.executable), "horderun")

pytestmark = pytest.mark.timeout(120)


def hostile_names(marker):
    """Names that, read as an option or by a shell, would create `marker`."""
    return [
        f"-oProxyCommand=touch${{IFS}}{marker}",
        f"-oLocalCommand=touch {marker}",
        f"a;touch {marker}",
        f"$(touch {marker})",
        f"`touch {marker}`",
        f"a|touch {marker}",
        f"a\ntouch {marker}",
    ]


def refused(args, env=None):
    done = subprocess.run([HORDERUN, *args, sys.executable, "-c", "pass"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, **(env or {})})
    assert done.returncode == 2, done
    assert done.stdout == "", done
    message = done.stderr.strip()
    assert "\n" not in message and "is not allowed" in message, done
    return message


@pytest.mark.parametrize("index", range(7))
def test_hostile_names_from_every_source_run_nothing(tmp_path, index):
    marker = tmp_path / "payload_ran"
    name = hostile_names(marker)[index]
    message = refused(["-np", "1", "-H", f"{name}:1"])
    assert message.startswith("horderun: -H: host name '"), message
    hostfile = tmp_path / "hosts.txt"
    hostfile.write_text(f"node1 slots=1\n{name} slots=1\n")
    if "\n" not in name:  # a newline splits the hostfile line: its second half is refused
        message = refused(["-np", "1", "--hostfile", str(hostfile)])
        assert f"--hostfile {hostfile}:2: host name '" in message, message
    message = refused(["-np", "1"], env={"SLURM_JOB_NODELIST": f"node1,{name}",
                                         "SLURM_TASKS_PER_NODE": "1(x2)"})
    assert "SLURM_JOB_NODELIST: host name '" in message, message
    assert not marker.exists()


def test_the_accepted_forms(tmp_path):
    """A dry run shows the names as given: a DNS name, IPv4 and bracketed IPv6."""
    key = tmp_path / "key"
    key.write_text("not a real key\n")
    done = subprocess.run([HORDERUN, "--dry-run", "-np", "3", "-H",
                           "node01:1,10.0.0.7:1,[fe80::7]:1", sys.executable, "-c", "pass"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done
    assert "node01:1,10.0.0.7:1,[fe80::7]:1" in done.stdout, done.stdout


def test_a_long_or_zoned_name_says_what_is_allowed():
    message = refused(["-np", "1", "-H", "a" * 300])
    assert "longer than 253 characters" in message and "expected a DNS name" in message
    message = refused(["-np", "1", "-H", "[fe80::1%eth0]:1"])
    assert "zone index" in message
