"""Elastic state: what a training function commits, and how a new generation of ranks
gets it back. Horovod's State, ObjectState and TorchState, with commits that survive
the process (horde.common.elastic.commit_store) because under horderun a reset starts
new processes rather than re-forming the surviving ones.

Every rank resumes from one state of one timeline. A commit is named by a CommitId (job,
generation, count); sync() in generation G makes every rank hold the newest commit any
rank holds, stamped G, and has each host keep it: a host that comes back holding a commit
of an abandoned timeline (one that an earlier generation stamped, whatever its count)
loses to the live one."""

import copy
import os
import socket
import sys

import torch

from horde.common import elastic as common
from horde.common.elastic import host_updates
from horde.common.elastic.commit_store import CommitId, CommitStore, CommitWriteError
from horde.common.exceptions import HostsUpdatedInterrupt
from horde.torch.functions import allgather_object, broadcast_object
from horde.torch.mpi_ops import Max, allreduce, rank
from horde.torch.elastic.sampler import ElasticSampler


class State:
    """Base class: subclasses say what to save() and restore(). Every rank must call
    commit(), sync() and check_host_updates() at the same points: they are collective."""

    def __init__(self):
        self._reset_callbacks = []
        self._commit = None  # the CommitId of the commit this process holds
        self._saved = None
        self._write_error = None  # why this rank could not write its host's commit
        self._writer = None  # whether this rank keeps its host's commits: decided once
        self._announced = False
        self._in_place = False  # syncing among the survivors of a lost rank
        self._kept = None  # the CommitId this rank last wrote to the job directory
        directory = common.job_directory()
        self._store = CommitStore(directory) if directory else None

    @property
    def _commits(self):
        """The count of the commit this process holds (0: none)."""
        return self._commit.count if self._commit else 0

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
        self._commit = CommitId(common.job_id(), common.generation(), self._commits + 1)
        self._announce()
        self._keep()

    def restore(self):
        """Returns the live objects to the last commit."""
        if self._saved is not None:
            self._load(self._saved)

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt on every rank when horderun told any rank that
        the hosts changed, and CommitWriteError on every rank when any host could not
        write the last commit (one small allreduce for both)."""
        flags = torch.tensor([host_updates.pending(), self._write_error is not None],
                             dtype=torch.int32)
        updated, failed = allreduce(flags, op=Max, name="horde.elastic.host_updates").tolist()
        if failed:
            self._raise_write_error()
        if updated:
            host_updates.clear()
            raise HostsUpdatedInterrupt(skip_sync=False)

    def sync(self):
        """Makes every rank hold the newest commit of any rank (from this process, or
        from this host's job directory after a reset), sent by one rank holding it,
        stamped with this generation and kept on every host; without any commit, rank
        0's live state (or a stop, when an earlier generation held a commit)."""
        self._read_host_commit()
        held = allgather_object(self._commit, name="horde.elastic.commits")
        newest = max(filter(None, held), key=CommitId.order, default=None)
        if newest is None:
            self._start_without_commit()
            return
        saved = self._saved
        if any(commit != newest for commit in held):
            holder = held.index(newest)
            saved = broadcast_object(saved if rank() == holder else None, holder,
                                     name="horde.elastic.newest_commit")
        # Together: a sync that fails between the two must not leave a commit's contents
        # under another commit's name for the next one.
        self._saved, self._commit = saved, newest._replace(generation=common.generation())
        self._load(self._saved)
        self._keep()
        self._announce()

    def _sync_in_place(self, read_host_commit=False):
        """sync() among the survivors of a lost rank, in the same processes: each holds
        its last commit in memory, so none reads the job directory (unless
        `read_host_commit`: the generation's first sync() did not end, so its ranks may
        hold nothing yet); this host's writer may be another rank now."""
        self._writer = None
        self._in_place = not read_host_commit
        try:
            self.sync()
        finally:
            self._in_place = False

    def _read_host_commit(self):
        if self._store is None or self._in_place or not self._is_writer():
            return
        found = self._store.read_newest(common.job_id())
        if found and (self._commit is None or found[0].order() > self._commit.order()):
            self._commit, self._saved = found

    def _start_without_commit(self):
        expected = common.expected_commit()
        if self._store is not None and expected is not None:
            _stop_without_commit(expected)
        self._load(broadcast_object(self._snapshot(), 0, name="horde.elastic.initial"))
        self._saved = self._snapshot()

    def _is_writer(self):
        """Whether this rank is the first of the ranks that share its host and job
        directory (local rank 0 on a host): the one that keeps their commits, which are
        the same on every rank."""
        if self._writer is None:
            place = (socket.gethostname(), common.job_directory())
            places = allgather_object(place, name="horde.elastic.places")
            self._writer = places.index(place) == rank()
        return self._writer

    def _keep(self):
        """Writes the commit held to this host's job directory when this rank is its
        writer; a failure is raised on every rank by the next check_host_updates()."""
        if self._store is None or not self._is_writer() or self._kept == self._commit:
            return  # (in place, a survivor that wrote this very commit already)
        try:
            self._store.write(self._commit, self._saved)
            self._kept = self._commit
        except CommitWriteError as error:
            self._write_error = str(error)

    def _raise_write_error(self):
        errors = allgather_object(self._write_error, name="horde.elastic.write_errors")
        self._write_error = None
        raise CommitWriteError("; ".join(f"rank {r}: {error}"
                                         for r, error in enumerate(errors) if error))

    def _announce(self):
        """Rank 0 names the commit this generation holds, once: horderun passes it to
        later generations, which stop rather than start over if none of their ranks
        holds a commit."""
        if self._store is None or self._announced or rank() != 0:
            return
        self._announced = True
        os.write(2, f"horde elastic: generation {common.generation()} holds commit "
                    f"{self._commit}\n".encode())

    def _snapshot(self):
        raise NotImplementedError

    def _load(self, saved):
        raise NotImplementedError


def _stop_without_commit(expected):
    """Every rank leaves with NO_COMMIT_EXIT_CODE, rank 0 saying why: starting over from
    the initial state would silently drop what the earlier generations trained."""
    if rank() == 0:
        os.write(2, f"horde elastic: no rank of generation {common.generation()} holds a "
                    f"commit of this job (the newest was {expected}); stopping\n".encode())
    # The line is out before any rank ends, and mpirun stops the others.
    allreduce(torch.zeros(1), name="horde.elastic.stopping")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(common.NO_COMMIT_EXIT_CODE)


class ObjectState(State):
    """State made of the keyword arguments, which become attributes (state.epoch)."""

    def __init__(self, **kwargs):
        self._names = list(kwargs)
        for name, value in kwargs.items():
            setattr(self, name, value)
        super().__init__()

    def _snapshot(self):
        return {"attrs": copy.deepcopy({name: getattr(self, name) for name in self._names})}

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

    def _snapshot(self):
        snapshot = super()._snapshot()
        if self._sharded():
            self.optimizer.wait_for_parameters()  # (overlap_allgather: the last step's)
        if self.model is not None:
            snapshot["model"] = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        if self._sharded():
            # Whole, so that any number of ranks can go on from it (and none is lost with a
            # rank): gathered (collective) into host memory.
            snapshot["optimizer"] = self.optimizer.whole_state_dict()
        elif self.optimizer is not None:
            snapshot["optimizer"] = copy.deepcopy(self.optimizer.state_dict())
        # Plain ints (record_batch counts every rank's batches): the same on every rank.
        snapshot["samplers"] = {name: getattr(self, name).state_dict() for name in self._samplers}
        return snapshot

    def _sharded(self):
        return getattr(self.optimizer, "_horde_sharded", False)

    def _load(self, saved):
        super()._load(saved)
        if self.model is not None:
            self.model.load_state_dict(saved["model"])
        if self._sharded():
            self.optimizer.reshard()  # over the ranks there are now
        if self.optimizer is not None:
            self.optimizer.load_state_dict(copy.deepcopy(saved["optimizer"]))
        for name, state in saved["samplers"].items():
            getattr(self, name).load_state_dict(state)
