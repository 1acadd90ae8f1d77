"""hvd.elastic.run: the decorator for an elastic training function."""

import functools
import os
import sys

from horde.common import elastic as common
from horde.common.elastic import host_updates
from horde.common.exceptions import HordeInternalError, HostsUpdatedInterrupt
from horde.torch.elastic import recovery
from horde.torch.mpi_ops import rank


def run(func):
    """Decorates ``train(state, ...)``. At the start of every generation it syncs the
    state (every rank gets the newest commit), runs the reset callbacks when this is not
    the first generation, and calls ``func``. When a rank failed (HordeInternalError) and
    the MPI survives it, the surviving ranks re-form the job in place, return to the
    newest commit any of them holds, run the reset callbacks and call ``func`` again;
    that holds from the generation's first sync() on, so a rank lost while the others
    sync or run the reset callbacks is recovered from as one lost in a step. Otherwise,
    and when the hosts changed (HostsUpdatedInterrupt), the process leaves with the reset
    exit code and horderun starts the next generation, whose ranks resume from the
    newest commit. Outside an elastic job the exceptions propagate."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        if common.job_directory() is not None:
            host_updates.install()
        synced = False  # this generation's first sync() is done
        reset = common.generation() > 0  # the reset callbacks are due
        while True:
            try:
                if not synced:
                    state.sync()
                    synced = True
                if reset:
                    state.on_reset()
                    reset = False
                return func(state, *args, **kwargs)
            except (HordeInternalError, HostsUpdatedInterrupt) as error:
                if common.job_directory() is None:
                    raise
                if isinstance(error, HostsUpdatedInterrupt) or not recovery.possible():
                    _leave(error)
                if not recovery.recover(state, error, synced=synced):
                    _leave(error)
                synced = reset = True

    return wrapper


def _leave(error):
    why = "the hosts changed" if isinstance(error, HostsUpdatedInterrupt) else str(error)
    os.write(2, f"horde elastic: rank {rank()} leaves this generation: {why}\n".encode())
    sys.stdout.flush()
    sys.stderr.flush()
    # No MPI_Finalize: it would wait for ranks that may be gone.
    os._exit(common.RESET_EXIT_CODE)
