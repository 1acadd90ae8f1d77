"""Allreduce of GPU tensors, 4 B to 256 MiB, fused and unfused, against a device-to-device
copy of the same bytes, on the machine with a GPU:

    mpirun -np 1 python bench/gpu_allreduce_bandwidth.py            # NCCL
    HORDE_GPU_OPERATIONS=MPI mpirun -np 2 python bench/gpu_allreduce_bandwidth.py
                                                # two ranks sharing a GPU, host staging

Per size S: `unfused` reduces one float32 tensor of S bytes; `fused` reduces 16 tensors of
S/16 bytes each, submitted together, which horde fuses into one buffer (sizes under 64 B
have no fused row); `copy` is `y.copy_(x)` of S bytes on the same GPU. Each figure is the
median over 5 timed batches (a batch: between cuda.synchronize() calls, as many
iterations as fill about 50 ms, 3 to 200).

Reported: time per allreduce, the algorithm bandwidth (S / time) and NCCL's bus bandwidth
(algorithm bandwidth * 2(n-1)/n: 0 on one rank, where nothing crosses a link and the
algorithm bandwidth measures horde's overhead around NCCL's local copy), the copy's
bandwidth (S / time: it reads and writes each byte once) and allreduce time / copy time.
`--device cpu` runs the same loops on CPU tensors, to check the script without a GPU.
"""

import argparse
import json
import os
import statistics
import time

import torch

import horde.torch as hvd
import gpu_device

FUSED_PARTS = 16
BATCHES = 5


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device):
    """Seconds per call of fn: the median of BATCHES batches, each ~50 ms."""
    fn()
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    once = max(time.perf_counter() - start, 1e-6)
    # Every rank must run the same number of collectives: rank 0's count is used.
    iters = int(hvd.broadcast_object(min(200, max(3, int(0.05 / once))), root_rank=0))
    batches = []
    for _ in range(BATCHES):
        synchronize(device)
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        synchronize(device)
        batches.append((time.perf_counter() - start) / iters)
    return statistics.median(batches)


def allreduce_unfused(tensor, name):
    return lambda: hvd.allreduce_(tensor, op=hvd.Sum, name=name)


def allreduce_fused(parts, name):
    def run():
        handles = [hvd.allreduce_async_(p, op=hvd.Sum, name=f"{name}.{i}")
                   for i, p in enumerate(parts)]
        for handle in handles:
            hvd.synchronize(handle)
    return run


def measure(size_bytes, device, ranks):
    x = torch.ones(size_bytes // 4, device=device)
    y = torch.empty_like(x)
    copy_s = timed(lambda: y.copy_(x), device)
    rows = []
    modes = [("unfused", allreduce_unfused(x, f"bw.unfused.{size_bytes}"))]
    if size_bytes >= 4 * FUSED_PARTS:
        parts = list(torch.ones(size_bytes // 4, device=device).chunk(FUSED_PARTS))
        modes.append(("fused", allreduce_fused(parts, f"bw.fused.{size_bytes}")))
    for mode, fn in modes:
        seconds = timed(fn, device)
        algbw = size_bytes / seconds / 1e9
        rows.append({"bytes": size_bytes, "mode": mode, "allreduce_us": seconds * 1e6,
                     "algbw_gbs": algbw, "busbw_gbs": algbw * 2 * (ranks - 1) / ranks,
                     "copy_us": copy_s * 1e6, "copy_gbs": size_bytes / copy_s / 1e9,
                     "vs_copy": seconds / copy_s})
    return rows


def human(size_bytes):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size_bytes >= 1 << shift:
            return f"{size_bytes >> shift} {unit}"
    return f"{size_bytes} B"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-mib", type=int, default=256)
    gpu_device.add_device_option(parser)
    args = parser.parse_args()
    device, name = gpu_device.start(args.device)
    ranks = hvd.size()
    sizes = []
    size = 4
    while size <= args.max_mib << 20:
        sizes.append(size)
        size *= 4
    if hvd.rank() == 0:
        print(f"{name}, {ranks} rank(s), "
              f"HORDE_GPU_OPERATIONS={os.environ.get('HORDE_GPU_OPERATIONS', 'NCCL')}")
        print(f"{'size':>9} {'mode':>8} {'allreduce':>12} {'algbw GB/s':>11} "
              f"{'copy':>10} {'copy GB/s':>10} {'x copy':>8}")
    for size in sizes:
        for row in measure(size, device, ranks):
            if hvd.rank() == 0:
                print(f"{human(size):>9} {row['mode']:>8} {row['allreduce_us']:>9.1f} us "
                      f"{row['algbw_gbs']:>11.2f} {row['copy_us']:>7.1f} us "
                      f"{row['copy_gbs']:>10.1f} {row['vs_copy']:>8.1f}")
                print(json.dumps({"device": name, "ranks": ranks, **row}), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
