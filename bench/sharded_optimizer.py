"""ShardedOptimizer (stages 1 and 2) against DistributedOptimizer and torch's
ZeroRedundancyOptimizer (with DistributedDataParallel over gloo), all with Adam, on the
models of training.py (--model resnet50, transformer, ...): per contender, the median step
time over interleaved batches (bench/harness.py), and what a rank holds between steps
(after step()): bytes of optimizer state and of gradients.

    scripts/mpirun.sh -np 2 --bind-to none .venv/bin/python bench/sharded_optimizer.py \\
        --model transformer   (BENCH_RENDEZVOUS_DIR set to a fresh directory)
"""

import argparse

import torch
import torch.nn.functional as F
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel

import horde.torch as hvd
from harness import SIZE, Contender, interleave, log, save, session
from synthetic_models import synthetic_data

LR, DECAY = 1e-4, 0.01


def adam(params):
    return torch.optim.Adam(params, lr=LR, weight_decay=DECAY)


def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors if torch.is_tensor(t))


class Trainer:
    """One contender's model and optimizer, made on its first step (horde runs then)."""

    def __init__(self, make_model, make_optimizer, state_of, grads_of, data, steps):
        self.make_model, self.make_optimizer = make_model, make_optimizer
        self.state_of, self.grads_of = state_of, grads_of
        self.inputs, self.labels = data
        self.steps = steps
        self.model = self.optimizer = None

    def run(self):
        if self.optimizer is None:
            torch.manual_seed(0)
            self.model = self.make_model()
            self.optimizer = self.make_optimizer(self.model)
        for _ in range(self.steps):
            self.optimizer.zero_grad()
            F.cross_entropy(self.model(self.inputs), self.labels).backward()
            self.optimizer.step()
        # An overlapped allgather still in flight is this contender's, not the next one's.
        getattr(self.optimizer, "wait_for_parameters", lambda: None)()

    def held(self):
        """(state bytes, gradient bytes) this rank holds now."""
        state = self.state_of(self.optimizer)
        return (tensor_bytes(v for s in state.values() for v in s.values()),
                tensor_bytes(self.grads_of(self.model, self.optimizer)))


def model_grads(model, optimizer):
    return [p.grad for p in model.parameters()]


def sharded_grads(model, optimizer):
    """The model's (whole, stage 1) gradients, the slices' reduced ones and the gradient
    buckets kept between steps (stage 1)."""
    return (model_grads(model, optimizer) +
            [p.grad for g in optimizer.param_groups for p in g["params"]] +
            optimizer._shards.held_buffers())


def trainers(args):
    make, inputs, labels = synthetic_data(args)
    data = (inputs, labels)

    def horde_trainer(wrap):
        return Trainer(make, lambda m: wrap(m, adam(m.parameters())), lambda o: o.state,
                       sharded_grads if wrap is not distributed else model_grads, data,
                       args.steps)

    def distributed(model, optimizer):
        return hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

    def sharded(stage, overlap=False):
        return lambda model, optimizer: hvd.ShardedOptimizer(
            optimizer, named_parameters=model.named_parameters(), stage=stage,
            overlap_allgather=overlap)

    zero = Trainer(lambda: DistributedDataParallel(make()),
                   lambda m: ZeroRedundancyOptimizer(m.parameters(),
                                                     optimizer_class=torch.optim.Adam,
                                                     lr=LR, weight_decay=DECAY),
                   lambda o: o.optim.state, model_grads, data, args.steps)
    return {
        "horde DistributedOptimizer": (horde_trainer(distributed), True),
        "horde ShardedOptimizer stage 1": (horde_trainer(sharded(1)), True),
        "horde ShardedOptimizer stage 2": (horde_trainer(sharded(2)), True),
        "horde ShardedOptimizer stage 2, overlap_allgather": (
            horde_trainer(sharded(2, overlap=True)), True),
        "torch ZeroRedundancyOptimizer (DDP, gloo)": (zero, False),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--model", default="transformer",
                        help="a torchvision model name, or transformer")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--sequence-length", type=int, default=32, help="transformer only")
    parser.add_argument("--batch-size", type=int, default=4, help="per rank")
    parser.add_argument("--steps", type=int, help="per timed batch (default 3, quick 2)")
    args = parser.parse_args()
    repetitions = 2 if args.quick else 5
    args.steps = args.steps or (2 if args.quick else 3)
    with session("sharded_optimizer"):
        contenders = trainers(args)
        walls, _ = interleave([Contender(name, trainer.run, needs_horde=horde)
                               for name, (trainer, horde) in contenders.items()], repetitions)
        held = {name: trainer.held() for name, (trainer, _) in contenders.items()}
    base = walls["horde DistributedOptimizer"]
    log(f"| {args.model}, Adam, {SIZE} ranks | step ms | vs DistributedOptimizer "
        "| optimizer state MiB a rank | gradients MiB a rank |")
    log("| --- | ---: | ---: | ---: | ---: |")
    rows = []
    for name, wall in walls.items():
        state, grads = held[name]
        log(f"| {name} | {wall / args.steps * 1e3:.0f} | {wall / base:.2f} | "
            f"{state / 2**20:.1f} | {grads / 2**20:.1f} |")
        rows.append({"model": args.model, "contender": name, "step_s": wall / args.steps,
                     "state_bytes": state, "gradient_bytes": grads})
    save("sharded_optimizer", rows, variant=args.model)


if __name__ == "__main__":
    main()
