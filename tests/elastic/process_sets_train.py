"""The script of the in-place tests with process sets (test_in_place_process_sets.py):
`process_sets_train.py [--die RANK:STEP] [--die-at-recovery RANK] [--bad-setting-once]`,
on 4 ranks.

Every rank registers the sets of SETS at init(), then trains (an ElasticSampler in the
state, one allreduce and one commit per step). Each time the training function starts
(at first, and after every in-place recovery) every rank checks every set: its ranks
and size must be those of its ranks before, renumbered over the live ranks (computed
here from an allgather of each live rank's first rank, not by horde), and an allreduce
on it must add exactly its members' values; a set with no live rank left must fail with
ValueError saying it lost its ranks. It prints, with one write per line:
  sets rank=R size=S first=F NAME=RANKS ...     (RANKS: 0+2, or "lost")
  final rank=R size=S steps=N

--die: the rank of first rank RANK SIGKILLs itself as step STEP starts.
--die-at-recovery: the rank of first rank RANK SIGKILLs itself as its first in-place
recovery syncs (after the job re-formed, while the others sync).
--bad-setting-once: the first in-place re-forming of the job fails on every rank (a
malformed HORDE_CYCLE_TIME while it starts horde again); the next one must succeed with
every process set kept.
"""

import argparse
import os
import signal

import torch

import horde.torch as hvd
from horde.torch.basics import _basics
from horde.torch.functions import allgather_object

SETS = {"loses_one": [0, 1, 2], "keeps_all": [2, 3], "one_left": [1, 3], "none_left": [1]}
STEPS = 8


def say(text):
    os.write(1, (text + "\n").encode())


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def expected_ranks(first_ranks, ranks_before):
    """The set's ranks now: the live ranks whose first rank was in it, in rank order."""
    return [now for now, first in enumerate(first_ranks) if first in ranks_before]


def check_sets(sets, first_rank):
    first_ranks = allgather_object(first_rank, name="first_ranks")
    found = []
    for name, process_set in sets.items():
        expected = expected_ranks(first_ranks, SETS[name])
        if not expected:
            try:
                hvd.allreduce(torch.ones(1), op=hvd.Sum, process_set=process_set)
            except ValueError as error:
                if "lost all its ranks" not in str(error):
                    raise AssertionError(f"set {name}: expected the error to say that it lost "
                                         f"all its ranks, got: {error}") from None
                found.append(f"{name}=lost")
                continue
            raise AssertionError(f"set {name} has no live rank left, yet its allreduce ran")
        if process_set.ranks != expected or process_set.size() != len(expected):
            raise AssertionError(f"set {name}: ranks {process_set.ranks} (size "
                                 f"{process_set.size()}), expected {expected}")
        if hvd.rank() in expected:
            total = hvd.allreduce(torch.tensor([float(first_rank + 1)], dtype=torch.float64),
                                  op=hvd.Sum, process_set=process_set, name=f"check.{name}")
            want = float(sum(first_ranks[r] + 1 for r in expected))
            if total.item() != want or process_set.rank() != expected.index(hvd.rank()):
                raise AssertionError(f"set {name}: allreduce gave {total.item()}, expected "
                                     f"{want}; rank in set {process_set.rank()}")
        found.append(f"{name}={'+'.join(map(str, expected))}")
    say(f"sets rank={hvd.rank()} size={hvd.size()} first={first_rank} {' '.join(found)}")


def break_the_first_reforming():
    """Makes the first in-place re-forming fail on every rank: horde cannot start again
    while HORDE_CYCLE_TIME is malformed. The value is fixed once that attempt failed."""
    recover, done = _basics.recover_in_place, []

    def recover_with_a_bad_setting_once():
        if done:
            return recover()
        done.append(True)
        good = os.environ.get("HORDE_CYCLE_TIME")
        os.environ["HORDE_CYCLE_TIME"] = "not-a-number"
        try:
            recover()
        finally:
            if good is None:
                del os.environ["HORDE_CYCLE_TIME"]
            else:
                os.environ["HORDE_CYCLE_TIME"] = good
        raise AssertionError("the re-forming succeeded with HORDE_CYCLE_TIME=not-a-number")
    _basics.recover_in_place = recover_with_a_bad_setting_once


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--die", default="")
    parser.add_argument("--die-at-recovery", type=int, default=-1)
    parser.add_argument("--bad-setting-once", action="store_true")
    args = parser.parse_args()
    sets = {name: hvd.ProcessSet(ranks) for name, ranks in SETS.items()}
    hvd.init(process_sets=list(sets.values()))
    first_rank = hvd.rank()
    if os.environ.get("JOB_PID_DIR"):  # for the tests' check that no rank outlives horderun
        with open(os.path.join(os.environ["JOB_PID_DIR"], f"rank.{first_rank}.gen.0"), "w") as f:
            f.write(str(os.getpid()))
    data = torch.utils.data.TensorDataset(torch.arange(64, dtype=torch.float64))
    sampler = hvd.elastic.ElasticSampler(data, shuffle=False)
    state = hvd.elastic.TorchState(sampler=sampler, step=0)
    if args.bad_setting_once:
        break_the_first_reforming()
    if args.die_at_recovery == first_rank:
        sync, syncs = state.sync, []

        def die_at_the_recovery_sync():
            syncs.append(1)
            if len(syncs) == 2:
                die()
            sync()
        state.sync = die_at_the_recovery_sync
    die_rank, die_step = map(int, args.die.split(":")) if args.die else (-1, -1)

    @hvd.elastic.run
    def train(state):
        check_sets(sets, first_rank)
        while state.step < STEPS:
            if first_rank == die_rank and state.step == die_step:
                die()
            hvd.allreduce(torch.ones(1), name="step")
            state.sampler.record_batch(state.step, 1)
            state.step += 1
            state.commit()

    train(state)
    say(f"final rank={hvd.rank()} size={hvd.size()} steps={state.step}")


if __name__ == "__main__":
    main()
