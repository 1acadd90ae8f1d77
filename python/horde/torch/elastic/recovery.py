"""In-place recovery: when a rank dies and the MPI survives it (see docs/elastic.md),
the surviving processes re-form the job among themselves and go on from the last
commit each holds in memory; no process starts, nothing is read from the job directory."""

import os
import time

from horde.common import elastic as common
from horde.common.exceptions import HordeInternalError
from horde.torch.basics import _basics, rank, size


# Each failed attempt lost a rank; the C++ side retries its own part too.
_ATTEMPTS = 4


def possible():
    """Whether a lost rank can be recovered from in this process."""
    return common.in_place_requested() and _basics.survives_rank_failures()


def recover(state, error, synced=True):
    """Re-forms the job from the live ranks, returns the state to its last commit and
    makes every survivor hold the newest commit of any of them (`synced`: whether this
    generation's first sync() was done; if not, the ranks that keep a host's commits read
    them, as that sync() would have). Returns False when the survivors must leave for a
    restart instead (too few of them, or the re-forming failed); rank 0 then says why."""
    started = time.monotonic()
    size_before = size()
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            # Until this succeeds horde is not running here: nothing before it may need
            # the job (size(), a collective, the sampler's partition).
            _basics.recover_in_place()
            state.restore()
            state._sync_in_place(read_host_commit=not synced)
            break
        except HordeInternalError as failure:
            # Another rank failed while the job re-formed or synced: again, without it.
            if attempt == _ATTEMPTS:
                os.write(2, f"horde elastic: recovering in place failed: {failure}\n".encode())
                return False
    lost = size_before - size()
    if size() < common.min_np():
        _say(f"generation {common.generation()} has {size()} rank(s) left, fewer than "
             f"--min-np {common.min_np()}; restarting from the last commit")
        return False
    _say(f"generation {common.generation()} lost {lost} rank(s) and goes on in place with "
         f"{size()} in {time.monotonic() - started:.2f} s ({_first_line(error)})")
    return True


def _say(line):
    if rank() == 0:
        os.write(2, f"horde elastic: {line}\n".encode())


def _first_line(error):
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
