"""ElasticSampler: Horovod's distributed sampler that counts the samples processed in
the epoch, so that after a reset the rest of the epoch is split over the new ranks. The
API is Horovod's since 0.24 (``processed_num``, ``record_batch``); a state dict of the
older API (``processed_indices``) still loads."""

import math
import random

from torch.utils.data.sampler import Sampler

from horde.torch.mpi_ops import rank, size


def epoch_order(length, epoch, seed, shuffle):
    """Every index of a data set of `length`, in the order of `epoch`: shuffled with
    seed + epoch by Python's random, as Horovod shuffles them, so that every rank (and
    every generation) sees the same order."""
    indices = list(range(length))
    if shuffle:
        random.Random(seed + epoch).shuffle(indices)
    return indices


def partition(remaining, rank_, size_):
    """This rank's indices of `remaining`: padded to a multiple of size_ by repeating the
    first ones, then every size_-th from rank_. Batch b of every rank together is then
    the next batch_size * size_ indices of `remaining`."""
    total = int(math.ceil(len(remaining) / size_)) * size_
    padded = remaining + remaining[:total - len(remaining)]
    return padded[rank_:total:size_]


class ElasticSampler(Sampler):
    """Samples the indices of ``dataset`` this rank processes in the current epoch.
    ``record_batch`` after each batch counts it for every rank (``processed_num``); a
    commit saves the count, and after a reset the samples not yet processed are split
    over the new ranks."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_num = 0
        self.indices = []
        self.reset()

    def set_epoch(self, epoch):
        """Starts epoch `epoch`: nothing processed yet."""
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Counts a batch of `batch_size` samples on every rank as processed."""
        self.processed_num += batch_size * self.num_replicas

    def get_indices(self, batch_idx, batch_size):
        """This rank's indices of batch `batch_idx` of the current pass."""
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def state_dict(self):
        return {"epoch": self.epoch, "processed_num": self.processed_num}

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        if "processed_num" in state_dict:
            self.processed_num = state_dict["processed_num"]
        else:  # Horovod before 0.24 saved the processed indices themselves
            self.processed_num = len(state_dict["processed_indices"])
        self.reset()

    def reset(self):
        """Re-partitions the samples not yet processed over the current ranks."""
        self.num_replicas, self.rank = size(), rank()
        order = epoch_order(len(self.dataset), self.epoch, self.seed, self.shuffle)
        self.remaining_indices = order[self.processed_num:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        self.indices = partition(self.remaining_indices, self.rank, self.num_replicas)
        return iter(self.indices)

    def __len__(self):
        return self.num_samples
