"""Elastic training of the digits CNN: the job survives killed ranks and grows when
hosts are added. A Horovod elastic script: only the import line differs.

    printf '#!/bin/sh\necho localhost:3\n' > discover.sh && chmod +x discover.sh
    .venv/bin/horderun -np 3 --min-np 2 --max-np 4 --host-discovery-script ./discover.sh \
        .venv/bin/python examples/pytorch_elastic_digits.py

Kill one rank (`kill -9 PID`, PIDs are printed at each start): horderun restarts the job
with the ranks left, which resume from the last commit. See docs/elastic.md.
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F

import horde.torch as hvd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_digits import DigitsNet, load_split  # noqa: E402

BASE_LR = 0.05


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--commit-every", type=int, default=5, help="batches between commits")
    args = parser.parse_args()
    hvd.init()
    torch.manual_seed(0)
    (train_x, train_y), (test_x, test_y) = load_split()
    dataset = torch.utils.data.TensorDataset(train_x, train_y)
    model = DigitsNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=BASE_LR * hvd.size(), momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=0)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, batch=0)

    def on_reset():  # after a reset: the learning rate follows the number of ranks
        for group in optimizer.param_groups:
            group["lr"] = BASE_LR * hvd.size()
    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state):
        print(f"rank {hvd.rank()} of {hvd.size()} (pid {os.getpid()}) starts at epoch "
              f"{state.epoch}, batch {state.batch}", flush=True)
        while state.epoch < args.epochs:
            for batch_idx, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                F.cross_entropy(model(x), y).backward()
                optimizer.step()
                state.sampler.record_batch(batch_idx, args.batch_size)
                state.batch += 1
                if state.batch % args.commit_every == 0:
                    state.commit()
            if hvd.rank() == 0:
                accuracy = (model(test_x).argmax(1) == test_y).float().mean().item()
                print(f"epoch {state.epoch}: {hvd.size()} ranks, held-out accuracy "
                      f"{100 * accuracy:.1f}%", flush=True)
            state.epoch += 1
            state.batch = 0
            state.sampler.set_epoch(state.epoch)
            state.commit()

    train(state)
    if hvd.rank() == 0:
        accuracy = (model(test_x).argmax(1) == test_y).float().mean().item()
        print(f"final held-out accuracy {100 * accuracy:.1f}% on {hvd.size()} ranks", flush=True)


if __name__ == "__main__":
    main()
