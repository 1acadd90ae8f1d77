"""The framework-independent part of the API: starting and stopping horde and asking
where this process sits in the job. A framework binding wraps its compiled extension
in HordeBasics and re-exports the methods."""

import atexit
import sys

from horde.common.process_sets import (
    as_new_process_set, global_process_set, process_set_id_of, renumber_after_recovery)


class HordeBasics:
    """Basics over a compiled extension that offers init, shutdown, is_initialized,
    topology, runtime_stats, mpi_threads_supported, add_process_set and
    remove_process_set."""

    def __init__(self, ops):
        self._ops = ops
        self._atexit_registered = False

    def init(self, comm=None, process_sets=None):
        """Starts horde on every rank of the MPI job, with the given ProcessSets (or lists
        of ranks) registered, in order. Safe to call more than once."""
        if comm is not None:
            raise ValueError("horde runs on all ranks of the MPI job; "
                             "init(comm=...) is not supported")
        sets = [as_new_process_set(s) for s in (process_sets or [])]
        ids = self._ops.init([s.ranks for s in sets])
        world_rank = self.rank()
        global_process_set.ranks = list(range(self.size()))
        global_process_set._registered(0, world_rank)
        for process_set, process_set_id in zip(sets, ids):
            process_set._registered(process_set_id, world_rank)
        if not self._atexit_registered:
            atexit.register(self.shutdown)
            self._install_failure_hook()
            self._atexit_registered = True

    def _install_failure_hook(self):
        """An uncaught exception on this rank ends every rank's horde operations with
        "rank R failed: <type>: <message>" instead of leaving them to hang or fail with a
        bare "shut down"; the traceback is printed first, as usual."""
        previous = sys.excepthook
        ops = self._ops

        def report_failure(exc_type, exc, tb):
            previous(exc_type, exc, tb)
            text = f"{exc_type.__name__}: {exc}" if str(exc) else exc_type.__name__
            try:
                ops.abort(text)
            except Exception:  # noqa: BLE001 - the process is exiting with the real error
                pass

        sys.excepthook = report_failure

    def add_process_set(self, process_set):
        """Registers a ProcessSet (or a list of ranks) and returns it. Every rank calls
        this, in the same order; after init() it needs HORDE_DYNAMIC_PROCESS_SETS=1."""
        process_set = as_new_process_set(process_set)
        process_set_id = self._ops.add_process_set(process_set.ranks)
        process_set._registered(process_set_id, self.rank())
        return process_set

    def remove_process_set(self, process_set):
        """Stops the set's collectives and unregisters it; every rank calls this, like
        add_process_set. Returns True."""
        self._ops.remove_process_set(process_set_id_of(process_set))
        process_set.process_set_id = None
        return True

    def shutdown(self):
        """Stops horde on this rank; operations still pending fail with HordeInternalError."""
        self._ops.shutdown()

    def survives_rank_failures(self):
        """Whether this rank can go on in place when another rank dies: horde was built
        against an MPI with the fault-tolerance extension (ULFM) and mpirun enabled it
        (``horderun --elastic-mode in-place``, or ``auto`` where the MPI has it)."""
        return bool(self._ops.survives_rank_failures())

    def recover_in_place(self):
        """After a rank failed (an operation raised HordeInternalError): re-forms the job
        from the live ranks, in this process, and starts horde again over them; rank(),
        size() and every registered ProcessSet are renumbered (a set with no rank left
        stays lost: using it raises ValueError saying so). Every surviving rank calls it;
        collective over them. When it raises HordeInternalError (more ranks failed
        meanwhile), horde is not running on this rank (size() fails) until a later call
        succeeds; the process sets wait for that one, unchanged."""
        set_ranks = self._ops.recover_in_place()
        renumber_after_recovery(self.size(), self.rank(), set_ranks)

    def start_timeline(self, file_path, mark_cycles=False):
        """Rank 0 records a Chrome-trace timeline of every operation to ``file_path``
        (open it in ui.perfetto.dev, or summarize it with
        ``python -m horde.timeline summary FILE``); other ranks record nothing."""
        self._ops.start_timeline(str(file_path), bool(mark_cycles))

    def stop_timeline(self):
        """Stops recording and closes the timeline file (a valid JSON array)."""
        self._ops.stop_timeline()

    def is_initialized(self):
        return self._ops.is_initialized()

    def _topology(self, key):
        return self._ops.topology()[key]

    def size(self):
        """Number of ranks in the job."""
        return self._topology("size")

    def rank(self):
        """This process's rank, 0 <= rank < size()."""
        return self._topology("rank")

    def local_size(self):
        """Number of ranks on this node."""
        return self._topology("local_size")

    def local_rank(self):
        """This process's rank among the ranks on its node."""
        return self._topology("local_rank")

    def cross_size(self):
        """Number of nodes that have a rank with this process's local rank."""
        return self._topology("cross_size")

    def cross_rank(self):
        """This node's index among those nodes."""
        return self._topology("cross_rank")

    def is_homogeneous(self):
        """True when every node runs the same number of ranks."""
        return self._topology("is_homogeneous")

    def mpi_threads_supported(self):
        """True when MPI provides MPI_THREAD_MULTIPLE, so user code may use MPI (e.g. mpi4py)."""
        return self._ops.mpi_threads_supported()

    # What this build has, with Horovod's return types: bools, except nccl_built()'s int.
    @staticmethod
    def mpi_enabled():
        """True: horde always runs its collectives over MPI."""
        return True

    @staticmethod
    def mpi_built():
        """True: horde is always built with MPI."""
        return True

    def nccl_built(self):
        """The NCCL version this build was compiled against, as NCCL_VERSION_CODE (e.g.
        2708 for 2.7.8, 21903 for 2.19.3), or 0 in a build without the GPU path."""
        return int(self._ops.nccl_version_built())

    def cuda_built(self):
        """True when this build has the GPU path (CUDA kernels and NCCL collectives)."""
        return bool(self._ops.gpu_built())

    @staticmethod
    def rocm_built():
        return False

    @staticmethod
    def gloo_built():
        return False

    @staticmethod
    def gloo_enabled():
        return False

    @staticmethod
    def ccl_built():
        return False

    @staticmethod
    def ddl_built():
        return False

    def runtime_stats(self):
        """Counters since init(): negotiation rounds, responses executed, fused responses and
        tensors, and per collective the tensors and bytes this rank contributed."""
        return self._ops.runtime_stats()

    def straggler_report(self):
        """Which rank the other ranks wait for, over the last window of 64 rounds that ran
        collectives: a dict whose ``"straggler"`` is that rank, or None when no rank is
        last in more than half the rounds while costing the others more than 5% of their
        time; ``"most_often_last"`` and its ``"host"``, ``"share_last"`` (of the rounds),
        ``"lag_median_ms"`` and ``"lag_p90_ms"`` (how much later than the next rank it
        arrived), ``"cost_to_others"`` (the others' time spent waiting for it, as a share
        of the window), ``"rounds"`` and ``"window_seconds"``. The same on every rank."""
        return self._ops.straggler_report()
