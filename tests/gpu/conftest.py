"""GPU tests of horde, run on a machine with a GPU (PyTorch with CUDA, horde built with
HORDE_WITH_CUDA finding nvcc and NCCL), on every rank of an MPI job:

    mpirun -np 1 python -m pytest tests/gpu -q -p no:cacheprovider                # NCCL
    HORDE_GPU_OPERATIONS=MPI mpirun -np 2 python -m pytest tests/gpu -q -p no:cacheprovider
                                          # two ranks sharing GPU 0 through host staging

Without a visible GPU every test is skipped with the reason. Each rank uses GPU
local_rank % device_count, so two ranks on one GPU share it (NCCL cannot: it needs
HORDE_GPU_OPERATIONS=MPI).
"""

import pytest
import torch

NO_GPU = "no GPU visible: torch.cuda.is_available() is False"


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    for item in items:
        item.add_marker(pytest.mark.skip(reason=NO_GPU))


@pytest.fixture(scope="session")
def hvd():
    import horde.torch as hvd

    hvd.init()
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    return hvd


@pytest.fixture
def device(hvd):
    return torch.device("cuda", torch.cuda.current_device())
