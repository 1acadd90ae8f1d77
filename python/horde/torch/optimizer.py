"""DistributedOptimizer: data-parallel training by averaging gradients across ranks.

The wrapped optimizer stays an instance of the user's optimizer class. The gradient path
is C++ (torch_plugin/gradient_reducer.h, shared with horde::torch::DistributedOptimizer):
a hook on each parameter's gradient accumulator starts that gradient's reduction as soon
as backward has accumulated it, without entering Python, so communication overlaps the
rest of backward; step() waits for all of them, writes the reduced gradients back, then
runs the user's optimizer step. What stays here is what only Python has: the optimizer
class, compression objects, groups given as lists of parameters, skip_synchronize().
"""

import warnings
from contextlib import contextmanager

from horde.common.process_sets import global_process_set, process_set_id_of
from horde.torch import _ops, adasum_optimizer
from horde.torch.compression import Compression
from horde.torch.mpi_ops import Average
from horde.torch.optimizer_class import wrap_optimizer_class
from horde.torch.parameter_names import parameter_names


def _group_indices(trainable, groups, num_groups):
    """(groups as lists of indices into `trainable`, num_groups), as the C++ side takes
    them: Horovod accepts groups=int as num_groups."""
    if groups is None:
        return [], num_groups
    if num_groups:
        raise ValueError("give either groups or num_groups, not both")
    if isinstance(groups, int):
        return [], groups
    index = {p: i for i, p in enumerate(trainable)}
    indices = []
    for group in groups:
        members = list(group)
        if any(p not in index for p in members):
            raise ValueError("groups must hold trainable parameters of the optimizer")
        indices.append([index[p] for p in members])
    return indices, 0


class _DistributedOptimizer:
    """Mixed in before the user's optimizer class (see wrap_optimizer_class)."""

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, groups, num_groups, sparse_as_dense,
                 gradient_as_bucket_view, bucket_cap_mb, process_set):
        super().__init__(params)
        if backward_passes_per_step < 1:
            raise ValueError("backward_passes_per_step must be at least 1")
        if gradient_predivide_factor != 1.0 and op != Average:
            raise ValueError("gradient_predivide_factor needs op=Average")
        self._parameter_names = parameter_names(self.param_groups, named_parameters)
        self._should_synchronize = True
        self._synchronized = False
        self._reducer = None
        set_id = process_set_id_of(process_set)
        trainable = [p for group in self.param_groups for p in group["params"] if p.requires_grad]
        group_indices, num_groups = _group_indices(trainable, groups, num_groups)
        bucket_cap_bytes = 0
        if gradient_as_bucket_view:
            if compression is not Compression.none or group_indices or num_groups:
                raise ValueError("gradient_as_bucket_view reduces gradients in place in their "
                                 "buckets: it cannot be combined with compression or groups")
            if bucket_cap_mb <= 0:
                raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
            bucket_cap_bytes = max(1, int(bucket_cap_mb * (1 << 20)))
        if not process_set.included():
            return  # as in Horovod: outside its process set, a plain local optimizer
        custom = compression not in (Compression.none, Compression.fp16)
        self._reducer = _ops.GradientReducer(
            trainable, [f"grad.{self._parameter_names[p]}" for p in trainable], op,
            float(gradient_predivide_factor), backward_passes_per_step, set_id, group_indices,
            num_groups or 0, sparse_as_dense, bucket_cap_bytes, compression is Compression.fp16,
            compression if custom else None)

    def synchronize(self):
        """Waits for every gradient's allreduce and writes the results into .grad. Starts
        the reduction of gradients that never appeared (zeros), so no rank waits.

        If a reduction fails, it still waits for all the others, then raises the first
        error; either way the next backward() starts a fresh step, so a script that
        catches the error can go on with zero_grad(), backward() and step().
        Outside the optimizer's process set there is nothing to wait for."""
        if self._reducer is not None:
            self._reducer.synchronize()
        self._synchronized = True

    @contextmanager
    def skip_synchronize(self):
        """Inside this context, step() does not synchronize: for code that called
        synchronize() itself (e.g. to clip gradients) before step()."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                # Horovod's words: scripts and tests match them.
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(). This can cause training "
                              "slowdown. You may want to consider using "
                              "optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.")
            try:
                self.synchronize()
            finally:
                self._synchronized = False
        return super().step(closure)

    def load_state_dict(self, state_dict):
        # A state loaded in the middle of a step (an elastic job going back to its last
        # commit after a failure between backward() and step()) ends that step: its
        # reductions are dropped, not written back, and the next backward() starts afresh.
        if self._reducer is not None and self._reducer.has_pending_work():
            self._reducer.abandon_step()
        self._synchronized = False
        return super().load_state_dict(state_dict)

    def zero_grad(self, *args, **kwargs):
        if self._reducer is None:
            return super().zero_grad(*args, **kwargs)
        if self._reducer.has_pending_work():
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but before "
                "optimizer.step() or optimizer.synchronize(); the pending allreduces would "
                "race with the zeroing")
        if self._reducer.zero_buckets():
            # Gradients stay views into their buckets (set_to_none would detach them).
            return None
        return super().zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set, gradient_as_bucket_view=False,
                         bucket_cap_mb=25):
    """Wraps ``optimizer`` so that its gradients are averaged (or reduced with ``op``)
    across ranks before every step. The result is an instance of the optimizer's own
    class, as in horovod.torch.

    named_parameters: model.named_parameters(), used to name each gradient's allreduce.
    compression: Compression.none or Compression.fp16.
    backward_passes_per_step: local backward passes (gradients accumulate) per reduction.
    gradient_predivide_factor: with Average, divide by this before the sum and by
        size()/factor after it.
    num_groups / groups: reduce the parameters in that many groups (or in the given lists
        of parameters), each negotiated and fused as a unit.
    sparse_as_dense: reduce sparse gradients as dense tensors instead of allgathering
        their indices and values.
    gradient_as_bucket_view: lay the gradients out as views into flat buckets of up to
        bucket_cap_mb MiB (as DistributedDataParallel does) and reduce each bucket in place
        with one allreduce: no copies into a fusion buffer and back. zero_grad() then zeros
        the buckets instead of setting gradients to None. Not with compression or groups.
    process_set: reduce over this set's ranks only (Average divides by its size). On a
        rank outside the set the result is a plain local optimizer, as in Horovod.
    op=Adasum on more than one rank: Horovod's delta optimizer (adasum_optimizer.py).
    """
    process_set_id_of(process_set)  # a clear error for anything but a registered set
    if adasum_optimizer.applies(op) and process_set.included():
        return adasum_optimizer.DistributedAdasumOptimizer(
            optimizer, named_parameters, compression, backward_passes_per_step,
            gradient_predivide_factor, groups, num_groups, gradient_as_bucket_view, process_set)
    cls = wrap_optimizer_class(_DistributedOptimizer, optimizer)
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               op, gradient_predivide_factor, groups, num_groups, sparse_as_dense,
               gradient_as_bucket_view, bucket_cap_mb, process_set)
