"""Process sets: collectives among some of the ranks, as in Horovod.

A set negotiates on its own (its lowest rank coordinates) with its own background
thread, so collectives on different sets proceed independently and concurrently. Every
rank registers the same sets in the same order, at ``init(process_sets=[...])`` or with
``add_process_set`` (which, like ``remove_process_set``, needs
HORDE_DYNAMIC_PROCESS_SETS=1 after init), so ids agree across ranks.
"""

import operator
import weakref


class ProcessSet:
    """A set of ranks (ranks of the whole job) that run collectives among themselves:
    pass it as ``process_set=`` to any collective. It is usable once registered."""

    def __init__(self, ranks):
        if isinstance(ranks, (str, bytes)) or not hasattr(ranks, "__iter__"):
            raise ValueError(f"a process set takes a list of ranks; got {ranks!r}")
        try:
            self.ranks = sorted(operator.index(r) for r in ranks)
        except TypeError:
            raise ValueError(f"a process set's ranks must be ints; got {list(ranks)!r}") from None
        self.process_set_id = None  # given at registration; None again once removed
        self._world_rank = None  # this process's rank in the job, known at registration
        self._lost = None  # why the set is gone when the job re-formed without its ranks

    def _registered(self, process_set_id, world_rank):
        self.process_set_id, self._world_rank = process_set_id, world_rank
        self._lost = None
        _registered_sets[process_set_id] = self

    def size(self):
        """Number of ranks in the set."""
        return len(self.ranks)

    def included(self):
        """Whether this process belongs to the set."""
        _require_registered(self)
        return self._world_rank in self.ranks

    def rank(self):
        """This process's rank within the set (its index in ``ranks``), or -1 outside it."""
        return self.ranks.index(self._world_rank) if self.included() else -1

    def __eq__(self, other):
        return (isinstance(other, ProcessSet) and self.ranks == other.ranks
                and self.process_set_id == other.process_set_id)

    __hash__ = None

    def __repr__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


# The registered sets by id (global one included), to renumber after a lost rank.
_registered_sets = weakref.WeakValueDictionary()


def renumber_after_recovery(world_size, world_rank, set_ranks):
    """After the job re-formed without its lost ranks (horde.common.basics): the global
    set spans ``world_size`` ranks again, the other sets take their new ranks from
    ``set_ranks`` (id -> ranks), and a set with no rank left is unregistered, marked as
    lost so that using it says why."""
    global_process_set.ranks = list(range(world_size))
    for process_set_id, process_set in list(_registered_sets.items()):
        if process_set_id == 0:
            process_set._registered(0, world_rank)
        elif process_set_id in set_ranks:
            process_set.ranks = list(set_ranks[process_set_id])
            process_set._registered(process_set_id, world_rank)
        else:
            process_set._lost = (f"process set {process_set_id} (ranks {process_set.ranks}) "
                                 "lost all its ranks when the job re-formed without its failed "
                                 "ranks; register a new set over live ranks")
            process_set.process_set_id = None
            del _registered_sets[process_set_id]


# The set of every rank, id 0; its ranks are filled in by init().
global_process_set = ProcessSet([])
global_process_set.process_set_id = 0


def _require_registered(process_set):
    if process_set._lost is not None:
        raise ValueError(process_set._lost)
    if process_set.process_set_id is None:
        raise ValueError(f"process set {process_set.ranks} is not registered (never added, or "
                         "removed); pass it to init(process_sets=[...]) or add_process_set()")


def process_set_id_of(process_set):
    """The id the compiled operations take for ``process_set``; ValueError unless it is a
    registered ProcessSet."""
    if not isinstance(process_set, ProcessSet):
        raise ValueError(f"process_set must be a ProcessSet (e.g. hvd.global_process_set); "
                         f"got {type(process_set).__name__}")
    _require_registered(process_set)
    return process_set.process_set_id


def as_new_process_set(ranks_or_set):
    """A ProcessSet to register: ``ranks_or_set`` itself if it is an unregistered
    ProcessSet, else a new one over those ranks."""
    if not isinstance(ranks_or_set, ProcessSet):
        return ProcessSet(ranks_or_set)
    if ranks_or_set.process_set_id is not None:
        raise ValueError(f"{ranks_or_set!r} is already registered")
    return ranks_or_set
