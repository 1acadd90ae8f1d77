"""DistributedOptimizer(op=Adasum) on more than one rank: Horovod's delta optimizer.

Adasum combines what each rank would do to a parameter, not its raw gradient: when
backward has accumulated a parameter's gradient, a hook runs the wrapped optimizer's
step for that parameter alone, from a copy of its starting value (`start`), takes
delta = new - start, and starts an asynchronous Adasum allreduce of delta, so the
communication overlaps the rest of backward. step() waits for every delta and sets
parameter = start + reduced delta. Between backward and step() a parameter holds its
local delta, as in Horovod.

A step fails on every rank alike: a rank that cannot step or compress a parameter
(its own failure, raised by step()) reduces a placeholder of zeros under that name so
no rank waits, and step() ends with one small allreduce telling every rank whether any
rank failed; if one did, every parameter returns to its start on every rank and step()
raises everywhere.

With one rank (or any op but Adasum), DistributedOptimizer is the usual one
(optimizer.py); Adasum on one rank is the identity.
"""

import warnings
from contextlib import contextmanager

import torch

from horde.common.exceptions import HordeInternalError
from horde.common.process_sets import global_process_set
from horde.torch.gradient_hooks import count_backward_pass, register_gradient_hooks
from horde.torch.mpi_ops import Adasum, Min, allreduce_, allreduce_async_, rank, size, synchronize
from horde.torch.optimizer_class import wrap_optimizer_class
from horde.torch.parameter_names import parameter_names


def applies(op):
    """Whether DistributedOptimizer(op=op) is the delta optimizer of this module."""
    return op == Adasum and size() > 1


def DistributedAdasumOptimizer(optimizer, named_parameters, compression, backward_passes_per_step,
                               gradient_predivide_factor, groups, num_groups,
                               gradient_as_bucket_view, process_set):
    """The delta optimizer wrapping ``optimizer``, an instance of its own class (as
    DistributedOptimizer's result always is). Options it has no use for are refused or,
    where Horovod ignores them, ignored with a warning."""
    ranks = process_set.size()
    if ranks & (ranks - 1):
        where = "the job" if process_set is global_process_set else "the process set"
        raise NotImplementedError(f"op=Adasum needs a power-of-two number of ranks, but {where} "
                                  f"has {ranks} ranks; expected 1, 2, 4, 8, ... ranks")
    if gradient_predivide_factor != 1.0:
        raise ValueError("gradient_predivide_factor needs op=Average")
    if gradient_as_bucket_view:
        raise ValueError("gradient_as_bucket_view is not supported with op=Adasum: Adasum reduces "
                         "parameter deltas, not gradients")
    if groups is not None or num_groups:
        warnings.warn("groups and num_groups are ignored with op=Adasum (as in Horovod): each "
                      "parameter's delta is reduced on its own (small ones still fuse)")
    cls = wrap_optimizer_class(_DistributedAdasumOptimizer, optimizer)
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               process_set)


class _DistributedAdasumOptimizer:
    """Mixed in before the user's optimizer class (see wrap_optimizer_class)."""

    def __init__(self, params, named_parameters, compression, backward_passes_per_step,
                 process_set):
        super().__init__(params)
        if backward_passes_per_step < 1:
            raise ValueError("backward_passes_per_step must be at least 1")
        self._parameter_names = parameter_names(self.param_groups, named_parameters)
        self._delta_names = {p: f"adasum.{name}" for p, name in self._parameter_names.items()}
        self._compression = compression
        self._backward_passes_per_step = backward_passes_per_step
        self._process_set = process_set
        self._trainable = [p for group in self.param_groups for p in group["params"]
                           if p.requires_grad]
        self._delay = {p: backward_passes_per_step for p in self._trainable}
        self._starts = {p: torch.zeros_like(p, requires_grad=False) for p in self._trainable}
        self._pending = {}  # parameter -> (handle, compression context)
        self._error = None  # the first local failure of this step
        first = self._delta_names[self._trainable[0]] if self._trainable else "none"
        self._outcome_name = f"{first}.step_outcome"
        self._grad_accumulators = register_gradient_hooks(self._trainable, self._on_gradient_ready)

    def _on_gradient_ready(self, p):
        if count_backward_pass(self._delay, p):
            self._start(p)

    def _start(self, p):
        """Steps p alone, turns it into its delta and starts the delta's Adasum; once per
        step. A local failure is kept for step() and a placeholder is reduced instead."""
        if p in self._pending:
            return
        start = self._starts[p]
        with torch.no_grad():
            start.copy_(p)
        try:
            self._step_only(p)
            with torch.no_grad():
                p.sub_(start)
            compressed, ctx = self._compression.compress(p.detach())
            handle = allreduce_async_(compressed, name=self._delta_names[p], op=Adasum,
                                      process_set=self._process_set)
        except Exception as e:  # noqa: BLE001 - raised by step(), after every rank agrees
            self._error = self._error or e
            with torch.no_grad():
                p.copy_(start)
            handle, ctx = self._placeholder(p), None
        self._pending[p] = (handle, ctx)

    def _placeholder(self, p):
        """Zeros reduced under p's name, so that no rank waits for it; None if even that
        cannot be submitted (the others then wait until the stall limit)."""
        try:
            return allreduce_async_(torch.zeros_like(p.detach()), name=self._delta_names[p],
                                    op=Adasum, process_set=self._process_set)
        except Exception:  # noqa: BLE001 - the step has failed already
            return None

    def _step_only(self, p):
        """Runs the wrapped optimizer's step with p as its only parameter (its per-group
        settings and per-parameter state apply as usual)."""
        stashed = [group["params"] for group in self.param_groups]
        for group in self.param_groups:
            group["params"] = [p] if any(p is q for q in group["params"]) else []
        try:
            super().step()
        finally:
            for group, params in zip(self.param_groups, stashed):
                group["params"] = params

    def synchronize(self):
        """Does nothing, as in Horovod: with Adasum the wrapped optimizer has already
        stepped each parameter in its hook, and step() applies the reduced deltas."""

    @contextmanager
    def skip_synchronize(self):
        raise AssertionError(
            "skip_synchronize() is not supported with op=Adasum (nor in Horovod): the wrapped "
            "optimizer steps each parameter as soon as its gradient is ready, so gradients "
            "cannot be changed (e.g. clipped) between synchronize() and step()")
        yield  # pragma: no cover - makes this a generator for contextmanager

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        # Parameters whose hooks did not fire this step (no gradient on this rank, or
        # fewer than backward_passes_per_step passes) step now, so every rank reduces
        # every delta and no rank waits for a missing one.
        try:
            for p in self._trainable:
                self._start(p)
            deltas = self._wait_for_deltas()
            error = self._agree_on_outcome()
        finally:
            self._new_step()
        with torch.no_grad():
            for p, delta in deltas.items():
                # A failed step leaves every parameter where it started, on every rank.
                p.copy_(self._starts[p] if error is not None else self._starts[p] + delta)
        if error is not None:
            raise error
        return loss

    def _new_step(self):
        self._pending.clear()
        self._error = None
        for p in self._trainable:
            self._delay[p] = self._backward_passes_per_step

    def load_state_dict(self, state_dict):
        # A state loaded in the middle of a step (an elastic job going back to its last
        # commit after a failure between backward() and step()) ends that step: its
        # deltas' reductions are waited for and dropped, and the next backward() starts
        # afresh. The parameters are the loader's business (the model's state).
        for handle, _ in self._pending.values():
            if handle is not None:
                try:
                    synchronize(handle)
                except Exception:  # noqa: BLE001 - the step is being dropped
                    pass
        self._new_step()
        return super().load_state_dict(state_dict)

    def _wait_for_deltas(self):
        deltas = {}
        for p, (handle, ctx) in self._pending.items():
            try:
                if handle is None:
                    continue
                reduced = synchronize(handle)
                if self._error is None:
                    deltas[p] = self._compression.decompress(reduced, ctx)
            except Exception as e:  # noqa: BLE001 - raised once every rank agrees
                self._error = _step_failure(self._error, e)
            deltas.setdefault(p, None)
        return deltas

    def _agree_on_outcome(self):
        """The error step() raises on this rank (None when every rank's step worked). A
        failure every rank shares needs no agreement: each rank already raises it."""
        if _failed_everywhere(self._error):
            return self._error
        failed = torch.tensor([rank() if self._error is not None else 2**31 - 1],
                              dtype=torch.int32)
        try:
            allreduce_(failed, name=self._outcome_name, op=Min, process_set=self._process_set)
        except Exception as e:  # noqa: BLE001
            return self._error or e
        if self._error is not None or int(failed[0]) == 2**31 - 1:
            return self._error
        return HordeInternalError(
            f"DistributedOptimizer: the step failed on rank {int(failed[0])} (its own error is "
            "raised there), so every rank skips it; the next step starts afresh on every rank")

    def zero_grad(self, *args, **kwargs):
        if self._pending:
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but before "
                "optimizer.step(); with op=Adasum the parameters hold their local deltas "
                "until step() applies the reduced ones")
        return super().zero_grad(*args, **kwargs)


def _failed_everywhere(error):
    return getattr(error, "failed_on_every_rank", False)


def _step_failure(current, new):
    """The failure a step raises: the first, unless a later one is shared by every rank
    (which every rank raises alike)."""
    if current is None or (_failed_everywhere(new) and not _failed_everywhere(current)):
        return new
    return current
