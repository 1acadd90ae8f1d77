"""The training script of the elastic tests, written as a Horovod elastic script is:
`elastic_train.py [--epochs E] [--commit-every K] [--delay S] [--die RANK:WHERE:N]
[--ballast-mb M] [--sharded STAGE]`.

--die makes rank RANK (of the first generation) SIGKILL itself: WHERE=commit inside its
N-th commit, after saving it and before the commit's allreduce; WHERE=recovery N
milliseconds into its first in-place recovery (while the others re-form the job);
WHERE=sync as its N-th sync() starts (the first is the generation's, the next ones those
of in-place recoveries), while the others sync; WHERE=reset at the start of its N-th
training step after its first reset (an in-place recovery, or a later generation's
start), before the step's first collective.
--ballast-mb adds M MB of float32 zeros to the state every commit carries (for the
costs in bench/elastic_cost.py); the training is unchanged.
--sharded trains with hvd.ShardedOptimizer of that stage instead of DistributedOptimizer:
the same trajectory, with the optimizer state resharded over each generation's ranks.

Each rank reports with one write per line:
  start rank=R size=S gen=G commit=N epoch=E batch=B lr=L pid=P   (after sync)
  step rank=R size=S gen=G epoch=E batch=B                        (after each step)
  final rank=R size=S weights=W                                   (W: float64 values)
and writes its pid to $JOB_PID_DIR/rank.R.gen.G when that is set. The model, data and
training rule are those that reference.py replays in one process.
"""

import argparse
import os
import signal
import threading
import time

import torch

import horde.torch as hvd

from reference import BASE_LR, BATCH, loss_fn, make_data, make_model


def say(text):
    os.write(1, (text + "\n").encode())


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def arm(state, spec, first_rank):
    """Installs --die's self-kill on this process when it is the rank named; returns what
    each training step calls first."""
    if not spec:
        return lambda: None
    rank_, where, n = spec.split(":")
    if int(rank_) != first_rank:
        return lambda: None
    if where == "reset":
        return arm_after_reset(state, int(n))
    if where == "sync":
        sync, syncs = state.sync, []

        def die_at_sync():
            syncs.append(1)
            if len(syncs) == int(n):
                die()
            sync()
        state.sync = die_at_sync
    elif where == "commit":
        save = state.save

        def save_then_die():
            save()
            if state._commits == int(n):
                die()
        state.save = save_then_die
    elif where == "recovery":
        restore = state.restore

        def restore_then_die_soon():
            if int(n) == 0:
                die()
            threading.Timer(int(n) / 1000, die).start()
            restore()
        state.restore = restore_then_die_soon
    else:
        raise SystemExit(f"--die {spec}: WHERE must be commit, recovery, sync or reset")
    return lambda: None


def arm_after_reset(state, n):
    """--die RANK:reset:N: the step hook that dies in the N-th step after the first reset."""
    on_reset, steps_left = state.on_reset, []

    def count_from_first_reset():
        on_reset()
        if not steps_left:
            steps_left.append(n)
    state.on_reset = count_from_first_reset

    def step():
        if steps_left:
            steps_left[0] -= 1
            if steps_left[0] == 0:
                die()
    return step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--commit-every", type=int, default=2)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--die", default="")
    parser.add_argument("--ballast-mb", type=int, default=0)
    parser.add_argument("--sharded", type=int, choices=(1, 2))
    args = parser.parse_args()
    hvd.init()
    gen = int(os.environ.get("HORDE_ELASTIC_GENERATION", "0"))
    pid_dir = os.environ.get("JOB_PID_DIR")
    if pid_dir:
        with open(os.path.join(pid_dir, f"rank.{hvd.rank()}.gen.{gen}"), "w") as f:
            f.write(str(os.getpid()))
    data = make_data()
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=BASE_LR * hvd.size(), momentum=0.9)
    if args.sharded:
        optimizer = hvd.ShardedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         stage=args.sharded)
    else:
        optimizer = hvd.DistributedOptimizer(optimizer,
                                             named_parameters=model.named_parameters())
    sampler = hvd.elastic.ElasticSampler(data, shuffle=True, seed=1)
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, sampler=sampler)
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, batch=0,
                                   ballast=torch.zeros(args.ballast_mb * 2**18))

    def scale_lr():  # the learning-rate reset callback
        for group in optimizer.param_groups:
            group["lr"] = BASE_LR * hvd.size()
    state.register_reset_callbacks([scale_lr])
    step_starts = arm(state, args.die, hvd.rank())

    @hvd.elastic.run
    def train(state):
        say(f"start rank={hvd.rank()} size={hvd.size()} gen={gen} commit={state._commits} "
            f"epoch={state.epoch} batch={state.batch} lr={optimizer.param_groups[0]['lr']:g} "
            f"pid={os.getpid()}")
        while state.epoch < args.epochs:
            for batch_idx, (x, y) in enumerate(loader):
                step_starts()
                optimizer.zero_grad()
                loss_fn(model(x), y).backward()
                optimizer.step()
                state.sampler.record_batch(batch_idx, BATCH)
                state.batch += 1
                say(f"step rank={hvd.rank()} size={hvd.size()} gen={gen} epoch={state.epoch} "
                    f"batch={state.batch}")
                time.sleep(args.delay)
                if state.batch % args.commit_every == 0:
                    state.commit()
            state.epoch += 1
            state.batch = 0
            state.sampler.set_epoch(state.epoch)
            state.commit()

    train(state)
    weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()
    say(f"final rank={hvd.rank()} size={hvd.size()} weights={','.join(repr(w) for w in weights)}")


if __name__ == "__main__":
    main()
