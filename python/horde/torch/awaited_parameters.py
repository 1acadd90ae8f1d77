"""Parameters whose updated values are still travelling after a sharded step
(ShardedOptimizer(overlap_allgather=True)). A forward pre-hook on every module writes the
module's own parameters before it runs, so the allgathers of later layers overlap the
forward of earlier ones; horde's functions that read or write parameters write them all
first (write_all)."""

import weakref

import torch

# id(parameter) -> (weak references to the parameter and to its optimizer, its index
# there). The parameter's own reference tells it from a later tensor given its freed id.
_awaited = {}
_hook = None


def await_parameters(optimizer, params):
    """Marks ``params`` (the optimizer's trainable parameters, in its numbering) as written
    by ``optimizer._write_parameters(indexes)``."""
    global _hook
    optimizer_ref = weakref.ref(optimizer)
    for i, p in enumerate(params):
        _awaited[id(p)] = (weakref.ref(p), optimizer_ref, i)
    if _hook is None:
        _hook = torch.nn.modules.module.register_module_forward_pre_hook(_before_forward)


def _resolve(p):
    """(optimizer, index) awaiting ``p``, or None; drops an entry that is not p's any
    more (its parameter or optimizer freed)."""
    entry = _awaited.get(id(p))
    if entry is None:
        return None
    param_ref, optimizer_ref, index = entry
    optimizer = optimizer_ref()
    if param_ref() is not p or optimizer is None:
        del _awaited[id(p)]
        return None
    return optimizer, index


def forget(optimizer, params):
    """Drops ``optimizer``'s marks: its parameters are written (or never will be)."""
    for p in params:
        found = _resolve(p)
        if found is not None and found[0] is optimizer:
            del _awaited[id(p)]


def write_all():
    """Writes every awaited parameter, of every optimizer."""
    optimizers = {}
    for param_ref, optimizer_ref, _ in list(_awaited.values()):
        optimizer = optimizer_ref()
        if optimizer is not None and param_ref() is not None:
            optimizers[id(optimizer)] = optimizer
    for optimizer in optimizers.values():
        optimizer.wait_for_parameters()
    _awaited.clear()


def _before_forward(module, inputs):
    if not _awaited:
        return
    found = {}
    for p in module._parameters.values():
        resolved = _resolve(p) if p is not None else None
        if resolved is not None:
            optimizer, index = resolved
            found.setdefault(id(optimizer), (optimizer, []))[1].append(index)
    for optimizer, indexes in found.values():
        optimizer._write_parameters(indexes)
