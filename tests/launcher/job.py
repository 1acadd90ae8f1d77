"""The program the launcher tests start on every rank: `job.py MODE [options]`.

Each rank reports with one write per line, so lines of different ranks never mix.

  collectives  allreduce, allgather and broadcast checked against values computed here;
               the topology (local_rank, local_size, cross_rank, cross_size) checked
               against the hosts the ranks really run on. Prints "ok rank=R ..." per rank.
  fail R CODE  rank R exits with CODE at once; the others sleep (mpirun must stop them)
  sleep        every rank sleeps
  env NAME...  prints "env rank=R NAME=value" for each variable

Every mode first writes this rank's pid to $JOB_PID_DIR/rank.R when that is set, so a
test can check that no rank outlives the job.
"""

import argparse
import os
import socket
import sys
import time

import torch

import horde.torch as hvd


def say(text):
    os.write(1, (text + "\n").encode())


def fail(text):
    os.write(2, (f"rank {hvd.rank()}: {text}\n").encode())
    sys.exit(1)


def all_hostnames():
    """Every rank's hostname, in rank order, through a plain allgather of bytes."""
    name = socket.gethostname().encode()[:64].ljust(64, b"\0")
    names = hvd.allgather(torch.tensor(list(name), dtype=torch.uint8).view(1, 64))
    return [bytes(row.tolist()).rstrip(b"\0").decode() for row in names]


def check_topology(local_size):
    """Ranks fill hosts in order (--map-by slot), so rank r sits on host r // local_size."""
    rank, size = hvd.rank(), hvd.size()
    hosts = all_hostnames()
    expected = {
        "local_size": local_size, "local_rank": rank % local_size,
        "cross_size": size // local_size, "cross_rank": rank // local_size,
    }
    for name, value in expected.items():
        actual = getattr(hvd, name)()
        if actual != value:
            fail(f"{name} is {actual}, expected {value}")
    for a in range(size):
        for b in range(size):
            if (hosts[a] == hosts[b]) != (a // local_size == b // local_size):
                fail(f"ranks {a} and {b} run on {hosts[a]} and {hosts[b]}")


def collectives(args):
    rank, size = hvd.rank(), hvd.size()
    total = hvd.allreduce(torch.full((4,), float(rank)), op=hvd.Sum)
    if total.tolist() != [float(size * (size - 1) // 2)] * 4:
        fail(f"allreduce gave {total.tolist()}")
    gathered = hvd.allgather(torch.full((rank + 1,), rank, dtype=torch.int32))
    if gathered.tolist() != [r for r in range(size) for _ in range(r + 1)]:
        fail(f"allgather gave {gathered.tolist()}")
    root = size - 1
    sent = hvd.broadcast(torch.arange(3) * (rank + 1), root_rank=root)
    if sent.tolist() != [0, size, 2 * size]:
        fail(f"broadcast gave {sent.tolist()}")
    # Large allreduces make traffic that interface counters can see.
    elements = args.megabytes * (1 << 20) // 4
    for i in range(args.repeat):
        big = hvd.allreduce(torch.ones(elements), op=hvd.Sum, name=f"big.{i}")
        if elements and not bool((big == size).all()):
            fail("large allreduce gave a wrong sum")
    check_topology(args.local_size or hvd.local_size())
    say(f"ok rank={rank} size={size} local_rank={hvd.local_rank()} "
        f"local_size={hvd.local_size()} cross_rank={hvd.cross_rank()} "
        f"cross_size={hvd.cross_size()} host={socket.gethostname()}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["collectives", "fail", "sleep", "env"])
    parser.add_argument("values", nargs="*")
    parser.add_argument("--local-size", type=int, default=0,
                        help="the ranks per host to expect (default: what horde says)")
    parser.add_argument("--megabytes", type=int, default=0, help="size of the large allreduce")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    hvd.init()
    pid_dir = os.environ.get("JOB_PID_DIR")
    if pid_dir:
        with open(os.path.join(pid_dir, f"rank.{hvd.rank()}"), "w") as f:
            f.write(str(os.getpid()))
    if args.mode == "collectives":
        collectives(args)
    elif args.mode == "fail":
        if hvd.rank() == int(args.values[0]):
            os._exit(int(args.values[1]))  # like a crash: no clean-up, no MPI_Finalize
        time.sleep(300)
    elif args.mode == "sleep":
        time.sleep(300)
    else:
        for name in args.values:
            say(f"env rank={hvd.rank()} {name}={os.environ.get(name, '<unset>')}")


if __name__ == "__main__":
    main()
