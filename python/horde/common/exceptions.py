"""Exceptions raised by horde operations."""


class HordeInternalError(RuntimeError):
    """A collective failed on the ranks (ranks disagreed, the runtime shut down, or the
    transport failed). The message names the tensor and the cause. The next operation
    still works unless the runtime has shut down.

    ``failed_on_every_rank`` is True when this operation fails on every rank of its
    process set with this same message (ranks disagreed, or it stalled past
    HORDE_STALL_SHUTDOWN_TIME_SECONDS: a rank that submits it late gets the same failure
    at once), so no rank needs to ask the others whether it failed."""

    failed_on_every_rank = False


# Horovod's name, so `except hvd.HorovodInternalError` keeps working.
HorovodInternalError = HordeInternalError


class HostsUpdatedInterrupt(RuntimeError):
    """Raised in an elastic job when hosts were added or removed: the training function
    is interrupted so the job can re-form. ``skip_sync`` is True when the state needs no
    sync afterwards (only hosts were added and nothing was lost), as in Horovod."""

    def __init__(self, skip_sync=False):
        super().__init__("the job's hosts were updated")
        self.skip_sync = skip_sync
