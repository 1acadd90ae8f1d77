"""Elastic state: what a training function commits, and how a new generation of ranks
gets it back. Horovod's State, ObjectState and TorchState, with commits that survive
the process (horde.common.elastic.commit_store) because under horderun a reset starts
new processes rather than re-forming the surviving ones."""

import copy

import torch

from horde.common import elastic as common
from horde.common.elastic import host_updates
from horde.common.elastic.commit_store import CommitStore
from horde.common.exceptions import HostsUpdatedInterrupt
from horde.torch.functions import allgather_object, broadcast_object
from horde.torch.mpi_ops import Max, allreduce, rank
from horde.torch.elastic.sampler import ElasticSampler


class State:
    """Base class: subclasses say what to save() and restore(). Every rank must call
    commit(), sync() and check_host_updates() at the same points: they are collective."""

    def __init__(self):
        self._reset_callbacks = []
        self._commits = 0  # the count of the newest commit this process holds
        self._saved = None
        directory = common.job_directory()
        self._store = CommitStore(directory) if directory else None

    def register_reset_callbacks(self, callbacks):
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def reset(self):
        """Called after a reset, before the callbacks; subclasses may override."""

    def commit(self):
        """Saves the state (in memory and, in an elastic job, to this host's job
        directory), then checks for host updates, as Horovod's commit() does."""
        self.save()
        self.check_host_updates()

    def save(self):
        self._saved = self._snapshot()
        self._commits += 1
        if self._store is not None:
            self._store.write(rank(), self._commits, self._saved)

    def restore(self):
        """Returns the live objects to the last commit."""
        if self._saved is not None:
            self._load(self._saved)

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt on every rank when horderun told any rank that
        the hosts changed (one small allreduce)."""
        flag = torch.tensor([1 if host_updates.pending() else 0], dtype=torch.int32)
        if int(allreduce(flag, op=Max, name="horde.elastic.host_updates")[0]):
            host_updates.clear()
            raise HostsUpdatedInterrupt(skip_sync=False)

    def sync(self):
        """Makes every rank hold the newest commit of any rank (from this process, or
        from this host's job directory after a reset), sent by its holder; without any
        commit, rank 0's live state, which then becomes the first commit."""
        if self._store is not None and self._commits < self._store.newest_count():
            self._saved = self._store.load_newest()
            self._commits = self._saved["commit"]
        counts = allgather_object(self._commits, name="horde.elastic.commit_counts")
        newest = max(counts)
        if newest == 0:
            self._load(broadcast_object(self._snapshot(), 0, name="horde.elastic.initial"))
            self._saved = self._snapshot()
            return
        holder = counts.index(newest)
        if min(counts) < newest:
            self._saved = broadcast_object(self._saved if rank() == holder else None, holder,
                                           name="horde.elastic.newest_commit")
        self._commits = newest
        self._load(self._saved)

    def _snapshot(self):
        raise NotImplementedError

    def _load(self, saved):
        raise NotImplementedError


class ObjectState(State):
    """State made of the keyword arguments, which become attributes (state.epoch)."""

    def __init__(self, **kwargs):
        self._names = list(kwargs)
        for name, value in kwargs.items():
            setattr(self, name, value)
        super().__init__()

    def _snapshot(self):
        return {"commit": self._commits + 1,
                "attrs": copy.deepcopy({name: getattr(self, name) for name in self._names})}

    def _load(self, saved):
        for name, value in copy.deepcopy(saved["attrs"]).items():
            setattr(self, name, value)


class TorchState(ObjectState):
    """A model, an optimizer, ElasticSamplers and plain values (Horovod's TorchState)."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        self.model = model
        self.optimizer = optimizer
        self._samplers = [name for name, value in kwargs.items()
                          if isinstance(value, ElasticSampler)]
        super().__init__(**{k: v for k, v in kwargs.items() if k not in self._samplers})
        for name in self._samplers:
            setattr(self, name, kwargs[name])

    def save(self):
        # Each rank records only its own batches: the commit holds every rank's.
        for name in self._samplers:
            sampler = getattr(self, name)
            for indices in allgather_object(sampler.processed_indices,
                                            name=f"horde.elastic.sampler.{name}"):
                sampler.processed_indices |= indices
        super().save()

    def _snapshot(self):
        snapshot = super()._snapshot()
        if self.model is not None:
            snapshot["model"] = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        if self.optimizer is not None:
            snapshot["optimizer"] = copy.deepcopy(self.optimizer.state_dict())
        snapshot["samplers"] = {name: getattr(self, name).state_dict() for name in self._samplers}
        return snapshot

    def _load(self, saved):
        super()._load(saved)
        if self.model is not None:
            self.model.load_state_dict(saved["model"])
        if self.optimizer is not None:
            self.optimizer.load_state_dict(copy.deepcopy(saved["optimizer"]))
        for name, state in saved["samplers"].items():
            getattr(self, name).load_state_dict(state)
