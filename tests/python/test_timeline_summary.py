"""The timeline summary tool, `python -m horde.timeline summary FILE [--png OUT]`, on traces
written here in the format of core/timeline_writer.cc, with durations chosen so every
figure of the breakdown is known. The tool needs no runtime: these tests run once, in the
1-rank job."""

import json
import subprocess
import sys

import pytest

import horde.torch as hvd
from horde.timeline.__main__ import main

pytestmark = pytest.mark.skipif(hvd.size() != 1, reason="a tool test: only in the 1-rank run")


def begin(name, ts, tid):
    return {"name": name, "ph": "B", "ts": ts, "pid": 1, "tid": tid}


def end(ts, tid):
    return {"ph": "E", "ts": ts, "pid": 1, "tid": tid}


def row(name, tid):
    return [{"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}},
            {"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid,
             "args": {"sort_index": tid}}]


def operation(op, phases, tid):
    """An operation on row `tid` holding `phases`, (name, start_us, end_us) each."""
    events = [begin(op, phases[0][1], tid)]
    for name, start, stop in phases:
        events += [begin(name, start, tid), end(stop, tid)]
    return events + [end(phases[-1][2], tid)]


def cycle(ts):
    return {"name": "CYCLE_START", "s": "g", "ph": "i", "ts": ts, "pid": 1, "tid": 0}


# Times in microseconds. Two tensors fused into one allreduce (0-10 ms), then a broadcast
# of a third (14-20 ms); nothing runs from 10 to 14 ms.
FUSED_PHASES = [("NEGOTIATE", 0, 2000), ("QUEUE", 2000, 3000),
                ("MEMCPY_IN_FUSION_BUFFER", 3000, 4000), ("MPI_ALLREDUCE", 4000, 8000),
                ("MEMCPY_OUT_FUSION_BUFFER", 8000, 10000)]
EVENTS = ([{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "horde"}}]
          + row("grad.w", 1) + row("grad.b", 2) + row("params", 3) + [cycle(0)]
          + operation("ALLREDUCE", FUSED_PHASES, 1) + operation("ALLREDUCE", FUSED_PHASES, 2)
          + [cycle(12000)]
          + operation("BROADCAST", [("NEGOTIATE", 14000, 15000), ("MPI_BCAST", 15000, 20000)], 3))
# The writer's dropped-events count, the file's last event.
DROPPED = {"name": "DROPPED_EVENTS", "s": "g", "ph": "i", "ts": 20000, "pid": 1, "tid": 0,
           "args": {"count": 0}}


def write_trace(path, events, closed=True):
    """As the C++ writer does: "[", one event per line, "]" at Stop()."""
    text = "[\n" + ",\n".join(json.dumps(event, separators=(",", ":")) for event in events)
    path.write_text(text + ("\n]\n" if closed else ""))
    return str(path)


def summary_lines(capsys, *args):
    assert main(["summary", *args]) == 0
    return capsys.readouterr().out.splitlines()


def figures(lines, label):
    """The numbers on the line that starts with `label` (after indentation)."""
    line = next(line for line in lines if line.strip().startswith(label + " "))
    return [float(word.rstrip("%")) for word in line.split()
            if word.rstrip("%").replace(".", "").isdigit()]


def test_the_breakdown_adds_up_to_the_span(tmp_path, capsys):
    lines = summary_lines(capsys, write_trace(tmp_path / "t.json", EVENTS + [DROPPED]))
    assert lines[1] == "span 20.000 ms, 3 tensors, 3 operations, 2 rounds (cycle marks)"
    expected = {"communication": [9.0, 45.0], "MPI_ALLREDUCE": [4.0, 20.0],
                "MPI_BCAST": [5.0, 25.0],
                "copy out": [2.0, 10.0], "copy in": [1.0, 5.0], "queue": [1.0, 5.0],
                "negotiation protocol": [3.0, 15.0], "waiting for other ranks": [0.0, 0.0],
                "framework (outside horde)": [4.0, 20.0]}
    for label, numbers in expected.items():
        assert figures(lines, label) == numbers, label
    # Summed over tensors, the fused allreduce counts twice.
    assert figures(lines[lines.index("time in each phase, summed over tensors (a fused "
                                     "operation counts once per tensor):"):], "NEGOTIATE") == [5.0]
    assert "operations: ALLREDUCE 2, BROADCAST 1" in lines
    tensors = lines[lines.index("top 3 tensors by time in operations:") + 1:]
    assert [line.split()[0] for line in tensors] == ["grad.b", "grad.w", "params"]
    assert figures(tensors, "params") == [6.0, 1.0]  # ms, operations
    assert not any("warning" in line or "note" in line for line in lines)
    assert any(line.startswith("stragglers: no report") for line in lines), lines


def straggler_report(ts, straggler, cost):
    return {"name": "STRAGGLER_REPORT", "s": "g", "ph": "i", "ts": ts, "pid": 1, "tid": 0,
            "args": {"straggler": straggler, "most_often_last": 1, "host": "node-b",
                     "share_last": 0.97, "lag_median_ms": 20.1, "lag_p90_ms": 21.0,
                     "cost_to_others": cost, "rounds": 64, "window_seconds": 1.5}}


# A rank that waited for another: the first allreduce spent 6 ms of rounds waiting for it
# and 1 ms deciding; the second was decided in the round that took it.
WAITING_EVENTS = (row("grad.w", 1) + row("grad.b", 2)
                  + operation("ALLREDUCE", [("WAITING_FOR_RANKS", 0, 6000),
                                            ("NEGOTIATE", 6000, 7000),
                                            ("MPI_ALLREDUCE", 7000, 9000)], 1)
                  + operation("ALLREDUCE", [("NEGOTIATE", 9000, 10000),
                                            ("MPI_ALLREDUCE", 10000, 12000)], 2))


def test_waiting_for_other_ranks_is_told_apart_from_the_protocol(tmp_path, capsys):
    events = WAITING_EVENTS + [straggler_report(5000, None, 0.01),
                               straggler_report(12000, 1, 0.45)]
    lines = summary_lines(capsys, write_trace(tmp_path / "rank0.json", events))
    assert figures(lines, "waiting for other ranks") == [6.0, 50.0]
    assert figures(lines, "negotiation protocol") == [2.0, 16.7]
    assert figures(lines, "communication") == [4.0, 33.3]
    assert "stragglers: rank 1 in 1 of 2 windows of rounds; in the last of them:" in lines
    assert ("  rank 1 (node-b) arrived last in 97% of 64 rounds, by 20.1 ms (median; p90 "
            "21.0 ms): the other ranks spent 45% of their time waiting for it") in lines


def framework_wait(start, stop, tid=9):
    return [begin("FRAMEWORK_WAIT", start, tid), end(stop, tid)]


def test_with_framework_waits_horde_counts_only_while_the_framework_is_blocked(tmp_path, capsys):
    # The framework computed until 8 ms while horde negotiated and reduced grad.w in the
    # background, then was blocked on horde from 8 to 13 ms: grad.w's last 1 ms of
    # MPI_ALLREDUCE, grad.b's 1 ms of NEGOTIATE and 2 ms of MPI_ALLREDUCE, then 1 ms with
    # nothing in flight (waking up).
    events = (WAITING_EVENTS + row("framework blocked on horde", 9)
              + [begin("FRAMEWORK_WAIT", 8000, 9), end(13000, 9)])
    lines = summary_lines(capsys, write_trace(tmp_path / "t.json", events))
    assert figures(lines, "communication") == [3.0, 23.1]
    assert figures(lines, "negotiation protocol") == [1.0, 7.7]
    assert figures(lines, "waiting for other ranks") == [0.0, 0.0]
    assert figures(lines, "blocked, between phases") == [1.0, 7.7]
    assert figures(lines, "framework (outside horde)") == [8.0, 61.5]
    assert "  horde's work hidden behind the framework (not above): 8.000 ms" in lines
    assert "operations: ALLREDUCE 2" in lines  # the waits are not operations


def test_no_straggler_in_any_window_is_said(tmp_path, capsys):
    events = WAITING_EVENTS + [straggler_report(5000, None, 0.01)]
    lines = summary_lines(capsys, write_trace(tmp_path / "t.json", events))
    assert any(line.startswith("stragglers: none in 1 windows of rounds") for line in lines)


def test_several_files_are_compared_side_by_side(tmp_path, capsys):
    waiting = write_trace(tmp_path / "rank0.json", WAITING_EVENTS)
    prompt = write_trace(tmp_path / "rank1.json", EVENTS)
    args = [waiting, prompt]
    if _has_matplotlib():
        args += ["--png", str(tmp_path / "ranks.png")]
    lines = summary_lines(capsys, *args)
    assert sum(line.startswith("timeline ") for line in lines) == 2
    table = lines[lines.index(next(line for line in lines
                                   if line.startswith("each file's span, split"))) + 1:]
    assert table[0].split() == ["file", "waiting", "comm", "copy", "out", "copy", "in", "queue",
                                "protocol", "between", "framework"]
    assert table[1].split() == [waiting, "50.0", "33.3", "0.0", "0.0", "0.0", "16.7", "0.0", "0.0"]
    assert table[2].split() == [prompt, "0.0", "45.0", "10.0", "5.0", "5.0", "15.0", "0.0", "20.0"]
    if _has_matplotlib():
        assert (tmp_path / "ranks.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_top_limits_the_tensors_listed(tmp_path, capsys):
    lines = summary_lines(capsys, write_trace(tmp_path / "t.json", EVENTS), "--top", "1")
    assert lines[-2:] == ["top 1 tensors by time in operations:",
                          "  grad.b                                         10.000 ms in 1 "
                          "operations"]


def test_dropped_events_are_reported(tmp_path, capsys):
    dropped = dict(DROPPED, args={"count": 17})
    lines = summary_lines(capsys, write_trace(tmp_path / "t.json", EVENTS + [dropped]))
    assert any(line.startswith("warning: 17 events were dropped") for line in lines), lines


def test_a_file_cut_short_is_read_up_to_its_last_complete_event(tmp_path, capsys):
    # The run died 3 ms into the broadcast's MPI_BCAST, in the middle of writing an event.
    path = write_trace(tmp_path / "cut.json", EVENTS[:-2] + [cycle(18000)], closed=False)
    with open(path, "a") as file:
        file.write(',\n{"ph":"E","ts":20')
    lines = summary_lines(capsys, path)
    assert lines[1] == "span 18.000 ms, 3 tensors, 3 operations, 3 rounds (cycle marks)"
    assert figures(lines, "MPI_BCAST") == [3.0, 16.7]  # open: closed at the last timestamp
    assert figures(lines, "negotiation protocol") == [3.0, 16.7]
    assert lines[-1] == ("note: the file has no closing bracket (the run did not stop the "
                         "timeline); read up to its last complete event, 2 open events closed "
                         "at its end")


def test_png_chart(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")
    png = tmp_path / "chart.png"
    lines = summary_lines(capsys, write_trace(tmp_path / "t.json", EVENTS), "--png", str(png))
    assert lines[-1] == f"chart saved to {png}"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10_000


def test_bad_input_is_a_clear_error(tmp_path, capsys):
    assert main(["summary", str(tmp_path / "missing.json")]) == 1
    assert capsys.readouterr().err == (f"horde.timeline: cannot read {tmp_path / 'missing.json'}: "
                                       "No such file or directory\n")
    not_a_trace = tmp_path / "notes.txt"
    not_a_trace.write_text("hello")
    assert main(["summary", str(not_a_trace)]) == 1
    assert f"{not_a_trace} is not a Chrome trace" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["summary", str(not_a_trace), "--top", "0"])
    assert "--top must be at least 1, got 0" in capsys.readouterr().err


def test_runs_as_a_module_without_torch(tmp_path):
    """`python -m horde.timeline` in a fresh interpreter, which must not import torch."""
    path = write_trace(tmp_path / "t.json", EVENTS)
    code = ("import runpy, sys; sys.argv = ['horde.timeline', 'summary', sys.argv[1]]\n"
            "try:\n    runpy.run_module('horde.timeline', run_name='__main__')\n"
            "finally:\n    print('torch imported' if 'torch' in sys.modules else 'no torch')")
    done = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "span 20.000 ms" in done.stdout
    assert done.stdout.splitlines()[-1] == "no torch"
