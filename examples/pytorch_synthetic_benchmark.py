"""Training throughput of a torchvision model on synthetic data, in images per second,
as Horovod's benchmark of the same name reports it.

    .venv/bin/horderun -np 2 .venv/bin/python examples/pytorch_synthetic_benchmark.py \\
        --model resnet18 --image-size 64 --num-iters 5
"""

import argparse
import statistics
import timeit

import torch
import torch.nn.functional as F
from torchvision import models

import horde.torch as hvd


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50", help="a torchvision.models name")
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--num-warmup-batches", type=int, default=10)
    parser.add_argument("--num-batches-per-iter", type=int, default=10)
    parser.add_argument("--num-iters", type=int, default=10)
    parser.add_argument("--fp16-allreduce", action="store_true", help="compress gradients to fp16")
    parser.add_argument("--no-cuda", action="store_true", help="train on the CPU even with a GPU")
    return parser.parse_args()


def main():
    args = parse_args()
    hvd.init()
    cuda = torch.cuda.is_available() and not args.no_cuda
    device = torch.device("cuda", hvd.local_rank()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)

    model = getattr(models, args.model)().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    target = torch.randint(0, 1000, (args.batch_size,), device=device)

    def benchmark_step():
        optimizer.zero_grad()
        F.cross_entropy(model(data), target).backward()
        optimizer.step()
        if cuda:
            torch.cuda.synchronize()

    def log(text):
        if hvd.rank() == 0:
            print(text, flush=True)

    kind = "GPU" if cuda else "CPU"
    log(f"Model: {args.model}, image size {args.image_size}")
    log(f"Batch size: {args.batch_size} per rank")
    log(f"Number of {kind}s: {hvd.size()}")
    timeit.timeit(benchmark_step, number=args.num_warmup_batches)

    rates = []
    for iteration in range(args.num_iters):
        seconds = timeit.timeit(benchmark_step, number=args.num_batches_per_iter)
        rates.append(args.batch_size * args.num_batches_per_iter / seconds)
        log(f"Iter #{iteration}: {rates[-1]:.1f} img/sec per {kind}")
    mean = statistics.mean(rates)
    # 95% interval of one iteration's rate, as Horovod's benchmark reports it.
    spread = 1.96 * statistics.pstdev(rates)
    log(f"Img/sec per {kind}: {mean:.1f} +-{spread:.1f}")
    log(f"Total img/sec on {hvd.size()} {kind}(s): {hvd.size() * mean:.1f} "
        f"+-{hvd.size() * spread:.1f}")


if __name__ == "__main__":
    main()
