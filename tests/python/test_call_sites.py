"""Call sites: stall reports and mismatch errors say where in the program each rank called
the operation ("train.py:57"), found on the Python stack at submission (HORDE_CALL_SITES:
first, always or off).

Each test starts its own 2-rank job (a stall or a mismatch is what they provoke, so they
cannot run inside the suite's job); they run in the 1-rank pass only. The programs run as
`python -c`, whose file Python calls "<string>", except where a test needs a real file.
"""

import re

import pytest

import horde.torch as hvd
from _child_job import CHILD_PRELUDE, mpirun, results_by_rank

pytestmark = pytest.mark.skipif(hvd.size() != 1,
                                reason="starts its own job: only in the 1-rank run")

STALL = {"HORDE_STALL_CHECK_TIME_SECONDS": "1", "HORDE_STALL_SHUTDOWN_TIME_SECONDS": "2"}

# Rank 0 calls `call` (a line marked "# the call"); rank 1 never does, and submits the
# next operation only after rank 0's has failed (told by a file), or that one would
# wait long enough to fail too. Rank 0 says the failure's message.
ONLY_RANK_0_CALLS = """
import json, time
marker = os.environ["CALL_SITE_TEST_MARKER"]
if rank == 0:
    try:
        within(20, lambda: {call})  # the call
        say("result: " + json.dumps("no error"))
    except hvd.HordeInternalError as e:
        say("result: " + json.dumps(str(e)))
    open(marker, "w").close()
else:
    deadline = time.monotonic() + 20
    while not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.01)
within(20, lambda: hvd.allreduce(torch.ones(1), name="after"))
"""

# The ranks submit the same operation with different dtypes, each from its own line;
# every rank says the error's message.
RANKS_DISAGREE = """
import json
try:
    if rank == 0:
        within(20, lambda: hvd.allreduce(torch.ones(2), name={name}))  # rank 0's call
    else:
        within(20, lambda: hvd.allreduce(torch.ones(2, dtype=torch.int32), name={name}))  # rank 1's
    say("result: " + json.dumps("no error"))
except hvd.HordeInternalError as e:
    say("result: " + json.dumps(str(e)))
"""


def line_of(code, marker):
    """The number of the one line of ``code`` that holds ``marker``, as Python counts."""
    lines = [number for number, line in enumerate(code.splitlines(), 1) if marker in line]
    assert len(lines) == 1, (marker, lines)
    return lines[0]


def stall_message(run_python, tmp_path, code, env=None):
    out = run_python(code, env={**STALL, **(env or {}),
                                "CALL_SITE_TEST_MARKER": str(tmp_path / "failed_on_rank_0")},
                     launcher=mpirun(2))
    message = results_by_rank(out).get("rank 0")
    assert message and message != "no error", out
    return message


def test_a_stall_names_the_file_and_line_where_the_waiting_rank_called(run_python, tmp_path):
    # A real file, run from its folder: the site is the file relative to the directory.
    script = CHILD_PRELUDE + ONLY_RANK_0_CALLS.format(
        call='hvd.allreduce(torch.ones(2), name="x")')
    (tmp_path / "stall.py").write_text(script)
    message = stall_message(run_python, tmp_path, f"""
import os, runpy
os.chdir({str(tmp_path)!r})
runpy.run_path(os.path.join(os.getcwd(), "stall.py"), run_name="__main__")
""")
    line = line_of(script, "# the call")
    assert "\n  rank 1 has not submitted allreduce 'x' (waiting " in message, message
    assert f"\n    rank 0 called allreduce 'x' at stall.py:{line}\n" in message, message


def test_an_unnamed_operation_stalls_with_its_call_site(run_python, tmp_path):
    code = CHILD_PRELUDE + ONLY_RANK_0_CALLS.format(call="hvd.allreduce(torch.ones(2))")
    message = stall_message(run_python, tmp_path, code)
    line = line_of(code, "# the call")
    assert re.search(r"\n  rank 1 has not submitted allreduce '(allreduce\.noname\.\d+)' "
                     r"\(waiting .*\)\n    rank 0 called allreduce '\1' at <string>:"
                     f"{line}\n", message), message


@pytest.mark.parametrize("mode", ["first", "always"])
def test_first_keeps_a_names_first_call_site_and_always_looks_again(run_python, tmp_path, mode):
    # Both ranks call "y" once; then rank 0 calls it again from another line, alone. The
    # second request is a cache hit, sent to the coordinator only once it waits.
    code = CHILD_PRELUDE + 'hvd.allreduce(torch.ones(2), name="y")  # the first call\n' + \
        ONLY_RANK_0_CALLS.format(call='hvd.allreduce(torch.ones(2), name="y")')
    message = stall_message(run_python, tmp_path, code, env={"HORDE_CALL_SITES": mode})
    line = line_of(code, "# the first call" if mode == "first" else "# the call")
    assert f"\n    rank 0 called allreduce 'y' at <string>:{line}\n" in message, message


def disagreement(run_python, name, env=None):
    code = CHILD_PRELUDE + RANKS_DISAGREE.format(name=name)
    results = results_by_rank(run_python(code, env=env, launcher=mpirun(2)))
    assert set(results) == {"rank 0", "rank 1"}, results
    assert results["rank 0"] == results["rank 1"], results
    return code, results["rank 0"]


@pytest.mark.parametrize("name", ['"m"', "None"])
def test_a_mismatch_names_every_ranks_call_site(run_python, name):
    code, message = disagreement(run_python, name)
    assert message.startswith("ranks disagree on the dtype of allreduce '"), message
    assert message.endswith(
        f"float32 on rank 0; int32 on rank 1 (rank 0 called it at "
        f"<string>:{line_of(code, '# rank 0')}, rank 1 at <string>:{line_of(code, '# rank 1')})"
    ), message


def test_off_leaves_the_call_sites_out(run_python):
    code, message = disagreement(run_python, '"m"', env={"HORDE_CALL_SITES": "off"})
    assert message.endswith("float32 on rank 0; int32 on rank 1"), message
    assert "called" not in message, message
