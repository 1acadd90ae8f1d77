"""Allreduce bandwidth of 64 MiB on the GPU (NCCL, horde's runtime stream) against a plain
torch.cuda device-to-device copy of the same bytes, on the machine with a GPU:

    mpirun -np 1 python bench/gpu_allreduce_bandwidth.py [--mib 64] [--iters 50]

Reports, per rank count n, the algorithm bandwidth (bytes / time) and NCCL's bus bandwidth
(algorithm bandwidth * 2(n-1)/n, which is 0 on one GPU by definition: nothing crosses a
link; the algorithm bandwidth then measures horde's overhead around NCCL's local copy).
The copy's bandwidth is bytes / time too (it reads and writes each byte once).
"""

import argparse
import json
import time

import torch

import horde.torch as hvd


def timed(fn, iters):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--iters", type=int, default=50)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no GPU visible: torch.cuda.is_available() is False")
    hvd.init()
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    nbytes = args.mib << 20
    x = torch.ones(nbytes // 4, device="cuda")
    y = torch.empty_like(x)
    n = hvd.size()

    seconds = timed(lambda: hvd.allreduce_(x, op=hvd.Sum, name="bench.allreduce"), args.iters)
    copy_seconds = timed(lambda: y.copy_(x), args.iters)
    if hvd.rank() == 0:
        algbw = nbytes / seconds / 1e9
        print(json.dumps({
            "device": torch.cuda.get_device_name(), "ranks": n, "mib": args.mib,
            "allreduce_ms": seconds * 1e3, "allreduce_algbw_gbs": algbw,
            "allreduce_busbw_gbs": algbw * 2 * (n - 1) / n,
            "d2d_copy_ms": copy_seconds * 1e3, "d2d_copy_gbs": nbytes / copy_seconds / 1e9,
        }))


if __name__ == "__main__":
    main()
