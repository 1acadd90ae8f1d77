"""Handles of asynchronous operations: ``poll`` and ``synchronize``, and the tables the
Python layer keeps per handle until it is waited on (the members of a grouped operation,
alltoall's received splits), with the helpers that fill them. In-place operations are the
extension's (shared with the C++ API): its synchronize returns the caller's tensor.

A handle is a ``Handle``: an int, as Horovod's handles are, that also frees what horde
holds for its operation when it is collected without having been synchronized. A grouped
operation's handle is its first member's.
"""

from horde.torch import _ops

# handle of a grouped op (its first member's) -> the handles of all its members.
_group_members = {}

# handle of an alltoall -> the int32 tensor that receives the rows each rank sent here.
_alltoall_received_splits = {}


class Handle(int):
    """The handle of an asynchronous operation: an int (hashable, comparable, usable as a
    dict key, accepted by ``poll`` and ``synchronize``) whose collection, if it was never
    synchronized, releases the operation's entries here and in the extension (at once, or
    when the operation completes), so a long job that drops handles keeps nothing for them.
    The tables are keyed by plain ints: they never keep a handle alive themselves. An
    ``int(handle)`` copy does not keep the operation's result either."""

    __slots__ = ()

    def __del__(self):
        try:
            _release(int(self))
        except Exception:  # noqa: BLE001 - at interpreter exit the module may be half gone
            pass


def _release(handle):
    for member in _group_members.pop(handle, [handle]):
        _alltoall_received_splits.pop(member, None)
        _ops.release(member)


def issued(handle):
    """The ``Handle`` for a new operation's id from the extension."""
    return Handle(handle)


def poll(handle):
    """True if the asynchronous operation behind ``handle`` has completed."""
    return all(_ops.poll(h) for h in _group_members.get(int(handle), [handle]))


def synchronize(handle):
    """Waits for the operation behind ``handle`` and returns its output tensor (a list of
    them for a grouped operation).

    Raises HordeInternalError if the operation failed on the ranks.
    """
    # `handle` stays referenced until this returns: a Handle collected while its wait is
    # under way would release the entry being waited on.
    members = _group_members.pop(int(handle), None)
    if members is None:
        return _synchronize_one(handle)
    outputs, error = [], None
    for member in members:
        # Wait for every member even after a failure, so no handle is left behind.
        try:
            outputs.append(_synchronize_one(member))
        except Exception as e:  # noqa: BLE001 - re-raised below
            error = error or e
    if error is not None:
        raise error
    return outputs


def _synchronize_one(handle):
    key = int(handle)
    received_splits = _alltoall_received_splits.pop(key, None)
    output = _ops.synchronize(key)
    if received_splits is not None:
        return output, received_splits
    return output


def op_name(name):
    """The name the extension takes for an operation: "" (it names the op) for None."""
    return "" if name is None else str(name)


def group_handle(handles):
    """One ``Handle`` for the members of a grouped operation: synchronize() on it waits
    for all of them and returns their outputs as a list."""
    members = [int(h) for h in handles]
    _group_members[members[0]] = members
    return issued(members[0])


def track_received_splits(handle, received_splits):
    """Makes synchronize(handle) of an alltoall return ``(output, received_splits)``."""
    _alltoall_received_splits[int(handle)] = received_splits


def _handle_table_sizes():
    """The number of entries in each per-handle table, here and in the extension (its
    handle table and in-place targets): all 0 once every handle has been waited on or
    collected and its operation has completed; by table name, for leak checks."""
    return {"group_members": len(_group_members),
            "alltoall_received_splits": len(_alltoall_received_splits),
            "in_place_targets": _ops.in_place_target_count(), "extension": _ops.handle_count()}
