"""ElasticSampler: Horovod's distributed sampler that remembers which indices were
processed, so that after a reset the rest of the epoch is split over the new ranks."""

import math

import torch
from torch.utils.data.sampler import Sampler

from horde.torch.mpi_ops import rank, size


def partition(remaining, epoch, seed, shuffle, rank_, size_):
    """This rank's indices of `remaining`: shuffled with seed + epoch, padded to a
    multiple of size_ by repeating the first ones, then every size_-th from rank_."""
    indices = list(remaining)
    if shuffle:
        generator = torch.Generator()
        generator.manual_seed(seed + epoch)
        indices = [indices[i] for i in torch.randperm(len(indices), generator=generator)]
    total = int(math.ceil(len(indices) / size_)) * size_
    indices += indices[:total - len(indices)]
    return indices[rank_:total:size_]


class ElasticSampler(Sampler):
    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices = set()
        self.indices = []
        self.reset()

    def set_epoch(self, epoch):
        """Starts epoch `epoch`: nothing processed yet."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Records this rank's batch `batch_idx` of the current pass as processed."""
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices):
        self.processed_indices.update(indices)

    def get_indices(self, batch_idx, batch_size):
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def state_dict(self):
        return {"epoch": self.epoch, "processed_indices": set(self.processed_indices)}

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.processed_indices = set(state_dict["processed_indices"])
        self.reset()

    def reset(self):
        """Re-partitions the unprocessed indices over the current ranks."""
        self.num_replicas, self.rank = size(), rank()
        self.remaining_indices = [i for i in range(len(self.dataset))
                                  if i not in self.processed_indices]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        self.indices = partition(self.remaining_indices, self.epoch, self.seed, self.shuffle,
                                 self.rank, self.num_replicas)
        return iter(self.indices)

    def __len__(self):
        return self.num_samples
