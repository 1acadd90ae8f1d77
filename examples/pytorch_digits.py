"""Data-parallel training of a small CNN on scikit-learn's digits data set.

The 8x8 digit images ship offline with Debian's python3-sklearn. Every rank trains on
its own shard of the training split; hvd.DistributedOptimizer averages gradients across
ranks, so the job trains like one process on the global batch. The learning rate is
scaled by the number of ranks, with a linear warmup over the first epoch. Rank 0 prints
the loss and held-out accuracy per epoch and saves the checkpoint.

    .venv/bin/horderun -np 2 .venv/bin/python examples/pytorch_digits.py
"""

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits

import horde.torch as hvd


class DigitsNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def load_split(seed=0, test_fraction=0.2):
    """The digits images scaled to [0, 1] as (N, 1, 8, 8), split into train and test."""
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    test_count = int(len(labels) * test_fraction)
    test, train = order[:test_count], order[test_count:]
    return (images[train], labels[train]), (images[test], labels[test])


def average_across_ranks(value, name):
    return hvd.allreduce(torch.tensor(value), op=hvd.Average, name=name).item()


def evaluate(model, images, labels):
    """Accuracy over the whole test split: each rank counts its shard; the counts are summed."""
    model.eval()
    with torch.no_grad():
        correct = (model(images).argmax(1) == labels).sum()
    counts = torch.stack([correct.double(), torch.tensor(len(labels), dtype=torch.float64)])
    totals = hvd.allreduce(counts, op=hvd.Sum, name="eval.totals")
    model.train()
    return (totals[0] / totals[1]).item()


def main():
    parser = argparse.ArgumentParser(description="Train a CNN on the digits data set with horde.")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.03, help="for one rank; scaled by size()")
    parser.add_argument("--checkpoint", default="digits_checkpoint.pt")
    args = parser.parse_args()

    hvd.init()
    torch.manual_seed(hvd.rank())  # different initial weights per rank: the broadcast fixes that
    (train_x, train_y), (test_x, test_y) = load_split()
    shard_x, shard_y = train_x[hvd.rank()::hvd.size()], train_y[hvd.rank()::hvd.size()]
    test_x, test_y = test_x[hvd.rank()::hvd.size()], test_y[hvd.rank()::hvd.size()]

    model = DigitsNet()
    base_lr = args.lr * hvd.size()
    optimizer = torch.optim.SGD(model.parameters(), lr=base_lr, momentum=0.9)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

    steps_per_epoch = (len(shard_y) + args.batch_size - 1) // args.batch_size
    generator = torch.Generator().manual_seed(1234 + hvd.rank())
    for epoch in range(args.epochs):
        order = torch.randperm(len(shard_y), generator=generator)
        epoch_loss = 0.0
        for step in range(steps_per_epoch):
            if epoch == 0:  # linear warmup to the scaled learning rate
                for group in optimizer.param_groups:
                    group["lr"] = base_lr * (step + 1) / steps_per_epoch
            batch = order[step * args.batch_size:(step + 1) * args.batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(shard_x[batch]), shard_y[batch])
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item()
        loss = average_across_ranks(epoch_loss / steps_per_epoch, name=f"epoch{epoch}.loss")
        accuracy = evaluate(model, test_x, test_y)
        if hvd.rank() == 0:
            print(f"epoch {epoch + 1:2d}  loss {loss:.4f}  held-out accuracy {accuracy:.2%}",
                  flush=True)

    if hvd.rank() == 0:
        directory = os.path.dirname(os.path.abspath(args.checkpoint))
        os.makedirs(directory, exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "epochs": args.epochs}, args.checkpoint)
        print(f"final held-out accuracy {accuracy:.2%} on {hvd.size()} rank(s); "
              f"checkpoint saved to {args.checkpoint}")


if __name__ == "__main__":
    main()
