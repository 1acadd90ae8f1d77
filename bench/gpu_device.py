"""What the GPU benchmarks share: horde started with this rank on its GPU (local_rank %
the GPUs there are), or on the CPU with --device cpu, to check a script without a GPU."""

import torch

import horde.torch as hvd


def add_device_option(parser):
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                        help="cpu: the same loops on CPU tensors, to check the script")


def start(device_type):
    """Initializes horde and returns (the torch.device to use, its name)."""
    if device_type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no GPU visible: torch.cuda.is_available() is False")
    hvd.init()
    if device_type != "cuda":
        return torch.device("cpu"), "cpu"
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    device = torch.device("cuda", torch.cuda.current_device())
    return device, torch.cuda.get_device_name(device)
