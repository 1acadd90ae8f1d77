"""Part 3: training steps on synthetic data, per rank the same model, batch and SGD step:
a torchvision model (--model resnet18, resnet50, ...) on random images, or --model
transformer, an nn.TransformerEncoder (12 layers, d_model 256: many small parameter
tensors, a LayerNorm weight and bias per block) on random tokens. Contenders:

- plain: no communication, horde not running (the baseline t_nocomm), run twice under
  two names so that their difference shows the noise;
- plain, horde idle: the same with horde initialized but given no work (the plain tax),
  with the default 1 ms cycle and with a 10 ms one;
- horde: hvd.DistributedOptimizer, and the same with gradient_as_bucket_view=True;
- ddp: torch's DistributedDataParallel over gloo.

With --topology (for the link test bed, bench/topology.sh): plain, horde with
HORDE_TOPOLOGY=off, horde with the job's own setting (auto: spanning trees where the
measured links favour them) and ddp.

Communication overhead = 1 - t_plain / t_distributed, from medians of interleaved
batches of steps."""

import argparse

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import horde.torch as hvd
from harness import SIZE, Contender, horde_counts, interleave, log, save, session
from synthetic_models import synthetic_data


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
    torch.manual_seed(0)
    make, images, labels = synthetic_data(args)

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
    ddp_step = stepper(ddp_model, sgd(ddp_model), images, labels, args.steps)
    if args.topology:
        return [
            Contender("plain", plain_step),
            Contender("horde_topology_off", horde_step, needs_horde=True,
                      horde_env={"HORDE_TOPOLOGY": "off"}),
            Contender("horde", horde_step, needs_horde=True),
            Contender("ddp", ddp_step),
        ], horde_step, len(list(plain.parameters()))
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
        Contender("ddp", ddp_step),
    ], horde_step, len(list(plain.parameters()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--model", default="resnet18",
                        help="a torchvision model name, or transformer")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--sequence-length", type=int, default=32, help="transformer only")
    parser.add_argument("--batch-size", type=int,
                        help="per rank (default 16; the transformer 8: a full run of 16 x 64 "
                             "tokens took over 15 minutes on 2 cores)")
    parser.add_argument("--steps", type=int, help="per timed batch (default 3, quick 2)")
    parser.add_argument("--topology", action="store_true",
                        help="contenders plain, horde with HORDE_TOPOLOGY=off, horde, ddp")
    args = parser.parse_args()
    repetitions = 2 if args.quick else 7
    args.steps = args.steps or (2 if args.quick else 3)
    args.batch_size = args.batch_size or (8 if args.model == "transformer" else 16)
    with session("training"):
        runners, horde_step, parameters = contenders(args)
        walls, cpus = interleave(runners, repetitions)
        counts = horde_counts(horde_step)
    step = {k: v / args.steps for k, v in walls.items()}
    row = {"model": args.model, "image_size": args.image_size,
           "sequence_length": args.sequence_length, "batch_size": args.batch_size,
           "parameters": parameters,
           **step, "samples_per_s": {k: SIZE * args.batch_size / v for k, v in step.items()},
           "cpu_per_step": {k: v / args.steps for k, v in cpus.items()},
           **{k: v / args.steps for k, v in counts.items()}}
    log("  step: " + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in step.items()))
    save("training", [row], variant=args.model)


if __name__ == "__main__":
    main()
