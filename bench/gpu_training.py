"""One training step on the GPU, plain against hvd.DistributedOptimizer, on one rank:

    mpirun -np 1 python bench/gpu_training.py [--model resnet50|transformer]

Synthetic data (random images, or random tokens for the 12-layer nn.TransformerEncoder of
bench/training.py), SGD with momentum, the same model and batch for both contenders.
Prints, as text and as JSON lines:

- `step`: median time per step of each contender over interleaved timed batches (each
  between cuda.synchronize() calls), and the overhead 1 - t_plain / t_horde;
- `timeline`: where horde's part of the time goes, from a timeline of the horde steps
  (horde.timeline's summary);
- `cuda_calls`: the CUDA runtime calls of three steps of each contender, from
  torch.profiler (all threads, horde's background and finalizer threads included), and
  the NCCL kernels; a device-wide synchronize (cudaDeviceSynchronize) on the hot path
  would show here beyond the profiler's own one;
- `memory`: GPU memory (torch's allocated bytes and the device's free bytes) before and
  after --leak-steps more horde steps.

`--device cpu` runs the same (without the profiler's CUDA part), to check the script
without a GPU.
"""

import argparse
import collections
import json
import os
import statistics
import tempfile
import time

import torch
import torch.nn.functional as F

import horde.torch as hvd
import gpu_device
from horde.timeline.summary import format_summary, summarize
from synthetic_models import synthetic_data


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_model(args, device):
    torch.manual_seed(0)
    make, inputs, labels = synthetic_data(args)
    return make().to(device), inputs.to(device), labels.to(device)


def stepper(model, optimizer, inputs, labels):
    def run(steps):
        for _ in range(steps):
            optimizer.zero_grad()
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()
    return run


def interleaved(runners, steps, repetitions, device):
    """Median seconds per step of each runner; the order alternates between repetitions."""
    times = collections.defaultdict(list)
    order = list(runners)
    for _ in range(repetitions):
        for name in order:
            synchronize(device)
            start = time.perf_counter()
            runners[name](steps)
            synchronize(device)
            times[name].append((time.perf_counter() - start) / steps)
        order.reverse()
    return {name: statistics.median(values) for name, values in times.items()}


def cuda_calls(run):
    """Counts of the CUDA runtime calls and NCCL kernels while run() executes (torch.profiler
    synchronizes the device once as it stops: one cudaDeviceSynchronize is its own)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run()
    counts = collections.Counter()
    for event in prof.events():
        if event.name.startswith("cuda") and event.name[4:5].isupper():
            counts[event.name] += 1
        elif "nccl" in event.name.lower():
            counts["nccl kernels"] += 1
    return counts


def memory(device):
    if device.type != "cuda":
        return {}
    synchronize(device)
    free, total = torch.cuda.mem_get_info(device)
    return {"allocated_bytes": torch.cuda.memory_allocated(device), "device_free_bytes": free}


def report(key, value):
    print(json.dumps({key: value}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet50", help="a torchvision model, or transformer")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--sequence-length", type=int, default=128, help="transformer only")
    parser.add_argument("--steps", type=int, default=10, help="per timed batch")
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--leak-steps", type=int, default=1000)
    gpu_device.add_device_option(parser)
    args = parser.parse_args()
    device, name = gpu_device.start(args.device)

    plain, inputs, labels = make_model(args, device)
    plain_step = stepper(plain, torch.optim.SGD(plain.parameters(), lr=0.01, momentum=0.9),
                         inputs, labels)
    model, _, _ = make_model(args, device)
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
        named_parameters=model.named_parameters())
    horde_step = stepper(model, optimizer, inputs, labels)
    plain_step(3)
    horde_step(3)

    step = interleaved({"plain": plain_step, "horde": horde_step}, args.steps,
                       args.repetitions, device)
    step_row = {"device": name, "model": args.model, "batch_size": args.batch_size,
                "ranks": hvd.size(), "plain_ms": step["plain"] * 1e3,
                "horde_ms": step["horde"] * 1e3,
                "overhead": 1 - step["plain"] / step["horde"]}
    print(f"{name}, {args.model}, batch {args.batch_size}: plain {step_row['plain_ms']:.2f} ms, "
          f"DistributedOptimizer {step_row['horde_ms']:.2f} ms per step, overhead "
          f"{step_row['overhead'] * 100:.1f}%")
    report("step", step_row)

    timeline = os.path.join(tempfile.mkdtemp(prefix="horde-gpu-timeline-"), "rank{rank}.json")
    hvd.start_timeline(timeline)
    horde_step(args.steps)
    synchronize(device)
    hvd.stop_timeline()
    if hvd.rank() == 0:
        print(f"\ntimeline of {args.steps} horde steps:")
        print(format_summary(summarize(timeline.format(rank=0))))

    if device.type == "cuda":
        calls = {"plain": cuda_calls(lambda: plain_step(3)),
                 "horde": cuda_calls(lambda: horde_step(3))}
        print("\nCUDA runtime calls and NCCL kernels in 3 steps:        plain    horde")
        for call in sorted(set(calls["plain"]) | set(calls["horde"])):
            print(f"  {call:<48} {calls['plain'][call]:>7} {calls['horde'][call]:>8}")
        report("cuda_calls", {k: dict(v) for k, v in calls.items()})

    before = memory(device)
    start = time.perf_counter()
    horde_step(args.leak_steps)
    synchronize(device)
    seconds = time.perf_counter() - start
    after = memory(device)
    print(f"\n{args.leak_steps} more horde steps in {seconds:.1f} s; memory before {before}, "
          f"after {after}")
    report("memory", {"steps": args.leak_steps, "before": before, "after": after})
    hvd.shutdown()


if __name__ == "__main__":
    main()
