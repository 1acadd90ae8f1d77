"""Exceptions raised by horde operations."""


class HordeInternalError(RuntimeError):
    """A collective failed on the ranks (ranks disagreed, the runtime shut down, or the
    transport failed). The message names the tensor and the cause. The next operation
    still works unless the runtime has shut down."""


# Horovod's name, so `except hvd.HorovodInternalError` keeps working.
HorovodInternalError = HordeInternalError
