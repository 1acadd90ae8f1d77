"""The timeline recorded by a real job: hvd.start_timeline / stop_timeline on every rank,
rank 0 writes the file, which is valid JSON with each operation's phases, and the
summary tool reads it."""

import json
import subprocess
import sys

import pytest
import torch

import horde.torch as hvd


def shared_path(tmp_path, name):
    # rank 0's temporary directory, so every rank names the same file.
    return hvd.broadcast_object(str(tmp_path / name), root_rank=0)


def phases_by_row(path):
    events = json.load(open(path))
    rows = {e["tid"]: e["args"]["name"] for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name"}
    phases = {}
    for e in events:
        # Whether rank 0 waited for the others depends on who came first: left out here.
        if e.get("ph") == "B" and e["name"] != "WAITING_FOR_RANKS":
            phases.setdefault(rows.get(e["tid"]), []).append(e["name"])
    return events, phases


def test_the_timeline_shows_each_operations_phases(tmp_path):
    path = shared_path(tmp_path, "timeline.json")
    hvd.start_timeline(path, mark_cycles=True)
    hvd.allreduce(torch.ones(3), name="tl.single")
    hvd.grouped_allreduce([torch.ones(5), torch.ones(7)], name="tl.fused")
    hvd.allgather(torch.ones(2, 2), name="tl.gather")
    hvd.broadcast(torch.ones(4), root_rank=0, name="tl.bcast")
    hvd.stop_timeline()
    if hvd.rank() != 0:
        return  # only rank 0 records
    events, phases = phases_by_row(path)
    assert phases["tl.single"] == ["ALLREDUCE", "NEGOTIATE", "QUEUE", "MPI_ALLREDUCE"]
    assert phases["tl.fused.0"] == ["ALLREDUCE", "NEGOTIATE", "QUEUE", "MEMCPY_IN_FUSION_BUFFER",
                                    "MPI_ALLREDUCE", "MEMCPY_OUT_FUSION_BUFFER"]
    assert phases["tl.gather"] == ["ALLGATHER", "NEGOTIATE", "QUEUE", "ALLGATHER"]
    assert phases["tl.bcast"] == ["BROADCAST", "NEGOTIATE", "QUEUE", "BROADCAST"]
    begins = sum(e["ph"] == "B" for e in events)
    assert begins == sum(e["ph"] == "E" for e in events), "every phase is closed"
    assert any(e.get("name") == "CYCLE_START" for e in events)

    summary = subprocess.run([sys.executable, "-m", "horde.timeline", "summary", path],
                             capture_output=True, text=True, timeout=60)
    assert summary.returncode == 0, summary.stderr
    for line in ("communication", "negotiation protocol", "waiting for other ranks",
                 "framework (outside horde)", "MPI_ALLREDUCE"):
        assert line in summary.stdout, summary.stdout


def test_a_timeline_can_be_restarted_and_records_nothing_after_stop(tmp_path):
    first = shared_path(tmp_path, "first.json")
    second = shared_path(tmp_path, "second.json")
    hvd.start_timeline(first)
    hvd.allreduce(torch.ones(1), name="tl.first")
    hvd.start_timeline(second)  # switches files
    hvd.allreduce(torch.ones(1), name="tl.second")
    hvd.stop_timeline()
    hvd.allreduce(torch.ones(1), name="tl.after")
    if hvd.rank() == 0:
        assert "tl.first" in phases_by_row(first)[1]
        rows = phases_by_row(second)[1]
        assert "tl.second" in rows and "tl.first" not in rows and "tl.after" not in rows


def test_an_unwritable_timeline_path_is_a_clear_error_on_rank_0(tmp_path):
    bad = "/nonexistent-dir/timeline.json"
    if hvd.rank() == 0:
        with pytest.raises(ValueError, match="nonexistent-dir"):
            hvd.start_timeline(bad)
    else:
        hvd.start_timeline(bad)  # other ranks record nothing
    hvd.stop_timeline()
    assert hvd.allreduce(torch.ones(1), name="tl.still_works", op=hvd.Sum).item() == hvd.size()


def test_a_path_with_rank_in_braces_gives_every_rank_its_own_file(tmp_path):
    hvd.start_timeline(str(tmp_path / "rank-{rank}.json"))
    hvd.allreduce(torch.ones(2), name="tl.per_rank")
    hvd.stop_timeline()
    assert "tl.per_rank" in phases_by_row(str(tmp_path / f"rank-{hvd.rank()}.json"))[1]
    assert not (tmp_path / "rank-{rank}.json").exists()
