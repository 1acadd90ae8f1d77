"""Chaos test: training goes on through the failures a real job meets, and every rank
ends with the same parameters.

    HORDE_STALL_CHECK_TIME_SECONDS=2 HORDE_STALL_SHUTDOWN_TIME_SECONDS=1 \
        timeout 600 scripts/mpirun.sh -np 4 .venv/bin/python tests/chaos/chaos_training.py

A schedule drawn from one seed (the same on every rank) injects, at chosen steps:
- delay: one rank sleeps past the stall shutdown time before its step, so the others'
  reductions of that step fail (HordeInternalError), which they catch and go on;
- raise: one rank raises inside a caught block and skips its step;
- restart: every rank calls shutdown() and init() again.

Each failed step applies no update anywhere, each reduction that completes gives every
rank the same averaged gradient, and a restart realigns the ranks; so whatever step each
rank's reductions paired with, every rank applies the same updates in the same order.
After the loop, a rank whose last steps have no partner sees them fail. The script then
checks, on every rank: identical parameters, no handle left in horde's tables, resident
memory flat, and that the schedule's failures were really seen. Any failed check exits
non-zero.
"""

import argparse
import os
import random
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import horde.torch as hvd
from horde.torch.handles import _handle_table_sizes

# Growth of resident memory from the first restart-free stretch to the end. A leak of
# one gradient set per step (~20 KiB) over the run would exceed it several times over.
RSS_GROWTH_BOUND_BYTES = 16 << 20


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--delays", type=int, default=2)
    parser.add_argument("--raises", type=int, default=3)
    parser.add_argument("--restarts", type=int, default=1)
    return parser.parse_args()


def schedule(args, size):
    """step -> (event, rank): the same on every rank. Events are at least 10 steps apart
    and avoid the first and last 20 steps."""
    rng = random.Random(args.seed)
    kinds = ["delay"] * args.delays + ["raise"] * args.raises + ["restart"] * args.restarts
    slots = rng.sample(range(2, (args.steps - 20) // 10), len(kinds))
    return {slot * 10: (kind, rng.randrange(size)) for slot, kind in zip(slots, kinds)}


def rss_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def meet_every_rank():
    """Returns once every rank gets here. A rank whose last steps found no partner is
    still seeing them fail, one stall time each, so a plain barrier would stall too: this
    retries one named allreduce until all ranks have submitted it together."""
    while True:
        try:
            hvd.allreduce(torch.zeros(1), name="chaos.end")
            return
        except hvd.HordeInternalError:
            pass


def main():
    args = parse_args()
    stall_seconds = float(os.environ.get("HORDE_STALL_SHUTDOWN_TIME_SECONDS", "0"))
    check_seconds = float(os.environ.get("HORDE_STALL_CHECK_TIME_SECONDS", "60"))
    if stall_seconds <= 0:
        sys.exit("chaos_training.py: set HORDE_STALL_SHUTDOWN_TIME_SECONDS (e.g. 1), or a delayed "
                 "rank would hang the others")
    # Long enough that every reduction of the delayed step has failed on the other ranks
    # (cached ones go to the coordinator after half the check time; checks run each second).
    delay_seconds = check_seconds / 2 + stall_seconds + 3
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    events = schedule(args, size)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                                         named_parameters=model.named_parameters())
    generator = torch.Generator().manual_seed(1000 + rank)
    failures, baseline_rss = 0, None
    for step in range(args.steps):
        kind, who = events.get(step, (None, None))
        if kind == "restart":
            hvd.shutdown()
            hvd.init()
        elif kind == "delay" and rank == who:
            time.sleep(delay_seconds)
        elif kind == "raise" and rank == who:
            try:
                raise RuntimeError(f"chaos: rank {rank} fails step {step}")
            except RuntimeError:
                continue
        if step == 20:
            baseline_rss = rss_bytes()
        x = torch.randn(8, 16, generator=generator)
        optimizer.zero_grad()
        F.mse_loss(model(x), x[:, :4]).backward()
        try:
            optimizer.step()
        except hvd.HordeInternalError:
            failures += 1
    meet_every_rank()
    params = [p.detach() for p in model.parameters()]
    every_rank = hvd.allgather_object(params)
    same = all(torch.equal(a, b) for other in every_rank for a, b in zip(every_rank[0], other))
    total_failures = sum(hvd.allgather_object(failures))
    handles = _handle_table_sizes()
    growth = rss_bytes() - baseline_rss
    print(f"rank {rank}: steps {args.steps}, events {sorted(events.items())}, failed steps "
          f"{failures} (all ranks {total_failures}), identical parameters {same}, handles "
          f"{handles}, RSS growth {growth / 2**20:.1f} MiB", flush=True)
    problems = []
    if not same:
        problems.append("parameters differ across ranks")
    if any(handles.values()):
        problems.append(f"handles left in horde's tables: {handles}")
    if growth > RSS_GROWTH_BOUND_BYTES:
        problems.append(f"resident memory grew by {growth / 2**20:.1f} MiB")
    expected_failures = any(kind in ("delay", "raise") for kind, _ in events.values()) and size > 1
    if expected_failures and total_failures == 0:
        problems.append("no step failed: the injected delays and raises had no effect")
    for problem in problems:
        print(f"rank {rank}: FAILED: {problem}", flush=True)
    hvd.shutdown()
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
