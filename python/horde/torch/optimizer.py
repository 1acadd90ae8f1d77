"""DistributedOptimizer: data-parallel training by averaging gradients across ranks.

The wrapped optimizer stays an instance of the user's optimizer class. A hook on each
parameter fires when backward has accumulated its gradient and starts that gradient's
allreduce at once, so communication overlaps the rest of backward; step() waits for all
of them, writes the reduced gradients back, then runs the user's optimizer step.
"""

import warnings
from contextlib import contextmanager

import torch

from horde.common.process_sets import global_process_set
from horde.torch import adasum_optimizer
from horde.torch.compression import Compression
from horde.torch.gradient_buckets import GradientBuckets
from horde.torch.gradient_hooks import count_backward_pass, register_gradient_hooks
from horde.torch.mpi_ops import (
    Average, Max, allreduce, allreduce_async_, grouped_allreduce_async_, sparse_allreduce_async,
    synchronize,
)
from horde.torch.optimizer_class import wrap_optimizer_class
from horde.torch.parameter_names import parameter_names


def _split_groups(params, groups, num_groups):
    """The parameter groups reduced as units: `groups` (lists of parameters) or
    `num_groups` contiguous, nearly equal slices of the parameters."""
    if groups is not None:
        if num_groups:
            raise ValueError("give either groups or num_groups, not both")
        if isinstance(groups, int):
            num_groups = groups
        else:
            return [list(group) for group in groups]
    if not num_groups:
        return []
    num_groups = min(num_groups, len(params))
    bounds = [round(i * len(params) / num_groups) for i in range(num_groups + 1)]
    return [params[bounds[i]:bounds[i + 1]] for i in range(num_groups)]


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
        self._compression = compression
        self._op = op
        self._backward_passes_per_step = backward_passes_per_step
        # Average splits its 1/size between a pre-scale and the post-scale.
        self._prescale = 1.0 / gradient_predivide_factor if op == Average else 1.0
        self._postscale = gradient_predivide_factor if op == Average else 1.0
        self._sparse_as_dense = sparse_as_dense
        self._process_set = process_set

        trainable = [p for group in self.param_groups for p in group["params"] if p.requires_grad]
        self._trainable = trainable
        # parameter -> sparse_dim of its gradient (0: dense), as every rank agreed on it.
        self._layout = {}
        # parameter -> sparse_dim of a sparse gradient reduced as dense in this step; it is
        # written back sparse, so optimizers such as SparseAdam still get sparse gradients.
        self._densified = {}
        self._submit_error = None  # the first failed submission of this step
        self._groups = _split_groups(trainable, groups, num_groups)
        self._group_of = {p: i for i, group in enumerate(self._groups) for p in group}
        self._delay = {p: backward_passes_per_step for p in trainable}
        self._pending = {}        # parameter -> (handle or waiter, compression context, sent)
        self._ready_in_group = {}  # group index -> parameters whose gradients are ready
        self._should_synchronize = True
        self._synchronized = False
        self._buckets = None
        self._bucket_handles = []
        if gradient_as_bucket_view:
            if compression is not Compression.none or self._groups:
                raise ValueError("gradient_as_bucket_view reduces gradients in place in their "
                                 "buckets: it cannot be combined with compression or groups")
            if bucket_cap_mb <= 0:
                raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
            self._buckets = GradientBuckets(trainable, self._parameter_names,
                                            int(bucket_cap_mb * (1 << 20)))
        self._grad_accumulators = register_gradient_hooks(trainable, self._on_gradient_ready)

    def _on_gradient_ready(self, p):
        if count_backward_pass(self._delay, p):
            try:
                self._start(p)
            except Exception as e:  # noqa: BLE001 - synchronize() raises it, after the rest
                # A failed submission (horde shut down, say) is raised by synchronize()
                # once the reductions that did start are done, not from inside backward,
                # so the step can be cleaned up like any failed step.
                self._submit_error = self._submit_error or e

    def _start(self, p):
        """Starts reducing p's gradient, alone or as the last ready member of its group
        or bucket."""
        if self._buckets is not None:
            bucket = self._buckets.mark_ready(p)
            if bucket is not None:
                self._bucket_handles.append(allreduce_async_(
                    bucket.buffer, name=bucket.name, op=self._op,
                    prescale_factor=self._prescale, postscale_factor=self._postscale,
                    process_set=self._process_set))
            return
        group = self._group_of.get(p)
        if p.grad is None:
            # Unused in this step on this rank: reduce zeros so no rank waits for it.
            p.grad = self._zero_gradient(p, sparse=group is None and not self._sparse_as_dense)
        # A group is reduced as one dense unit, so its sparse members are densified too.
        if p.grad.is_sparse and (self._sparse_as_dense or group is not None):
            self._densified[p] = p.grad.sparse_dim()
            p.grad = p.grad.to_dense()
        if p.grad.is_sparse:
            self._pending[p] = (sparse_allreduce_async(p.grad, self._parameter_names[p], self._op,
                                                       process_set=self._process_set),
                                None, None)
            return
        if group is None:
            compressed, ctx = self._compression.compress(p.grad)
            handle = allreduce_async_(compressed, name=self._parameter_names[p], op=self._op,
                                      prescale_factor=self._prescale,
                                      postscale_factor=self._postscale,
                                      process_set=self._process_set)
            self._pending[p] = (handle, ctx, compressed)
            return
        ready = self._ready_in_group.setdefault(group, [])
        ready.append(p)
        if len(ready) == len(self._groups[group]):
            self._start_group(group)

    def _zero_gradient(self, p, sparse):
        """Zeros in the layout the other ranks use for p's gradient: an empty sparse
        tensor where they allgather indices and values, dense zeros otherwise."""
        sparse_dim = self._layout.get(p, 0) if sparse else 0
        if not sparse_dim:
            return torch.zeros_like(p)
        indices = torch.zeros((sparse_dim, 0), dtype=torch.int64, device=p.device)
        values = torch.zeros((0,) + tuple(p.shape[sparse_dim:]), dtype=p.dtype, device=p.device)
        return torch.sparse_coo_tensor(indices, values, p.shape)

    def _agree_on_layouts(self):
        """Tells every rank which gradients any rank has seen sparse (and their sparse_dim)
        or dense, so a rank without a gradient reduces zeros the same way as the others.
        Runs in synchronize() until every parameter's layout is known."""
        seen = torch.zeros(len(self._trainable), 2)
        for i, p in enumerate(self._trainable):
            if p.grad is not None and p.grad.is_sparse:
                seen[i, 1] = p.grad.sparse_dim()
            elif p.grad is not None:
                seen[i, 0] = 1
        seen = allreduce(seen, op=Max, name="horde.optimizer.gradient_layouts",
                         process_set=self._process_set)
        for i, p in enumerate(self._trainable):
            if seen[i, 1] > 0:
                self._layout[p] = int(seen[i, 1])
            elif seen[i, 0] > 0:
                self._layout[p] = 0

    def _start_group(self, group):
        members = self._groups[group]
        compressed = [self._compression.compress(p.grad) for p in members]
        # Named after its first parameter, so two optimizers' groups never collide.
        handle = grouped_allreduce_async_(
            [t for t, _ in compressed], name=f"{self._parameter_names[members[0]]}.group",
            op=self._op, prescale_factor=self._prescale, postscale_factor=self._postscale,
            process_set=self._process_set)
        for index, (p, (tensor, ctx)) in enumerate(zip(members, compressed)):
            self._pending[p] = ((handle, index), ctx, tensor)
        del self._ready_in_group[group]

    def synchronize(self):
        """Waits for every gradient's allreduce and writes the results into .grad. Starts
        the reduction of gradients that never appeared (zeros), so no rank waits.

        If a reduction fails, it still waits for all the others, then raises the first
        error; either way the next backward() starts a fresh step, so a script that
        catches the error can go on with zero_grad(), backward() and step()."""
        try:
            if self._buckets is not None:
                self._synchronize_buckets()
            else:
                self._synchronize_gradients()
        finally:
            self._start_new_step()
        self._synchronized = True

    def _start_new_step(self):
        self._submit_error = None
        self._pending.clear()
        self._ready_in_group.clear()
        self._densified.clear()
        self._bucket_handles.clear()
        if self._buckets is not None:
            self._buckets.new_step()
        for p in self._trainable:
            self._delay[p] = self._backward_passes_per_step

    def _synchronize_gradients(self):
        error = self._submit_error
        try:
            if len(self._layout) < len(self._trainable):
                self._agree_on_layouts()
            waiting_in_groups = {p for ready in self._ready_in_group.values() for p in ready}
            for p in self._trainable:
                if p not in self._pending and p not in waiting_in_groups:
                    self._start(p)
        except Exception as e:  # noqa: BLE001 - raised once every started reduction is done
            error = e
        group_results = {}
        for p, (handle, ctx, _) in self._pending.items():
            try:
                self._write_back(p, handle, ctx, group_results)
            except Exception as e:  # noqa: BLE001 - the first error is raised below
                error = error or e
        if error is not None:
            raise error

    def _write_back(self, p, handle, ctx, group_results):
        """Waits for p's reduction and writes the result into p.grad."""
        if callable(handle):
            p.grad = handle()
            return
        if isinstance(handle, tuple):
            group_handle, index = handle
            if group_handle not in group_results:
                try:
                    group_results[group_handle] = synchronize(group_handle)
                except Exception as e:  # noqa: BLE001 - every member raises it
                    group_results[group_handle] = e
            if isinstance(group_results[group_handle], Exception):
                raise group_results[group_handle]
            output = group_results[group_handle][index]
        else:
            output = synchronize(handle)
        output = self._compression.decompress(output, ctx)
        sparse_dim = self._densified.get(p, 0) or self._layout.get(p, 0)
        if sparse_dim:
            p.grad = output.to_sparse(sparse_dim)
        elif output is not p.grad:
            with torch.no_grad():
                p.grad.copy_(output)

    def _synchronize_buckets(self):
        # Buckets are reduced in place: their views already are the gradients.
        error = self._submit_error
        try:
            for p in self._buckets.waiting():
                self._start(p)
        except Exception as e:  # noqa: BLE001 - raised once every started bucket is done
            error = e
        for handle in self._bucket_handles:
            try:
                synchronize(handle)
            except Exception as e:  # noqa: BLE001 - the first error is raised below
                error = error or e
        if error is not None:
            raise error

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

    def zero_grad(self, *args, **kwargs):
        if self._pending or self._bucket_handles or self._submit_error:
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but before "
                "optimizer.step() or optimizer.synchronize(); the pending allreduces would "
                "race with the zeroing")
        if self._buckets is not None:
            # Gradients stay views into their buckets (set_to_none would detach them).
            self._buckets.zero_()
            return None
        return super().zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         gradient_as_bucket_view=False, bucket_cap_mb=25,
                         process_set=global_process_set):
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
    process_set: reduce over this set's ranks only (Average divides by its size).
    op=Adasum on more than one rank: Horovod's delta optimizer (adasum_optimizer.py).
    """
    if adasum_optimizer.applies(op):
        return adasum_optimizer.DistributedAdasumOptimizer(
            optimizer, named_parameters, compression, backward_passes_per_step,
            gradient_predivide_factor, groups, num_groups, gradient_as_bucket_view, process_set)
    cls = wrap_optimizer_class(_DistributedOptimizer, optimizer)
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               op, gradient_predivide_factor, groups, num_groups, sparse_as_dense,
               gradient_as_bucket_view, bucket_cap_mb, process_set)
