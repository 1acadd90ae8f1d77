"""The elastic tests' model and data, and the deterministic reference: one process that
replays what the ranks of each generation compute.

The rule it checks: after a reset, the job goes on from the newest commit (model,
optimizer, sampler and counters as they were then), with the new number of ranks; the
unprocessed samples of the epoch are re-partitioned over them, and the learning-rate
callback sets lr = BASE_LR * size. So the final weights equal those of: the steps of
generation 0 up to commit N, then, from that commit's state, the steps with the next
generation's size (and so on), with every rank's gradient averaged.
"""

import math
import re
import sys

import torch

BASE_LR = 0.01
BATCH = 4
SAMPLES = 48


def make_data():
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(SAMPLES, 6, generator=generator, dtype=torch.float64)
    y = x @ torch.arange(1.0, 7.0, dtype=torch.float64).unsqueeze(1) + 0.5
    return torch.utils.data.TensorDataset(x, y)


def make_model():
    torch.manual_seed(0)
    return torch.nn.Linear(6, 1).double()


def loss_fn(output, target):
    return torch.nn.functional.mse_loss(output, target)


def replay(generations, epochs, commit_every):
    """`generations`: [(size, commit the next generation resumes from), ..., (size, None)].
    Returns the final weights (float64 list)."""
    data = make_data()
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=BASE_LR, momentum=0.9)
    state = {"epoch": 0, "batch": 0, "processed_num": 0, "commits": 0}
    for size, stop in generations:
        for group in optimizer.param_groups:
            group["lr"] = BASE_LR * size
        saved = _generation(model, optimizer, data, state, size, stop, epochs, commit_every)
        if saved is not None:
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
            state = saved["state"]
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()


# A rank's last line in elastic_train.py: its rank, the job's size and its weights.
FINAL = re.compile(r"^final rank=(\d+) size=(\d+) weights=(\S+)")


def check_final_weights(lines, size, plan, epochs, commit_every):
    """Exits with what is wrong unless `lines` hold a final line from each of `size`
    ranks, all with one set of weights, equal to replay(plan); returns the largest
    relative difference."""
    finals = [m.groups() for m in filter(None, map(FINAL.match, lines))]
    if sorted(int(rank) for rank, _, _ in finals) != list(range(size)) or \
            {int(got) for _, got, _ in finals} != {size}:
        sys.exit(f"expected a final line from each of {size} ranks, got "
                 f"{[(rank, got) for rank, got, _ in finals]}")
    if len({weights for _, _, weights in finals}) != 1:
        sys.exit("the ranks ended with different weights")
    weights = [float(w) for w in finals[0][2].split(",")]
    expected = replay(plan, epochs=epochs, commit_every=commit_every)
    error = max(abs(w - e) / max(abs(e), 1e-12) for w, e in zip(weights, expected))
    if len(weights) != len(expected) or error > 1e-9:
        sys.exit(f"final weights {weights} differ from the reference replay {expected} "
                 f"of {plan}")
    return error


def _generation(model, optimizer, data, state, size, stop, epochs, commit_every):
    """Trains with `size` ranks; returns the snapshot of commit `stop` once made, or at
    once when the generation resumed from that very commit (its ranks failed again before
    the next one: what they trained meanwhile is lost)."""
    from horde.torch.elastic.sampler import epoch_order, partition
    import copy

    def snapshot():
        return {"model": copy.deepcopy(model.state_dict()),
                "optimizer": copy.deepcopy(optimizer.state_dict()),
                "state": copy.deepcopy(state)}

    def commit():
        state["commits"] += 1
        return snapshot() if state["commits"] == stop else None

    if stop is not None and state["commits"] == stop:
        return snapshot()

    while state["epoch"] < epochs:
        remaining = epoch_order(len(data), state["epoch"], 1, True)[state["processed_num"]:]
        parts = [partition(remaining, r, size) for r in range(size)]
        for b in range(math.ceil(len(parts[0]) / BATCH)):
            optimizer.zero_grad()
            grads = []
            for part in parts:
                idx = part[b * BATCH:(b + 1) * BATCH]
                model.zero_grad()
                loss_fn(model(data.tensors[0][idx]), data.tensors[1][idx]).backward()
                grads.append([p.grad.clone() for p in model.parameters()])
            state["processed_num"] += BATCH * size
            for p, *gs in zip(model.parameters(), *grads):
                p.grad = sum(gs) / size
            optimizer.step()
            state["batch"] += 1
            if state["batch"] % commit_every == 0 and (saved := commit()):
                return saved
        state["epoch"] += 1
        state["batch"] = 0
        state["processed_num"] = 0
        if saved := commit():
            return saved
    return None
