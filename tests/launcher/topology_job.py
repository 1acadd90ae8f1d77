"""The collectives a topology plan moves onto spanning trees, checked against what they
must give: integer sums exact, float sums close to the float64 sum and the same bytes on
every rank and from call to call, Average, Min, float16, a fused set of tensors, a small
tensor (MPI's path) and a broadcast from every root. Each rank prints one line,
``rank N: result: {"check": true|false|value, ...}``; every collective has a time limit
(a rank that waits too long says so and exits 3).

Run by tests/python/test_topology.py (a link matrix file, one machine) and
tests/launcher/topology_netns_test.sh (measured links between network-namespace hosts).
"""

import hashlib
import json
import os
import threading

import torch

import horde.torch as hvd

BIG = 1 << 20  # elements: 4 MiB of float32 or int32


def say(line):
    os.write(1, f"rank {hvd.rank()}: {line}\n".encode())


def within(seconds, fn):
    done, result = threading.Event(), {}

    def run():
        try:
            result["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - raised below, in the caller's thread
            result["error"] = e
        done.set()

    threading.Thread(target=run, daemon=True).start()
    if not done.wait(seconds):
        say(f"hung: no result after {seconds} s")
        os._exit(3)
    if "error" in result:
        raise result["error"]
    return result["value"]


def digest(t):
    return hashlib.sha256(t.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()


def sums(rank, size):
    ints = torch.arange(BIG, dtype=torch.int32) * (rank + 1)
    got = within(60, lambda: hvd.allreduce(ints, op=hvd.Sum, name="ints"))
    expected = torch.arange(BIG, dtype=torch.int32) * (size * (size + 1) // 2)
    results = {"ints exact": bool(torch.equal(got, expected))}
    floats = torch.randn(BIG, generator=torch.Generator().manual_seed(rank))
    first = within(60, lambda: hvd.allreduce(floats, op=hvd.Sum, name="floats"))
    again = within(60, lambda: hvd.allreduce(floats, op=hvd.Sum, name="floats"))
    exact = sum(torch.randn(BIG, generator=torch.Generator().manual_seed(r)).double()
                for r in range(size))
    results["floats close"] = bool(torch.allclose(first.double(), exact, atol=1e-4))
    results["floats digest"] = digest(first)
    results["floats repeat"] = digest(again) == digest(first)
    return results


def other_ops(rank, size):
    avg = within(60, lambda: hvd.allreduce(torch.full((BIG,), float(rank)), op=hvd.Average))
    low = within(60, lambda: hvd.allreduce(torch.full((BIG,), rank + 5, dtype=torch.int64),
                                           op=hvd.Min))
    half = within(60, lambda: hvd.allreduce(torch.ones(BIG, dtype=torch.float16), op=hvd.Sum))
    small = within(60, lambda: hvd.allreduce(torch.tensor([float(rank)]), op=hvd.Sum))
    return {
        "average": bool(torch.equal(avg, torch.full((BIG,), (size - 1) / 2))),
        "min": bool(torch.equal(low, torch.full((BIG,), 5, dtype=torch.int64))),
        "float16": bool(torch.equal(half, torch.full((BIG,), float(size), dtype=torch.float16))),
        "small": small.item() == size * (size - 1) / 2,
    }


def fused(rank, size):
    parts = [torch.full((BIG // 8 + i,), float(rank + i)) for i in range(8)]
    handles = [hvd.allreduce_async(p, op=hvd.Sum, name=f"part.{i}") for i, p in enumerate(parts)]
    outs = within(60, lambda: [hvd.synchronize(h) for h in handles])
    expected = [torch.full_like(p, float(sum(r + i for r in range(size))))
                for i, p in enumerate(parts)]
    return {"fused": all(torch.equal(out, e) for out, e in zip(outs, expected))}


def broadcasts(rank, size):
    results = {}
    for root in range(size):
        expected = torch.arange(2 * BIG, dtype=torch.int32) + root
        sent = expected.clone() if rank == root else torch.zeros(2 * BIG, dtype=torch.int32)
        got = within(60, lambda: hvd.broadcast(sent, root_rank=root, name=f"bcast.{root}"))
        results[f"broadcast from {root}"] = bool(torch.equal(got, expected))
    return results


def main():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    results = {}
    for check in (sums, other_ops, fused, broadcasts):
        results.update(check(rank, size))
    say("result: " + json.dumps(results))
    hvd.shutdown()


if __name__ == "__main__":
    main()
