"""Part 4: what an initialized but idle horde costs: CPU seconds the process uses (all
its threads, from getrusage) while the main thread sleeps, with horde stopped, running
with the default 1 ms cycle, and running with a 10 ms cycle; and the negotiation rounds
it ran meanwhile."""

import argparse
import time

import horde.torch as hvd
from harness import MPI, cpu_seconds, log, save, session, set_horde


def idle(seconds, cycle_ms):
    """CPU seconds per wall second on the busiest rank, and rounds per second."""
    running = cycle_ms is not None
    set_horde(running, {"HORDE_CYCLE_TIME": str(cycle_ms)})
    MPI.bench_barrier()
    cpu, wall = cpu_seconds(), time.perf_counter()
    time.sleep(seconds)
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    rounds = hvd.runtime_stats()["negotiation_rounds"] if running else 0
    set_horde(False)
    return {"cycle_ms": cycle_ms, "cpu_per_s": MPI.bench_max(cpu / wall),
            "rounds_per_s": rounds / wall}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seconds = 1.0 if args.quick else 3.0
    with session("idle_cost"):
        rows = [idle(seconds, cycle) for cycle in (None, 1, 10)]
    for r in rows:
        log(f"  idle, cycle {r['cycle_ms']} ms: {r['cpu_per_s'] * 100:.1f}% of a core, "
            f"{r['rounds_per_s']:.0f} rounds/s")
    save("idle_cost", rows)


if __name__ == "__main__":
    main()
