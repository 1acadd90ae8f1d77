"""The sharded optimizer's own state dicts (one per rank), and the whole state dict made
from all of them without a job: what a checkpoint saved rank by rank needs to go on with
another number of ranks, or in a plain torch optimizer.

A rank's state dict is its optimizer's over the shards (one flat tensor per bucket,
numbered by parameter group then bucket), plus SHARDED_KEY: this rank, the number of
ranks, the layout (per bucket: group, members (parameter, offset in it, offset in the
bucket, elements), padded elements; every rank owns an equal slice of each bucket) and
the wrapped optimizer's numbering of the parameters.
"""

import torch

# The key that marks a rank's own (sharded) state dict, as opposed to a whole one.
SHARDED_KEY = "horde_sharded"


def _bucket_order(layout, groups):
    """The buckets in the order of the shards' numbering in a state dict."""
    return [b for g in range(groups) for b, bucket in enumerate(layout) if bucket[0] == g]


def merge_sharded_state_dicts(state_dicts):
    """The whole state dict (the wrapped optimizer's format, which a plain torch optimizer
    and ShardedOptimizer.load_state_dict on any number of ranks take) from the state_dict()
    of every rank of one ShardedOptimizer, in any order. Runs anywhere, without a job; it
    needs the memory of the whole state."""
    marks = [d.get(SHARDED_KEY) if isinstance(d, dict) else None for d in state_dicts]
    if not marks or any(mark is None or "ranks" not in mark for mark in marks):
        raise ValueError("merge_sharded_state_dicts: expected the state_dict() of every rank "
                         "of a ShardedOptimizer")
    first = marks[0]
    ranks = first["ranks"]
    if sorted(mark["rank"] for mark in marks) != list(range(ranks)) or any(
            mark["layout"] != first["layout"] or mark["ranks"] != ranks for mark in marks):
        raise ValueError(f"merge_sharded_state_dicts: expected one state dict from each of "
                         f"the {ranks} ranks of one optimizer, got ranks "
                         f"{sorted(mark['rank'] for mark in marks)}")
    by_rank = sorted(state_dicts, key=lambda d: d[SHARDED_KEY]["rank"])
    numbering = first["parameters"]
    state = {}
    for k, b in enumerate(_bucket_order(first["layout"], len(numbering["group_sizes"]))):
        _, members, numel = first["layout"][b]
        slices = [d["state"].get(k, {}) for d in by_rank]
        for key, value in slices[0].items():
            if torch.is_tensor(value) and tuple(value.shape) == (numel // ranks,):
                _place(state, numbering, members, key, torch.cat([s[key] for s in slices]))
            else:
                for member in members:
                    index = numbering["indexes"][member[0]]
                    state.setdefault(index, {})[key] = (value.clone() if torch.is_tensor(value)
                                                        else value)
    return {"state": state,
            "param_groups": whole_param_groups(by_rank[0]["param_groups"],
                                               numbering["group_sizes"])}


def whole_param_groups(groups, group_sizes):
    """A whole state dict's param_groups: the hyperparameters of `groups`, and the
    parameters numbered in order, group_sizes[g] of them in group g."""
    whole, start = [], 0
    for group, count in zip(groups, group_sizes):
        hyper = {k: v for k, v in group.items() if k != "params"}
        whole.append(dict(hyper, params=list(range(start, start + count))))
        start += count
    return whole


def _place(state, numbering, members, key, flat):
    """Copies each member's piece of the whole bucket `flat` into its parameter's tensor."""
    for i, tensor_offset, offset, numel in members:
        shape = numbering["shapes"][i]
        whole = state.setdefault(numbering["indexes"][i], {}).get(key)
        if whole is None:
            whole = torch.empty(shape, dtype=flat.dtype, device=flat.device)
            state[numbering["indexes"][i]][key] = whole
        whole.view(-1)[tensor_offset:tensor_offset + numel] = flat[offset:offset + numel]


def to_cpu(value):
    """`value` (tensors in dicts and lists) with its tensors in host memory."""
    if torch.is_tensor(value):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: to_cpu(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_cpu(v) for v in value]
    return value
