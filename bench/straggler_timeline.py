"""Where a step's time goes when one rank is slow, from every rank's timeline.

Trains resnet18 on random images (as examples/pytorch_synthetic_benchmark.py does) with
hvd.DistributedOptimizer, twice: first with every rank computing alike, then with one
rank sleeping before every step (a straggler). Each run records one timeline per rank
(HORDE_TIMELINE's {rank} form, through hvd.start_timeline); rank 0 then prints the
summary tool's side-by-side split of the four files, the waiting and protocol time per
step, and the straggler report. Run it with 2 or more ranks:

    .venv/bin/horderun -np 2 .venv/bin/python bench/straggler_timeline.py [--png split.png]
"""

import argparse
import os
import tempfile
import time

import torch
import torch.nn.functional as F
import torchvision

import horde.torch as hvd
from horde.timeline.chart import save_comparison_chart
from horde.timeline.summary import WAITING, format_comparison, format_stragglers, summarize


def train(model, optimizer, images, labels, steps, sleep_seconds):
    for _ in range(steps):
        time.sleep(sleep_seconds)
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--sleep-ms", type=float, default=100, help="the slow rank's sleep")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--png", help="also save the side-by-side chart here")
    args = parser.parse_args()
    hvd.init()
    torch.manual_seed(0)
    model = torchvision.models.resnet18()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                         named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
    labels = torch.randint(0, 1000, (args.batch_size,))
    train(model, optimizer, images, labels, 3, 0.0)  # warm-up, not recorded

    directory = hvd.broadcast_object(tempfile.mkdtemp(prefix="horde-straggler-"), root_rank=0)
    slow = hvd.size() - 1
    runs = {"even": 0.0, "straggler": args.sleep_ms / 1000}
    for run, sleep in runs.items():
        hvd.start_timeline(os.path.join(directory, f"{run}-rank{{rank}}.json"))
        train(model, optimizer, images, labels, args.steps, sleep if hvd.rank() == slow else 0.0)
        hvd.stop_timeline()
    hvd.barrier()
    if hvd.rank() != 0:
        return
    summaries = [summarize(os.path.join(directory, f"{run}-rank{rank}.json"))
                 for run in runs for rank in range(hvd.size())]
    print(f"resnet18, {hvd.size()} ranks, {args.steps} steps per run; in the straggler run "
          f"rank {slow} sleeps {args.sleep_ms:g} ms before every step\n")
    print(format_comparison(summaries))
    print("\nper step (ms):  waiting for other ranks   negotiation protocol")
    for summary in summaries:
        print(f"  {os.path.basename(summary.path):<24}"
              f"{summary.by_category_ms[WAITING] / args.steps:12.2f}"
              f"{summary.by_category_ms['negotiation protocol'] / args.steps:22.2f}")
    print("\nthe straggler run, " + "\n".join(format_stragglers(summaries[-1].straggler_reports)))
    if args.png:
        save_comparison_chart(summaries, args.png)
        print(f"\nchart saved to {args.png}")


if __name__ == "__main__":
    main()
