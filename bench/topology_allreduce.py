"""Allreduce over the links a job has: raw MPI_Allreduce against horde's hvd.allreduce_.

Run under horderun on several hosts, one rank each (bench/topology.sh runs it on the link
test bed, scripts/link_testbed.sh):

  horderun -np N -H ... python bench/topology_allreduce.py [--sizes-mib 1,4,16,64]
      [--repeat 3] [--json FILE] [--build-dir DIR]

Every rank allreduces (op Sum, in place) one float32 tensor per size, with raw
MPI_Allreduce (bench/native/mpi_bench.cc, loaded with ctypes) and with horde
(`hvd.allreduce_`, named, so every timed call after the warm-up is a response-cache hit).
horde runs with the HORDE_* settings the job has (HORDE_TOPOLOGY among them). One round
times every size with one contender, then every size with the other (the order flips each
round; horde is stopped while MPI is timed, as bench/harness.py does); a warm-up round
first, then --repeat rounds. A call is timed from a barrier to the slowest rank's end;
the figure is the best round. Rank 0 prints a markdown table (size, MPI ms, horde ms,
horde / MPI) and, with --json, writes the rows.

The native libraries are in --build-dir (default build/bench of this checkout; bench/run.sh
and bench/topology.sh build them).
"""

import argparse
import json
import os
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes-mib", default="1,4,16,64",
                        help="comma-separated tensor sizes in MiB (default 1,4,16,64)")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (best kept)")
    parser.add_argument("--json", metavar="FILE", help="rank 0 writes the rows here")
    parser.add_argument("--build-dir", default=os.path.join(HERE, "..", "build", "bench"),
                        help="where libmpi_bench.so and libhorde_cpp_bench.so are")
    args = parser.parse_args()
    args.sizes = [float(s) for s in args.sizes_mib.split(",") if s]
    return args


ARGS = parse_args()
# horderun forwards only PATH, PYTHONPATH and HORDE_*-like variables: the harness learns
# where the libraries are from here.
os.environ["BENCH_BUILD_DIR"] = os.path.abspath(ARGS.build_dir)
sys.path.insert(0, HERE)

import torch  # noqa: E402

import horde.torch as hvd  # noqa: E402
from harness import MPI, RANK, SIZE, log, pointer, set_horde, timed  # noqa: E402


def check_sums(count):
    """Both contenders sum right: every rank gives rank + 1."""
    expected = SIZE * (SIZE + 1) / 2
    tensor = torch.full((count,), float(RANK + 1))
    MPI.mpi_allreduce_loop(pointer(tensor), count, 1)
    if not bool((tensor == expected).all()):
        raise SystemExit(f"rank {RANK}: MPI_Allreduce gave {tensor[0].item()}, not {expected}")
    set_horde(True)
    tensor.fill_(RANK + 1)
    hvd.allreduce_(tensor, op=hvd.Sum, name="topology.check")
    if not bool((tensor == expected).all()):
        raise SystemExit(f"rank {RANK}: hvd.allreduce_ gave {tensor[0].item()}, not {expected}")


def main():
    sizes = [(mib, max(1, int(mib * (1 << 20)) // 4)) for mib in ARGS.sizes]
    # Zeros: sums stay zero however often they repeat (no overflow, no denormals).
    tensors = {count: torch.zeros(count) for _, count in sizes}
    contenders = {
        "mpi": (False, lambda t: MPI.mpi_allreduce_loop(pointer(t), t.numel(), 1)),
        "horde": (True, lambda t: hvd.allreduce_(t, op=hvd.Sum, name=f"topology.{t.numel()}")),
    }
    check_sums(max(count for _, count in sizes))
    log(f"# {SIZE} ranks on {socket.gethostname()} and others; HORDE_TOPOLOGY="
        f"{os.environ.get('HORDE_TOPOLOGY', '(unset)')}; best of {ARGS.repeat} after a warm-up")
    best = {(name, count): float("inf") for name in contenders for _, count in sizes}
    order = list(contenders)
    for round_ in range(1 + ARGS.repeat):
        for name in order if round_ % 2 == 0 else order[::-1]:
            needs_horde, run = contenders[name]
            set_horde(needs_horde)
            for _, count in sizes:
                tensor = tensors[count]
                wall, _ = timed(lambda: run(tensor))
                if round_ > 0:
                    best[name, count] = min(best[name, count], wall)
    set_horde(False)

    rows = [{"size_mib": mib, "bytes": count * 4, "mpi_ms": best["mpi", count] * 1e3,
             "horde_ms": best["horde", count] * 1e3} for mib, count in sizes]
    log("| size | MPI_Allreduce ms | horde ms | horde / MPI |")
    log("| ---: | ---: | ---: | ---: |")
    for row in rows:
        log(f"| {row['size_mib']:g} MiB | {row['mpi_ms']:.1f} | {row['horde_ms']:.1f} | "
            f"{row['horde_ms'] / row['mpi_ms']:.2f} |")
    if ARGS.json and RANK == 0:
        with open(ARGS.json, "w") as f:
            json.dump({"ranks": SIZE, "horde_topology": os.environ.get("HORDE_TOPOLOGY"),
                       "repeat": ARGS.repeat, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    if MPI.bench_mpi_init() < 2:  # MPI_THREAD_SERIALIZED
        raise SystemExit("MPI does not provide MPI_THREAD_SERIALIZED, which horde needs")
    # The hosts of a test bed share the machine's cores: one thread a rank.
    torch.set_num_threads(1)
    try:
        main()
    finally:
        set_horde(False)
        MPI.bench_mpi_finalize()
