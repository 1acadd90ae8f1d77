"""ShardedOptimizer: data-parallel training with the optimizer state sharded across ranks
(ZeRO stages 1 and 2, Rajbhandari et al. 2020). Not in Horovod.

The core is C++ (torch_plugin/parameter_shards.h, shared with the C++ API): the trainable
parameters are laid out in flat buckets, each rank owns an equal slice of every bucket,
and the wrapped optimizer's class steps those slices, so its state (Adam's two moments,
SGD's momentum) is 1/N of the whole on each rank. A step reduce-scatters the gradients
into the slices, updates them, and allgathers them back into the parameters: the bytes
of one allreduce. What stays here is what only Python has: the optimizer class, the
parameter groups' hyperparameters, and the state dict formats.
"""

import inspect

import torch

from horde.common.process_sets import global_process_set, process_set_id_of
from horde.torch import _ops, awaited_parameters
from horde.torch.compression import Compression
from horde.torch.optimizer_class import wrap_optimizer_class
from horde.torch.parameter_names import parameter_names
from horde.torch.reduce_op import Adasum, Average, Sum
from horde.torch.sharded_state import SHARDED_KEY, to_cpu, whole_param_groups

_SET_TO_NONE_DEFAULT = inspect.signature(torch.optim.Optimizer.zero_grad).parameters[
    "set_to_none"].default


def _refuse(optimizer, op, compression):
    """Raises for what sharding cannot do, saying why and what to use instead."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("ShardedOptimizer: LBFGS needs whole parameters and gradients for its "
                         "line search and history; use hvd.DistributedOptimizer")
    if isinstance(optimizer, torch.optim.SparseAdam):
        raise ValueError("ShardedOptimizer: SparseAdam steps sparse gradients, which sharding "
                         "cannot split; use hvd.DistributedOptimizer")
    if op == Adasum:
        raise ValueError("ShardedOptimizer: Adasum combines whole gradients pairwise, which a "
                         "reduce-scatter cannot; use hvd.DistributedOptimizer(op=hvd.Adasum)")
    if op not in (Average, Sum):
        raise ValueError(f"ShardedOptimizer: op must be hvd.Average or hvd.Sum, got {op}")
    if compression not in (Compression.none, Compression.fp16):
        raise ValueError("ShardedOptimizer: compression must be Compression.none or "
                         "Compression.fp16")


class _ShardedOptimizer:
    """Mixed in before the user's optimizer class (see wrap_optimizer_class); its
    param_groups hold this rank's shards, with the user's hyperparameters."""

    _horde_sharded = True  # broadcast_optimizer_state reshards instead of copying

    def __init__(self, optimizer, named_parameters, stage, backward_passes_per_step,
                 compression, op, process_set, bucket_cap_mb, overlap_allgather):
        _refuse(optimizer, op, compression)
        if backward_passes_per_step < 1:
            raise ValueError("backward_passes_per_step must be at least 1")
        if bucket_cap_mb <= 0:
            raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
        names = parameter_names(optimizer.param_groups, named_parameters)
        # The parameters as the wrapped optimizer numbered them (a whole state dict's keys).
        self._model_groups = [list(group["params"]) for group in optimizer.param_groups]
        trainable = [(g, p) for g, params in enumerate(self._model_groups) for p in params
                     if p.requires_grad]
        if not trainable:
            raise ValueError("ShardedOptimizer: the optimizer has no trainable parameters")
        self._trainable = [p for _, p in trainable]
        numbering = {p: i for i, p in enumerate(p for group in self._model_groups for p in group)}
        # Each trainable parameter's number in a whole state dict.
        self._indexes = [numbering[p] for p in self._trainable]
        self._shards_args = (
            self._trainable, [g for g, _ in trainable], [names[p] for p in self._trainable],
            stage, backward_passes_per_step, op,
            process_set_id_of(process_set), max(1, int(bucket_cap_mb * (1 << 20))),
            compression is Compression.fp16, f"sharded.{names[self._trainable[0]]}")
        self._process_set = process_set
        self._overlap = bool(overlap_allgather)
        self._shards = None
        self._lay_out()
        hyper = [{k: v for k, v in group.items() if k != "params"}
                 for group in optimizer.param_groups]
        super().__init__([dict(h, params=params) for h, params in zip(hyper, self._group_shards())])
        self.defaults = dict(optimizer.defaults)

    def _lay_out(self):
        """Lays the parameters out in shards over the process set's ranks."""
        if self._shards is not None:
            awaited_parameters.forget(self, self._trainable)  # (never written now)
        self._shards = None  # the old shards' hooks go first
        self._shards = _ops.ParameterShards(*self._shards_args)
        self._layout = self._shards.layout()  # fixed until the ranks change
        self._reduced = False
        self._consolidated = None
        self._loaded_whole = None  # the whole state dict loaded since the last step

    def _group_shards(self):
        """This rank's shards, per parameter group."""
        shards = self._shards.shards()
        return [[s for b, s in enumerate(shards) if self._shards.group_of(b) == g]
                for g in range(len(self._model_groups))]

    def reshard(self):
        """Lays the shards out again over the process set's ranks as they are now (an
        elastic job that went on in place with fewer ranks) and drops the optimizer state,
        any step in progress with it: load a whole state dict next. What
        hvd.elastic.TorchState does on every restore."""
        self._lay_out()
        self.state.clear()
        for group, params in zip(self.param_groups, self._group_shards()):
            group["params"] = params

    def whole_state_dict(self):
        """Collective: the whole state dict (the wrapped optimizer's format) on every rank,
        in host memory; what an elastic commit keeps, which load_state_dict() takes on any
        number of ranks."""
        return to_cpu(self._whole_state())

    def synchronize(self):
        """Reduce-scatters this step's gradients into the shards (once per step)."""
        if not self._reduced:
            self._shards.reduce_gradients()  # (writes the last step's parameters first)
            awaited_parameters.forget(self, self._trainable)
            self._reduced = True

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Clips the reduced gradient as torch.nn.utils.clip_grad_norm_ would clip the whole
        (one small allreduce of the shards' norms); returns the total norm, a tensor."""
        self.synchronize()
        norm = self._shards.clip_grad_norm(float(max_norm), float(norm_type))
        return torch.tensor(norm, dtype=torch.float32)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self.synchronize()
        super().step()
        self._reduced = False
        self._consolidated = self._loaded_whole = None
        if self._overlap:
            self._shards.start_gather()
            awaited_parameters.await_parameters(self, self._trainable)
        else:
            self._shards.gather_parameters()
        return loss

    def wait_for_parameters(self):
        """Waits for the allgathers of the last step() and writes every parameter. With
        overlap_allgather=True, call it before reading or setting parameters other than
        through the model's forward (model.state_dict() for a checkpoint,
        model.load_state_dict(), an EMA copy); otherwise a no-op."""
        self._write_parameters()

    def _write_parameters(self, indexes=None):
        """Writes the buckets holding the parameters ``indexes`` (all: None), and those
        before them; the forward pre-hook of awaited_parameters calls it."""
        try:
            if indexes is None:
                self._shards.finish_gather()
            else:
                self._shards.finish_gather(indexes)
        finally:
            if not self._shards.gathering():
                awaited_parameters.forget(self, self._trainable)

    def zero_grad(self, set_to_none=_SET_TO_NONE_DEFAULT):
        if not self._reduced and self._shards.has_pending_work():
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but before "
                "optimizer.step() or optimizer.synchronize(); the gradients are already "
                "being reduced")
        for p in self._trainable:
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.detach_()
                p.grad.zero_()
        super().zero_grad(set_to_none=True)
        self._reduced = False

    # State dicts. A rank's own: the shards' state with SHARDED_KEY (sharded_state.py; what
    # a checkpoint saved rank by rank keeps). A whole one: keyed by the wrapped optimizer's
    # parameter numbering, loadable by a plain torch optimizer.

    def state_dict(self):
        if self._consolidated is not None:
            return self._consolidated
        state = super().state_dict()
        state[SHARDED_KEY] = {
            "rank": self._shards_rank(), "ranks": self._process_set.size(),
            "layout": self._layout, "parameters": {
                "indexes": self._indexes,
                "shapes": [tuple(p.shape) for p in self._trainable],
                "group_sizes": [len(params) for params in self._model_groups]}}
        return state

    def _shards_rank(self):
        return self._process_set.rank()

    def consolidate_state_dict(self, root_rank=0):
        """Gathers the whole state on ``root_rank`` (collective over the optimizer's
        ranks); there, the next state_dict() returns it in the wrapped optimizer's own
        format, until the next step. ``root_rank`` is a job rank in the optimizer's
        process set, as a broadcast's root is."""
        root_in_set = self._root_in_set(root_rank)
        whole = self._whole_state()
        self._consolidated = whole if self._shards_rank() == root_in_set else None

    def _root_in_set(self, root_rank):
        ranks = self._process_set.ranks
        if root_rank not in ranks:
            raise ValueError(f"ShardedOptimizer: root_rank {root_rank} is not in process set "
                             f"{self._process_set.process_set_id} (ranks {ranks})")
        return ranks.index(root_rank)

    def _whole_state(self):
        shards = self._shards.shards()
        state = {}
        for g in range(len(self.param_groups)):
            buckets = [b for b in range(len(shards)) if self._shards.group_of(b) == g]
            keys = sorted({k for b in buckets for k in self.state.get(shards[b], {})})
            for key in keys:
                values = [self.state[shards[b]][key] for b in buckets]
                if all(torch.is_tensor(v) and v.shape == shards[b].shape
                       for v, b in zip(values, buckets)):
                    for i, tensor in self._shards.unshard(buckets, values).items():
                        state.setdefault(self._indexes[i], {})[key] = tensor
                    continue
                for b, value in zip(buckets, values):
                    for member in self._layout[b][1]:
                        copy = value.clone() if torch.is_tensor(value) else value
                        state.setdefault(self._indexes[member[0]], {})[key] = copy
        return {"state": state, "param_groups": whole_param_groups(
            self.param_groups, [len(params) for params in self._model_groups])}

    def whole_state_on(self, root_rank):
        """Collective: on ``root_rank``, the whole state it knows: the whole state dict it
        loaded since the last step, else the job's current one gathered; None elsewhere."""
        self.consolidate_state_dict(root_rank)
        if self._shards_rank() != self._root_in_set(root_rank):
            return None
        return self._loaded_whole if self._loaded_whole is not None else self._consolidated

    def load_state_dict(self, state_dict):
        self._consolidated = self._loaded_whole = None
        self._reduced = False
        if SHARDED_KEY in state_dict:
            mine = state_dict[SHARDED_KEY]
            if mine["layout"] != self._layout or mine["rank"] != self._shards_rank():
                raise ValueError(
                    "ShardedOptimizer: this sharded state dict is rank "
                    f"{mine['rank']}'s of another layout (other ranks, parameters or bucket "
                    "size); load a whole one to reshard: consolidate_state_dict() then "
                    "state_dict() on the root, or hvd.merge_sharded_state_dicts() of every "
                    "rank's own")
            state = {k: v for k, v in state_dict.items() if k != SHARDED_KEY}
            return super().load_state_dict(state)
        self._loaded_whole = state_dict
        return super().load_state_dict(self._sharded_from_whole(state_dict))

    def _sharded_from_whole(self, whole):
        if len(whole["param_groups"]) != len(self._model_groups):
            raise ValueError(f"ShardedOptimizer: the state dict has "
                             f"{len(whole['param_groups'])} parameter groups, this optimizer "
                             f"{len(self._model_groups)}")
        saved = {int(k): v for k, v in whole["state"].items()}
        per_trainable = {i: saved.get(index, {}) for i, index in enumerate(self._indexes)}
        state = {}
        for b, (_, members, _) in enumerate(self._layout):
            first = per_trainable[members[0][0]]
            shard_state = {}
            for key, value in first.items():
                if torch.is_tensor(value) and value.numel() == self._trainable[
                        members[0][0]].numel() and value.dim() > 0:
                    shard_state[key] = self._shards.shard(
                        b, {m[0]: per_trainable[m[0]][key] for m in members})
                else:
                    shard_state[key] = value.clone() if torch.is_tensor(value) else value
            if shard_state:
                state[b] = shard_state
        groups = []
        shards = self._shards.shards()
        for g, saved_group in enumerate(whole["param_groups"]):
            hyper = {k: v for k, v in saved_group.items() if k != "params"}
            groups.append(dict(hyper, params=[b for b in range(len(shards))
                                              if self._shards.group_of(b) == g]))
        return {"state": state, "param_groups": groups}


def ShardedOptimizer(optimizer, named_parameters=None, stage=2, backward_passes_per_step=1,
                     compression=Compression.none, op=Average, process_set=global_process_set,
                     bucket_cap_mb=25, overlap_allgather=False):
    """Wraps ``optimizer`` so that its state is sharded across the ranks (ZeRO): each rank
    keeps and steps only its slice of every parameter, gradients are reduce-scattered and
    the updated parameters allgathered. The result is an instance of the optimizer's own
    class; its ``param_groups`` hold this rank's slices (flat tensors) with the
    hyperparameters of the optimizer's groups, so learning-rate schedulers work as usual.

    stage: 1 shards the optimizer state; 2 also drops each parameter's gradient once it is
        in its bucket (a rank keeps its slice of the gradients and the buffers of the
        buckets in flight, about two, between steps).
    backward_passes_per_step: local backward passes (gradients accumulate) per step; the
        reductions start on the last one, as backward produces each gradient.
    named_parameters: model.named_parameters(), used to name the collectives.
    compression: Compression.none or Compression.fp16 (gradients travel as float16).
    op: hvd.Average or hvd.Sum.
    bucket_cap_mb: the flat buckets' size: memory for gradients in flight.
    overlap_allgather: step() returns once the updated slices' allgathers are posted; each
        module's parameters are written as its next forward begins, so later buckets travel
        while earlier layers compute. Parameters read or set other than through a module's
        own forward (model.state_dict(), load_state_dict(), a weight shared between
        modules) need optimizer.wait_for_parameters() first; horde's broadcast_parameters
        and elastic commits call it themselves.
    clip_grad_norm_(max_norm) clips the whole gradient; consolidate_state_dict(root_rank)
    then state_dict() on the root gives a state dict of the wrapped optimizer's own format,
    which load_state_dict() takes on any number of ranks; state_dict() elsewhere is the
    rank's own (a checkpoint saved rank by rank: hvd.merge_sharded_state_dicts() of all of
    them is the whole one). In hvd.elastic.TorchState, a commit keeps the whole state and a
    restore reshards it over the ranks there are then.
    """
    process_set_id_of(process_set)
    cls = wrap_optimizer_class(_ShardedOptimizer, optimizer)
    return cls(optimizer, named_parameters, stage, backward_passes_per_step, compression, op,
               process_set, bucket_cap_mb, overlap_allgather)
