"""Part 5: what a background thread per process set costs. With 1 process set (the
global one) and with 8 (the global one and 7 more over every rank, each a runtime with its
own background thread, idle): CPU seconds the process uses per second while its main
thread sleeps (getrusage, all threads), and the median time of a 4 B allreduce on the
global set from C++."""

import argparse
import ctypes
import os
import statistics
import time

import torch

from harness import BUILD_DIR, HORDE_CPP, MPI, SIZE, cpu_seconds, log, pointer, save, session
from harness import set_horde

IDLE = ctypes.CDLL(os.path.join(BUILD_DIR, "libidle_runtimes.so"))
IDLE.idle_runtimes_start.restype = ctypes.c_int
IDLE.idle_runtimes_start.argtypes = [ctypes.c_int, ctypes.c_int]
IDLE.idle_runtimes_stop.restype = None
IDLE.idle_runtimes_stop.argtypes = []

SET_COUNTS = (1, 8)


def idle_cpu(seconds):
    """CPU seconds per wall second of the busiest rank while its main thread sleeps."""
    MPI.bench_barrier()
    cpu, wall = cpu_seconds(), time.perf_counter()
    time.sleep(seconds)
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    return MPI.bench_max(cpu / wall)


def latency(buffer, iters):
    """Median seconds of one blocking 4 B allreduce on the global set (the slowest rank's
    median): the median, not the mean, so that a rank descheduled by other work on the
    machine now and then does not decide the figure."""
    data = pointer(buffer)
    MPI.bench_barrier()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        HORDE_CPP.horde_cpp_allreduce_loop(data, 1, 1, b"bench.process_sets")
        times.append(time.perf_counter() - start)
    return MPI.bench_max(statistics.median(times))


def measure(sets, seconds, iters):
    if IDLE.idle_runtimes_start(SIZE, sets - 1) != 0:
        raise RuntimeError(f"could not start {sets - 1} process-set runtimes")
    try:
        buffer = torch.ones(1)
        latency(buffer, iters)  # warm-up: the name is negotiated once, then cached
        return idle_cpu(seconds), latency(buffer, iters)
    finally:
        IDLE.idle_runtimes_stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seconds, iters, repetitions = (1.0, 200, 1) if args.quick else (3.0, 1000, 3)
    samples = {sets: ([], []) for sets in SET_COUNTS}
    with session("process_set_threads"):
        set_horde(True)
        # Interleaved (1, 8, 8, 1, ...) so that a change in the machine's load hits both.
        for rep in range(repetitions):
            for sets in SET_COUNTS if rep % 2 == 0 else SET_COUNTS[::-1]:
                cpu, seconds_per_op = measure(sets, seconds, iters)
                samples[sets][0].append(cpu)
                samples[sets][1].append(seconds_per_op)
        set_horde(False)
    rows = [{"sets": sets, "cpu_per_s": statistics.median(cpus),
             "latency_s": statistics.median(latencies)}
            for sets, (cpus, latencies) in samples.items()]
    for r in rows:
        log(f"  {r['sets']} process set(s): idle {r['cpu_per_s'] * 100:.1f}% of a core, "
            f"4 B allreduce {r['latency_s'] * 1e6:.1f} us")
    save("process_set_threads", rows)


if __name__ == "__main__":
    main()
