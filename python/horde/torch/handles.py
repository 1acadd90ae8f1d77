"""Handles of asynchronous operations: ``poll`` and ``synchronize``. What an operation
returns (its outputs, a grouped operation's members, an alltoall's received splits,
an in-place operation's own tensor) is kept by the extension, in one table shared with
the C++ API; a handle is only its key.

A handle is a ``Handle``: an int, as Horovod's handles are, that also frees what horde
holds for its operation when it is collected without having been synchronized.
"""

from horde.torch import _ops


class Handle(int):
    """The handle of an asynchronous operation: an int (hashable, comparable, usable as a
    dict key, accepted by ``poll`` and ``synchronize``) whose collection, if it was never
    synchronized, releases the operation's entry in the extension (at once, or when the
    operation completes), so a long job that drops handles keeps nothing for them. An
    ``int(handle)`` copy does not keep the operation's result."""

    __slots__ = ()

    def __del__(self):
        try:
            _ops.release(int(self))
        except Exception:  # noqa: BLE001 - at interpreter exit the module may be half gone
            pass


def issued(handle):
    """The ``Handle`` for a new operation's id from the extension."""
    return Handle(handle)


def poll(handle):
    """True if the asynchronous operation behind ``handle`` has completed."""
    return _ops.poll(int(handle))


def synchronize(handle):
    """Waits for the operation behind ``handle`` and returns its output tensor (a list of
    them for a grouped operation, ``(output, received_splits)`` for an alltoall).

    Raises HordeInternalError if the operation failed on the ranks.
    """
    # `handle` stays referenced until this returns: a Handle collected while its wait is
    # under way would release the entry being waited on.
    return _ops.synchronize(int(handle))


def op_name(name):
    """The name the extension takes for an operation: "" (it names the op) for None."""
    return "" if name is None else str(name)


def _handle_table_sizes():
    """The number of operations the extension holds for handles: 0 once every handle has
    been waited on or collected and its operation has completed; by table name, for leak
    checks."""
    return {"operations": _ops.operation_count()}
