"""Data-parallel training with horde's collectives, on any number of ranks.

Every rank holds its own shard of a synthetic regression problem (y = X w* + noise),
computes the gradient of its shard's loss, and averages gradients across ranks with
hvd.allreduce before each step, so all ranks follow the same trajectory as one process
training on the whole data set. Rank 0 reports the loss and how close the learned
weights come to w*.

    .venv/bin/horderun -np 2 .venv/bin/python examples/pytorch_linear_regression.py
"""

import argparse

import torch

import horde.torch as hvd


def make_shard(rank, size, samples, features):
    """The whole data set is generated from a fixed seed; each rank keeps every size-th row."""
    generator = torch.Generator().manual_seed(0)
    true_weights = torch.randn(features, 1, generator=generator)
    inputs = torch.randn(samples, features, generator=generator)
    targets = inputs @ true_weights + 0.01 * torch.randn(samples, 1, generator=generator)
    return inputs[rank::size], targets[rank::size], true_weights


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    hvd.init()
    inputs, targets, true_weights = make_shard(hvd.rank(), hvd.size(), args.samples, args.features)

    model = torch.nn.Linear(args.features, 1, bias=False)
    # Start every rank from rank 0's initial weights.
    with torch.no_grad():
        hvd.broadcast_(model.weight, root_rank=0)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)

    for step in range(args.steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        for name, parameter in model.named_parameters():
            hvd.allreduce_(parameter.grad, op=hvd.Average, name=f"grad.{name}")
        optimizer.step()
        global_loss = hvd.allreduce(loss.detach(), op=hvd.Average, name="loss")
        if hvd.rank() == 0 and (step % 50 == 0 or step == args.steps - 1):
            print(f"step {step:4d}  loss {global_loss.item():.6f}")

    weight_error = (model.weight.detach().t() - true_weights).abs().max().item()
    # Every rank must hold the same weights: gather them and compare.
    all_weights = hvd.allgather(model.weight.detach())
    in_sync = all(torch.equal(w, all_weights[0]) for w in all_weights)
    if hvd.rank() == 0:
        print(f"trained on {hvd.size()} rank(s): max |w - w*| = {weight_error:.4f}, "
              f"weights identical on all ranks: {in_sync}")
        stats = hvd.runtime_stats()
        print(f"horde ran {stats['responses_executed']} collectives in "
              f"{stats['negotiation_rounds']} negotiation rounds")
    hvd.shutdown()


if __name__ == "__main__":
    main()
