"""Part 1: allreduce latency and bus bandwidth of one float32 tensor (op Sum), 4 B to
64 MiB, for raw MPI, horde from Python and from C++, and torch.distributed over gloo.

horde's calls are unnamed, as most scripts' are: horde numbers them, so each is new to
the response cache and is negotiated in full (as in Horovod). Up to 1 KiB the same loops
also run named (every call after the first a cache hit: one bit per round), to show what
the full negotiation costs."""

import argparse

import torch
import torch.distributed as dist

import horde.torch as hvd
from harness import HORDE_CPP, MPI, Contender, interleave, log, pointer, save, session

FULL_SIZES = [4 * 4**k for k in range(13)]  # 4 B ... 64 MiB
QUICK_SIZES = FULL_SIZES[::3]               # 4 B, 256 B, 16 KiB, 1 MiB, 64 MiB


def repetitions(nbytes, quick):
    """Small messages are cheap and their latency noisy (thread wake-ups): more samples."""
    if nbytes <= 64 << 10:
        return 5 if quick else 15
    return 3 if quick else 7


def iterations(nbytes):
    """Enough calls per timed batch that small messages are not lost in timer noise."""
    return max(2, min(200, (8 << 20) // nbytes))


NAMED_UP_TO = 1 << 10  # bytes: the sizes that also run named


def contenders(tensor, iters):
    count = tensor.numel()

    def horde_python(name=None):
        for _ in range(iters):
            hvd.allreduce_(tensor, op=hvd.Sum, name=name)

    def horde_cpp(name=b""):
        HORDE_CPP.horde_cpp_allreduce_loop(pointer(tensor), count, iters, name)

    def gloo():
        for _ in range(iters):
            dist.all_reduce(tensor)

    named = [
        Contender("horde_named", lambda: horde_python("bench.latency"), needs_horde=True),
        Contender("horde_cpp_named", lambda: horde_cpp(b"bench.latency"), needs_horde=True),
    ] if tensor.numel() * tensor.element_size() <= NAMED_UP_TO else []
    return [
        Contender("mpi", lambda: MPI.mpi_allreduce_loop(pointer(tensor), count, iters)),
        Contender("horde", horde_python, needs_horde=True),
        Contender("horde_cpp", horde_cpp, needs_horde=True),
        *named,
        Contender("gloo", gloo),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rows = []
    with session("allreduce_sweep"):
        for nbytes in QUICK_SIZES if args.quick else FULL_SIZES:
            # Zeros stay zeros under Sum, so repeated reductions never overflow.
            tensor = torch.zeros(nbytes // 4)
            iters = iterations(nbytes)
            medians, _ = interleave(contenders(tensor, iters), repetitions(nbytes, args.quick))
            row = {"bytes": nbytes, **{k: v / iters for k, v in medians.items()}}
            rows.append(row)
            log(f"  allreduce {nbytes:>9} B: " +
                ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in row.items() if k != "bytes"))
    save("allreduce_sweep", rows)


if __name__ == "__main__":
    main()
