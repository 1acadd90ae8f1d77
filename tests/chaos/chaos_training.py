"""Chaos test: training goes on through the failures a real job meets, and every rank
ends with the same parameters.

    HORDE_STALL_CHECK_TIME_SECONDS=2 HORDE_STALL_SHUTDOWN_TIME_SECONDS=1 \
        timeout 600 scripts/mpirun.sh -np 4 .venv/bin/python tests/chaos/chaos_training.py

A schedule drawn from one seed (the same on every rank) injects, at chosen steps:
- delay: one rank sleeps past the stall shutdown time before its step, so the others'
  reductions of that step fail (HordeInternalError), which they catch and go on;
- raise: one rank raises inside a caught block and skips its step (a failed step of its
  own: it counts it);
- fail: one rank alone cannot prepare one of its gradients inside the step (a failure
  injected where its compressor or an allocation would fail); every rank must then fail
  that step alike (the failing rank with its own error, the others with
  HordeInternalError naming it);
- restart: every rank calls shutdown() and init() again.

--optimizer picks the optimizer's mode: plain, groups, bucket_view, sparse (an
embedding with sparse gradients) or adasum (op=Adasum on a power-of-two rank count).

Each failed step applies no update anywhere, each reduction that completes gives every
rank the same averaged gradient, and a restart realigns the ranks; so whatever step each
rank's reductions paired with, every rank applies the same updates in the same order.
Ranks pair a name's submissions in order, and an operation that failed on some ranks
fails on the others when they submit it, so every rank fails the same number of steps:
a late rank's steps fail as the ones the others failed did, a rank that skipped a step
fails its next one, and a rank whose last steps have no partner sees them fail after the
loop. The script then checks, on every rank: the same number of failed steps on every
rank, identical parameters, no handle left in horde's tables, resident memory flat, and
that the schedule's failures were really seen. Any failed check exits non-zero.
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
    parser.add_argument("--fails", type=int, default=3)
    parser.add_argument("--optimizer", default="plain",
                        choices=["plain", "groups", "bucket_view", "sparse", "adasum"])
    return parser.parse_args()


def schedule(args, size):
    """step -> (event, rank): the same on every rank. Events are at least 10 steps apart
    and avoid the first and last 20 steps."""
    rng = random.Random(args.seed)
    kinds = (["delay"] * args.delays + ["raise"] * args.raises + ["restart"] * args.restarts +
             ["fail"] * args.fails)
    slots = rng.sample(range(2, (args.steps - 20) // 10), len(kinds))
    return {slot * 10: (kind, rng.randrange(size)) for slot, kind in zip(slots, kinds)}


def rss_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class InjectedFailure(RuntimeError):
    """What the rank chosen by a "fail" event raises from its step."""


class FlakyCompression:
    """Passes gradients through; raises once, on the rank that armed it, as an
    out-of-memory in that rank's compression would (Adasum's path)."""
    armed = False

    @classmethod
    def compress(cls, tensor):
        if cls.armed:
            cls.armed = False
            raise InjectedFailure("chaos: injected failure preparing a gradient")
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class Model(nn.Module):
    def __init__(self, sparse):
        super().__init__()
        self.embedding = nn.Embedding(32, 16, sparse=True) if sparse else None
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        if self.embedding is not None:
            x = x + self.embedding((x.abs() * 7).long() % 32).mean(1)
        return self.body(x)


def make_optimizer(model, mode):
    options = {"groups": {"num_groups": 2}, "bucket_view": {"gradient_as_bucket_view": True},
               "adasum": {"op": hvd.Adasum, "compression": FlakyCompression}}.get(mode, {})
    return hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                                    named_parameters=model.named_parameters(), **options)


def arm_failure(model, optimizer, mode, rng):
    """Makes this rank's next step fail while preparing one of its gradients."""
    if mode == "adasum":
        FlakyCompression.armed = True
    else:
        optimizer._reducer.fail_next_start(rng.randrange(len(list(model.parameters()))))


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
    model = Model(sparse=args.optimizer == "sparse")
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = make_optimizer(model, args.optimizer)
    generator = torch.Generator().manual_seed(1000 + rank)
    pick = random.Random(args.seed + 1)
    failures, injected_failures, baseline_rss = 0, 0, None
    for step in range(args.steps):
        kind, who = events.get(step, (None, None))
        if kind == "restart":
            hvd.shutdown()
            hvd.init()
        elif kind == "delay" and rank == who:
            time.sleep(delay_seconds)
        elif kind == "fail" and rank == who:
            arm_failure(model, optimizer, args.optimizer, pick)
        elif kind == "raise" and rank == who:
            try:
                raise RuntimeError(f"chaos: rank {rank} fails step {step}")
            except RuntimeError:
                failures += 1  # this rank's own failed step
                continue
        if step == 20:
            baseline_rss = rss_bytes()
        x = torch.randn(8, 16, generator=generator)
        optimizer.zero_grad()
        F.mse_loss(model(x), x[:, :4]).backward()
        try:
            optimizer.step()
        except (hvd.HordeInternalError, InjectedFailure) as e:
            failures += 1
            injected_failures += "injected" in str(e)
    meet_every_rank()
    params = [p.detach() for p in model.parameters()]
    every_rank = hvd.allgather_object(params)
    same = all(torch.equal(a, b) for other in every_rank for a, b in zip(every_rank[0], other))
    failures_by_rank = hvd.allgather_object(failures)
    total_failures = sum(failures_by_rank)
    total_injected = sum(hvd.allgather_object(injected_failures))
    handles = _handle_table_sizes()
    growth = rss_bytes() - baseline_rss
    print(f"rank {rank}: {args.optimizer}, steps {args.steps}, events {sorted(events.items())}, "
          f"failed steps {failures} (all ranks {total_failures}, injected {total_injected}), "
          f"identical parameters {same}, handles {handles}, RSS growth {growth / 2**20:.1f} MiB",
          flush=True)
    problems = []
    if not same:
        problems.append("parameters differ across ranks")
    if len(set(failures_by_rank)) > 1:
        problems.append(f"the ranks count different numbers of failed steps: {failures_by_rank}")
    if any(handles.values()):
        problems.append(f"handles left in horde's tables: {handles}")
    if growth > RSS_GROWTH_BOUND_BYTES:
        problems.append(f"resident memory grew by {growth / 2**20:.1f} MiB")
    expected_failures = any(kind in ("delay", "raise") for kind, _ in events.values()) and size > 1
    if expected_failures and total_failures == 0:
        problems.append("no step failed: the injected delays and raises had no effect")
    fail_events = sum(kind == "fail" for kind, _ in events.values())
    if total_injected != fail_events:
        problems.append(f"{total_injected} injected failures raised, expected {fail_events}")
    for problem in problems:
        print(f"rank {rank}: FAILED: {problem}", flush=True)
    hvd.shutdown()
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
