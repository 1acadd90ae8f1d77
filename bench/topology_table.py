"""One topology's table for bench/topology.sh, from its jobs' JSON files.

  python bench/topology_table.py OUT PLAN

OUT.JOB.json for each job that ran (auto, off, file, mpiK: bench/topology_allreduce.py's
rows), PLAN what `horde-topology plan` printed for the bed's matrix (its bounds).
"""

import json
import os
import sys

# Open MPI's tuned allreduce algorithms, as bench/topology.sh forces them.
ALGORITHMS = {3: "rec. doubling", 4: "ring", 5: "seg. ring", 6: "Rabenseifner"}


def read_jobs(out):
    jobs = {}
    for job in ["auto", "off", "file"] + [f"mpi{k}" for k in ALGORITHMS]:
        if os.path.exists(f"{out}.{job}.json"):
            with open(f"{out}.{job}.json") as f:
                jobs[job] = {row["bytes"]: row for row in json.load(f)["rows"]}
    return jobs


def read_bounds(plan):
    """'bound_ms SIZE_BYTES MS', or 'size_bytes B ... bound_ms MS ...' lines."""
    bounds = {}
    if not os.path.exists(plan):
        return bounds
    with open(plan) as f:
        for line in f:
            words = line.split()
            if len(words) == 3 and words[0] == "bound_ms":
                bounds[int(words[1])] = float(words[2])
            elif "size_bytes" in words[:-1] and "bound_ms" in words[:-1]:
                bounds[int(words[words.index("size_bytes") + 1])] = float(
                    words[words.index("bound_ms") + 1])
    return bounds


def ms(value):
    return "-" if value is None else f"{value:.1f}"


def main():
    out, plan = sys.argv[1:3]
    jobs = read_jobs(out)
    bounds = read_bounds(plan)
    if not jobs:
        print("no results")
        return
    print("| size | MPI default | best MPI | horde off | horde auto | horde file "
          "| auto vs best MPI | bound |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in sorted({b for rows in jobs.values() for b in rows}):
        def horde(job):
            return jobs.get(job, {}).get(size, {}).get("horde_ms")
        default = jobs.get("auto", {}).get(size, {}).get("mpi_ms")
        best, which = default, "default"
        for k, name in ALGORITHMS.items():
            forced = jobs.get(f"mpi{k}", {}).get(size, {}).get("mpi_ms")
            if forced is not None and (best is None or forced < best):
                best, which = forced, name
        auto = horde("auto")
        ratio = "-" if auto is None or best is None else f"{auto / best:.2f}"
        print(f"| {size / (1 << 20):g} MiB | {ms(default)} | {ms(best)} ({which}) "
              f"| {ms(horde('off'))} | {ms(auto)} | {ms(horde('file'))} | {ratio} "
              f"| {ms(bounds.get(size))} |")


if __name__ == "__main__":
    main()
