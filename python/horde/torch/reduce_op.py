"""The reduction operations (``op=``) of allreduce and reducescatter, and how ``op`` and
the deprecated ``average`` flag select one."""

import warnings

from horde.torch import _ops

Sum = _ops.ReduceOp.Sum
Average = _ops.ReduceOp.Average
Min = _ops.ReduceOp.Min
Max = _ops.ReduceOp.Max
Product = _ops.ReduceOp.Product
# Adaptive summation (allreduce of floating-point tensors over a power-of-two number of
# ranks); DistributedOptimizer(op=Adasum) reduces parameter deltas with it.
Adasum = _ops.ReduceOp.Adasum


def resolve_op(op, average):
    """The reduce op that ``op`` and the deprecated ``average`` flag ask for (Average if
    neither is given); ValueError if both are."""
    if op is not None and average is not None:
        raise ValueError("the op parameter supersedes average; provide only one of them")
    if average is not None:
        warnings.warn("average is deprecated; use op=hvd.Average or op=hvd.Sum", DeprecationWarning)
        return Average if average else Sum
    return Average if op is None else op
