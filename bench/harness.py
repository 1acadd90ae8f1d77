"""What every benchmark part shares: the process's place in the job, the native libraries
(raw MPI and horde's C++ API, loaded with ctypes), gloo, and interleaved timing.

Every contender runs in the same process on the same buffers. A repetition runs each
contender once (forward order, then reversed on the next repetition: A B C, C B A, ...),
each batch timed between a barrier and the slowest rank's end; the figure is the median
over repetitions. horde is started only for the contenders that use it, so raw MPI and
gloo never share the cores with horde's idle background thread.
"""

import contextlib
import ctypes
import json
import os
import resource
import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch
import torch.distributed as dist

import horde.torch as hvd

RANK = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
SIZE = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
LOCAL_SIZE = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
BUILD_DIR = os.environ.get("BENCH_BUILD_DIR", "build/bench")
FLOAT_P = ctypes.POINTER(ctypes.c_float)
INT64_P = ctypes.POINTER(ctypes.c_int64)


def log(text):
    if RANK == 0:
        print(text, flush=True)


def _load(name, signatures):
    lib = ctypes.CDLL(os.path.join(BUILD_DIR, f"lib{name}.so"), mode=ctypes.RTLD_GLOBAL)
    for function, (restype, argtypes) in signatures.items():
        getattr(lib, function).restype = restype
        getattr(lib, function).argtypes = argtypes
    return lib


# MPI first: the library initializes MPI, and horde then uses it.
MPI = _load("mpi_bench", {
    "bench_mpi_init": (ctypes.c_int, []),
    "bench_mpi_finalize": (None, []),
    "bench_barrier": (None, []),
    "bench_max": (ctypes.c_double, [ctypes.c_double]),
    "mpi_allreduce_loop": (None, [FLOAT_P, ctypes.c_int64, ctypes.c_int]),
    "mpi_allreduce_each": (None, [ctypes.POINTER(FLOAT_P), INT64_P, ctypes.c_int]),
    "mpi_allreduce_packed": (None, [FLOAT_P, ctypes.c_int64]),
    "mpi_allreduce_packed_copies": (None, [ctypes.POINTER(FLOAT_P), INT64_P, ctypes.c_int,
                                           FLOAT_P]),
})
HORDE_CPP = _load("horde_cpp_bench", {
    "horde_cpp_allreduce_loop": (None, [FLOAT_P, ctypes.c_int64, ctypes.c_int, ctypes.c_char_p]),
    "horde_cpp_allreduce_set": (None, [ctypes.POINTER(FLOAT_P), INT64_P, ctypes.c_int]),
})


def pointer(tensor):
    return ctypes.cast(tensor.data_ptr(), FLOAT_P)


class TensorSet:
    """A list of float32 tensors in the form the native libraries take them."""

    def __init__(self, tensors):
        self.tensors = tensors
        self.count = len(tensors)
        self.pointers = (FLOAT_P * self.count)(*[pointer(t) for t in tensors])
        self.counts = (ctypes.c_int64 * self.count)(*[t.numel() for t in tensors])
        self.bytes = sum(t.numel() * t.element_size() for t in tensors)


@contextlib.contextmanager
def session(part):
    """MPI, then gloo (file rendezvous named after the part), torch threads shared fairly
    among the ranks on this machine; horde is started on demand by `interleave`."""
    provided = MPI.bench_mpi_init()
    if provided < 2:  # MPI_THREAD_SERIALIZED
        raise RuntimeError(f"MPI provides thread level {provided}; horde needs SERIALIZED")
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // LOCAL_SIZE))
    if not os.environ.get("BENCH_RENDEZVOUS_DIR"):
        # A fixed name under /tmp would be clobbered by another run at the same time.
        raise RuntimeError("BENCH_RENDEZVOUS_DIR is not set: expected a directory that every "
                           "rank can reach, made for this run (bench/run.sh makes one)")
    rendezvous = os.path.join(os.environ["BENCH_RENDEZVOUS_DIR"], f"gloo.{part}.np{SIZE}")
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=RANK,
                            world_size=SIZE)
    try:
        yield
    finally:
        set_horde(False)
        dist.destroy_process_group()
        MPI.bench_mpi_finalize()


_horde_env = None  # the HORDE_* settings the running horde was started with; None: stopped


def set_horde(running, env=None):
    """Starts horde with `env` added to the environment (its config is read at init),
    restarting it if it runs with other settings, or stops it. Returns whether horde was
    (re)started."""
    global _horde_env
    wanted = dict(env or {}) if running else None
    if wanted == _horde_env:
        return False
    if hvd.is_initialized():
        hvd.shutdown()
    if running:
        saved = {k: os.environ.get(k) for k in wanted}
        os.environ.update(wanted)
        try:
            hvd.init()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k)
                else:
                    os.environ[k] = v
    _horde_env = wanted
    return running


def cpu_seconds():
    """CPU time of this process so far, all its threads (horde's and gloo's included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(run: Callable[[], None]):
    """Seconds from a barrier to the slowest rank's end of `run`, and the most CPU
    seconds a rank's process used meanwhile."""
    MPI.bench_barrier()
    start, cpu = time.perf_counter(), cpu_seconds()
    run()
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    return MPI.bench_max(wall), MPI.bench_max(cpu)


@dataclass
class Contender:
    name: str
    run: Callable[[], None]
    needs_horde: bool = False
    horde_env: dict = None  # HORDE_* settings for this contender's horde


def interleave(contenders, repetitions, warmup=1):
    """Median wall seconds per contender over `repetitions` interleaved rounds, and
    median CPU seconds."""
    walls = {c.name: [] for c in contenders}
    cpus = {c.name: [] for c in contenders}
    for rep in range(warmup + repetitions):
        order = contenders if rep % 2 == 0 else contenders[::-1]
        for c in order:
            if set_horde(c.needs_horde, c.horde_env):
                # A fresh runtime negotiates every name once; training repeats its steps,
                # so what is timed is the steady state, as for the other contenders.
                c.run()
            wall, cpu = timed(c.run)
            if rep >= warmup:
                walls[c.name].append(wall)
                cpus[c.name].append(cpu)
    set_horde(False)
    median = statistics.median
    return ({k: median(v) for k, v in walls.items()}, {k: median(v) for k, v in cpus.items()})


def horde_counts(run, env=None):
    """Negotiation rounds and executed responses horde needed for one `run`."""
    if set_horde(True, env):
        run()
    before = hvd.runtime_stats()
    run()
    after = hvd.runtime_stats()
    set_horde(False)
    return {k: after[k] - before[k] for k in ("negotiation_rounds", "responses_executed")}


def save(part, rows, variant=None):
    """Rank 0 writes the part's rows for bench/report.py; runs of one part with different
    arguments (a ``variant``: another model) add rows instead of replacing them."""
    if RANK != 0:
        return
    name = f"{part}.{variant}" if variant else part
    path = os.path.join(os.environ.get("BENCH_RESULTS_DIR", "."), f"{name}.np{SIZE}.json")
    with open(path, "w") as f:
        json.dump({"part": part, "ranks": SIZE, "rows": rows}, f, indent=1)
