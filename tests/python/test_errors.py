"""Error cases. Each raises on every rank, and the next collective still works."""

import pytest
import torch

import horde.torch as hvd
from horde.torch import _ops
from _child_job import mpirun

needs_two_ranks = pytest.mark.skipif(hvd.size() < 2, reason="needs at least 2 ranks")
# Subprocess checks do not depend on the job's size: run them once per job, on rank 0.
rank_zero_only = pytest.mark.skipif(hvd.rank() != 0, reason="runs its subprocess on rank 0 only")


def assert_next_allreduce_works(name):
    result = hvd.allreduce(torch.full((4,), hvd.rank() + 1.0), name=name, op=hvd.Sum)
    assert torch.equal(result, torch.full((4,), hvd.size() * (hvd.size() + 1) / 2))


def ranks_text(ranks):
    """How errors list consecutive ranks: "rank 1", "ranks 1,2", "ranks 1-3"."""
    listed = f"{ranks[0]}-{ranks[-1]}" if len(ranks) >= 3 else ",".join(map(str, ranks))
    return ("rank " if len(ranks) == 1 else "ranks ") + listed


# case -> (the field the error names, submit(rank, name) -> handle,
#          (the value rank 0 submits, the value the other ranks submit))
DISAGREEMENTS = {
    "dtype": ("dtype", lambda r, name: hvd.allreduce_async(
        torch.ones(4, dtype=torch.float32 if r == 0 else torch.int32), name=name, op=hvd.Sum),
        ("float32", "int32")),
    "shape": ("shape", lambda r, name: hvd.allreduce_async(
        torch.ones(4 if r == 0 else 5), name=name, op=hvd.Sum), ("[4]", "[5]")),
    "reduce_op": ("reduce op", lambda r, name: hvd.allreduce_async(
        torch.ones(4), name=name, op=hvd.Sum if r == 0 else hvd.Max), ("Sum", "Max")),
    "prescale": ("prescale factor", lambda r, name: hvd.allreduce_async(
        torch.ones(4), name=name, op=hvd.Sum, prescale_factor=1.0 if r == 0 else 2.0), ("1", "2")),
    "op_type": ("operation",
                lambda r, name: hvd.allreduce_async(torch.ones(4), name=name, op=hvd.Sum)
                if r == 0 else hvd.broadcast_async(torch.ones(4), 0, name=name),
                ("allreduce", "broadcast")),
    "root": ("root rank",
             lambda r, name: hvd.broadcast_async(torch.ones(4), 0 if r == 0 else 1, name=name),
             ("0", "1")),
    "allgather_shape": ("shape (all but the first dimension)", lambda r, name: hvd.allgather_async(
        torch.ones(2, 3 if r == 0 else 4), name=name), ("[*, 3]", "[*, 4]")),
}


@needs_two_ranks
@pytest.mark.parametrize("case", list(DISAGREEMENTS))
def test_ranks_disagree(case):
    field, submit, (value_on_0, value_elsewhere) = DISAGREEMENTS[case]
    name = f"disagree.{case}"
    handle = submit(hvd.rank(), name)
    with pytest.raises(hvd.HorovodInternalError) as error:
        hvd.synchronize(handle)
    assert isinstance(error.value, hvd.HordeInternalError)
    message = str(error.value)
    assert f"'{name}'" in message and f"disagree on the {field} of" in message, message
    assert f"{value_on_0} on rank 0" in message, message
    assert f"{value_elsewhere} on {ranks_text(list(range(1, hvd.size())))}" in message, message
    assert_next_allreduce_works(f"{name}.after")


@pytest.mark.parametrize("root", [-1, hvd.size()])
def test_broadcast_root_out_of_range(root):
    with pytest.raises(ValueError, match=f"root rank {root} is out of range"):
        hvd.broadcast(torch.ones(3), root, name=f"bad_root.{root}")
    assert_next_allreduce_works(f"bad_root.{root}.after")


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "broadcast"])
def test_unsupported_dtype(collective):
    tensor = torch.ones(3, dtype=torch.complex64)
    name = f"bad_dtype.{collective}"
    submit = {"allreduce": lambda: hvd.allreduce(tensor, name=name),
              "allgather": lambda: hvd.allgather(tensor, name=name),
              "broadcast": lambda: hvd.broadcast(tensor, 0, name=name)}[collective]
    with pytest.raises(ValueError, match="unsupported tensor dtype"):
        submit()
    assert_next_allreduce_works(f"{name}.after")


@pytest.mark.parametrize("kwargs,match", [
    (dict(op=hvd.Average), "Average is not defined for bool"),
    (dict(op=hvd.Sum, prescale_factor=2.0), "bool tensors cannot be scaled"),
])
def test_invalid_bool_allreduce(kwargs, match):
    with pytest.raises(ValueError, match=match):
        hvd.allreduce(torch.ones(3, dtype=torch.bool), name="bad_bool", **kwargs)
    assert_next_allreduce_works("bad_bool.after")


def test_non_finite_scale_factor():
    with pytest.raises(ValueError, match="is not a finite number"):
        hvd.allreduce(torch.ones(3), name="bad_scale", op=hvd.Sum, postscale_factor=float("inf"))
    assert_next_allreduce_works("bad_scale.after")


@needs_two_ranks
def test_duplicate_name_in_flight():
    # An operation stays in flight until every rank has submitted it. Each phase lets one
    # group of ranks submit a name and try it again while the other group provably has not
    # submitted it yet: the others submit only after a gate the first group reaches later.
    # Outcomes are asserted at the end so that every rank runs every collective.
    duplicate_errors, results = [], []
    for phase, first in (("a", lambda r: r != 0), ("b", lambda r: r == 0)):
        name, gate = f"dup.{phase}", f"dup.{phase}.gate"
        if first(hvd.rank()):
            handle = hvd.allreduce_async(torch.ones(2), name=name, op=hvd.Sum)
            try:
                hvd.allreduce_async(torch.ones(2), name=name, op=hvd.Sum)
                duplicate_errors.append(None)
            except ValueError as e:
                duplicate_errors.append(str(e))
        hvd.allreduce(torch.ones(1), name=gate, op=hvd.Sum)
        if not first(hvd.rank()):
            handle = hvd.allreduce_async(torch.ones(2), name=name, op=hvd.Sum)
        results.append(hvd.synchronize(handle))
    assert len(duplicate_errors) == 1
    assert duplicate_errors[0] is not None, "a second submission of an in-flight name was accepted"
    assert "is already in flight" in duplicate_errors[0]
    for result in results:
        assert torch.equal(result, torch.full((2,), float(hvd.size())))
    assert_next_allreduce_works("dup.after")


def test_unknown_handle():
    with pytest.raises(ValueError, match="unknown handle"):
        hvd.synchronize(987654321)
    with pytest.raises(ValueError, match="unknown handle"):
        hvd.poll(987654321)
    handle = hvd.allreduce_async(torch.ones(2), name="handle.twice", op=hvd.Sum)
    hvd.synchronize(handle)
    with pytest.raises(ValueError, match="already been synchronized"):
        hvd.synchronize(handle)
    assert_next_allreduce_works("handle.after")


@pytest.mark.parametrize("output", [torch.empty(5), torch.empty(4, dtype=torch.float64)],
                         ids=["shape", "dtype"])
def test_output_tensor_must_match_input(output):
    with pytest.raises(ValueError, match="output"):
        _ops.allreduce_async(torch.ones(4), output, "bad_output", hvd.Sum, 1.0, 1.0)
    assert_next_allreduce_works("bad_output.after")


@rank_zero_only
def test_operations_before_init_raise(run_python):
    out = run_python("""
        import torch
        import horde.torch as hvd
        for call in (lambda: hvd.allreduce(torch.ones(2)), hvd.rank):
            try:
                call()
                print("no error")
            except ValueError as e:
                print("ValueError:", e)
        print("initialized:", hvd.is_initialized())
    """)
    lines = out.splitlines()
    assert len(lines) == 3, out
    for line in lines[:2]:
        assert line.startswith("ValueError:") and "hvd.init()" in line, out
    assert lines[2] == "initialized: False"


@rank_zero_only
@pytest.mark.parametrize("variable,value,expected", [
    ("HORDE_FUSION_THRESHOLD", "abc", "a non-negative integer"),
    ("HOROVOD_CYCLE_TIME", "-1", "a positive number"),
    ("HORDE_LOG_LEVEL", "loud", "one of trace, debug, info, warning, error, fatal"),
    ("HORDE_STALL_CHECK_TIME_SECONDS", "0", "a positive number"),
    ("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "soon", "a non-negative number"),
    ("HORDE_STALL_CHECK_DISABLE", "yes", "1 (on) or 0 (off)"),
    ("HORDE_CALL_SITES", "sometimes", "expected first or always or off"),
])
def test_malformed_environment_variable(run_python, variable, value, expected):
    out = run_python("""
        import horde.torch as hvd
        try:
            hvd.init()
            print("no error")
        except ValueError as e:
            print("ValueError:", e)
    """, env={variable: value})
    assert out.startswith("ValueError:"), out
    assert variable in out and f"'{value}'" in out and expected in out, out


@pytest.mark.skipif(hvd.size() != 1, reason="starts its own 2-rank job: only in the 1-rank run")
def test_shutdown_fails_pending_operations(run_python):
    # Rank 1 queues an operation rank 0 never submits; the gate makes sure it is queued
    # before rank 0 shuts down. Shutting down must fail it on rank 1, not hang, and so must
    # rank 1's next operation; then all ranks can init() again.
    out = run_python("""
        import os
        import torch
        import horde.torch as hvd

        def say(line):  # one write per line, so the two ranks' lines do not interleave
            os.write(1, f"rank {rank}: {line}\\n".encode())

        hvd.init()
        rank = hvd.rank()
        if rank == 1:
            handle = hvd.allreduce_async(torch.ones(3), name="only_on_rank1", op=hvd.Sum)
        hvd.allreduce(torch.ones(1), name="gate", op=hvd.Sum)
        if rank == 0:
            hvd.shutdown()
            say(f"initialized after shutdown: {hvd.is_initialized()}")
        else:
            for step, run in (("pending", lambda: hvd.synchronize(handle)),
                              ("next",
                               lambda: hvd.allreduce(torch.ones(3), name="next", op=hvd.Sum))):
                try:
                    run()
                    say(f"{step}: no error")
                except hvd.HordeInternalError as e:
                    say(f"{step}: {type(e).__name__} {e}")
        hvd.init()  # every rank starts again, together
        say(f"after init again: {hvd.allreduce(torch.ones(1), name='again', op=hvd.Sum).item()}")
    """, launcher=mpirun(2))
    assert "rank 0: initialized after shutdown: False" in out, out
    assert "rank 1: pending: HordeInternalError horde has been shut down" in out, out
    assert "rank 1: next: HordeInternalError horde has been shut down" in out, out
    assert "rank 0: after init again: 2.0" in out and "rank 1: after init again: 2.0" in out, out
