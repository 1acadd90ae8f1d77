"""The costs of elastic training (README "Elastic training"), on this machine:

    .venv/bin/python bench/elastic_cost.py                  # both parts, a few minutes
    .venv/bin/python bench/elastic_cost.py --recovery-only  # part 2

1. commit(): one TorchState.commit() of torchvision's ResNet-50 (model + SGD momentum)
   in a 1-rank elastic job directory on tmpfs: the in-memory snapshot, the write to
   /dev/shm, and the allreduce of the host-update check; median of 5.
2. recovery: a 3-rank elastic horderun job (tests/elastic/elastic_train.py, a small model)
   whose rank 2 is SIGKILLed; the time from the kill to the survivors' first completed
   training step after it. Median of 3 runs, for each elastic mode this MPI offers:
   restart (a new generation of processes) and, where the MPI has the fault-tolerance
   extension, in place (the survivors' own processes); each also with the state carrying
   205 MB more (--ballast-mb, what ResNet-50 with SGD momentum commits).
"""

import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HORDERUN = os.path.join(os.path.dirname(sys.executable), "horderun")


def commit_cost():
    directory = tempfile.mkdtemp(prefix="horde-elastic-bench-", dir="/dev/shm")
    os.environ["HORDE_ELASTIC_DIR"] = directory
    try:
        _time_commits(directory)
    finally:
        subprocess.run(["rm", "-rf", directory], check=True)


def _time_commits(directory):
    import torch
    import torchvision
    import horde.torch as hvd
    hvd.init()
    model = torchvision.models.resnet50()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 3, 64, 64)).sum().backward()
    optimizer.step()  # creates the momentum buffers: the state a commit carries
    state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)
    state.sync()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        state.commit()
        times.append(time.perf_counter() - start)
    size = sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory))
    hvd.shutdown()
    print(f"commit() of ResNet-50 + SGD momentum: median {statistics.median(times) * 1e3:.0f} ms "
          f"(min {min(times) * 1e3:.0f}, max {max(times) * 1e3:.0f}), {size / 1e6:.0f} MB on tmpfs")


def one_recovery(tmp, mode, ballast_mb):
    hosts = os.path.join(tmp, "discover.sh")
    with open(hosts, "w") as f:
        f.write("#!/bin/sh\necho localhost:3\n")
    os.chmod(hosts, 0o755)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tests", "elastic"))
    env.pop("HORDE_ELASTIC_DIR", None)
    job = subprocess.Popen([HORDERUN, "-np", "3", "--min-np", "2", "--elastic-mode", mode,
                            "--host-discovery-script", hosts, sys.executable,
                            os.path.join(ROOT, "tests/elastic/elastic_train.py"),
                            "--epochs", "3", "--delay", "0.05", "--ballast-mb", str(ballast_mb)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    pid, killed, resumed = None, None, None
    for line in job.stdout:
        if pid is None and (m := re.match(r"start rank=2 size=3 gen=0 .* pid=(\d+)", line)):
            pid = int(m.group(1))
        elif pid and killed is None and line.startswith("step rank=2 size=3 gen=0 epoch=0 batch=3"):
            os.kill(pid, signal.SIGKILL)
            killed = time.monotonic()
        elif killed and line.startswith("step ") and " size=2 " in line:
            resumed = time.monotonic()
            break
    job.stdout.read()
    err = job.stderr.read()
    job.wait(timeout=120)
    if resumed is None:
        sys.exit(f"the {mode} job did not resume after the kill:\n{err}")
    return resumed - killed


def in_place_possible():
    out = subprocess.run(["ompi_info"], capture_output=True, text=True).stdout if shutil.which(
        "ompi_info") else ""
    return "FT MPI support: yes" in out


def recovery_time():
    modes = ["restart"] + (["in-place"] if in_place_possible() else [])
    if len(modes) == 1:
        print("recovery in place: not measured (this MPI has no fault-tolerance extension)")
    for ballast_mb in (0, 205):
        for mode in modes:
            times = []
            for _ in range(3):
                with tempfile.TemporaryDirectory() as tmp:
                    times.append(one_recovery(tmp, mode, ballast_mb))
            each = ", ".join(f"{t:.2f}" for t in times)
            print(f"recovery from a SIGKILLed rank, {mode:8} (3 -> 2 ranks, state +{ballast_mb} "
                  f"MB; kill to the survivors' next step): median "
                  f"{statistics.median(times):.2f} s ({each})")


if __name__ == "__main__":
    if "--commit-only" in sys.argv:
        commit_cost()
    elif "--recovery-only" in sys.argv:
        recovery_time()
    else:
        subprocess.run([sys.executable, __file__, "--commit-only"], check=True)
        recovery_time()
