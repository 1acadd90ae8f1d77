"""Part 3: training steps of a torchvision ResNet on synthetic images, per rank the same
model, batch and SGD step:

- plain: no communication, horde not running (the baseline t_nocomm), run twice under
  two names so that their difference shows the noise;
- plain, horde idle: the same with horde initialized but given no work (the plain tax),
  with the default 1 ms cycle and with a 10 ms one;
- horde: hvd.DistributedOptimizer, and the same with gradient_as_bucket_view=True;
- ddp: torch's DistributedDataParallel over gloo.

Communication overhead = 1 - t_plain / t_distributed, from medians of interleaved
batches of steps."""

import argparse

import torch
import torch.nn.functional as F
import torchvision
from torch.nn.parallel import DistributedDataParallel

import horde.torch as hvd
from harness import SIZE, Contender, horde_counts, interleave, log, save, session


def sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def stepper(model, optimizer, images, labels, steps):
    def run():
        for _ in range(steps):
            optimizer.zero_grad()
            F.cross_entropy(model(images), labels).backward()
            optimizer.step()
    return run


def contenders(args):
    make = getattr(torchvision.models, args.model)
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
    labels = torch.randint(0, 1000, (args.batch_size,))

    plain = make()
    plain_step = stepper(plain, sgd(plain), images, labels, args.steps)
    horde_model = make()
    horde_optimizer = hvd.DistributedOptimizer(
        sgd(horde_model), named_parameters=horde_model.named_parameters())
    bucket_model = make()
    bucket_optimizer = hvd.DistributedOptimizer(
        sgd(bucket_model), named_parameters=bucket_model.named_parameters(),
        gradient_as_bucket_view=True)
    ddp_model = DistributedDataParallel(make())
    horde_step = stepper(horde_model, horde_optimizer, images, labels, args.steps)
    return [
        Contender("plain", plain_step),
        # The same again: the difference between the two is the noise floor (an A/A test).
        Contender("plain_again", plain_step),
        Contender("plain_horde_idle", plain_step, needs_horde=True),
        # The idle tax with a 10x longer heartbeat: how much of it the heartbeat is.
        Contender("plain_horde_idle_10ms", plain_step, needs_horde=True,
                  horde_env={"HORDE_CYCLE_TIME": "10"}),
        Contender("horde", horde_step, needs_horde=True),
        Contender("horde_bucket_view", stepper(bucket_model, bucket_optimizer, images, labels,
                                               args.steps), needs_horde=True),
        Contender("ddp", stepper(ddp_model, sgd(ddp_model), images, labels, args.steps)),
    ], horde_step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16, help="per rank")
    parser.add_argument("--steps", type=int, help="per timed batch (default 3, quick 2)")
    args = parser.parse_args()
    repetitions = 2 if args.quick else 7
    args.steps = args.steps or (2 if args.quick else 3)
    with session("training"):
        runners, horde_step = contenders(args)
        walls, cpus = interleave(runners, repetitions)
        counts = horde_counts(horde_step)
    step = {k: v / args.steps for k, v in walls.items()}
    row = {"model": args.model, "image_size": args.image_size, "batch_size": args.batch_size,
           **step, "images_per_s": {k: SIZE * args.batch_size / v for k, v in step.items()},
           "cpu_per_step": {k: v / args.steps for k, v in cpus.items()},
           **{k: v / args.steps for k, v in counts.items()}}
    log("  step: " + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in step.items()))
    save("training", [row])


if __name__ == "__main__":
    main()
