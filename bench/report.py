"""Prints the results the benchmark parts saved (JSON, one file per part and rank count)
as markdown tables: the targets first (those docs/performance.md lists), then the details.

    python bench/report.py RESULTS_DIR
"""

import datetime
import glob
import json
import os
import platform
import subprocess
import sys

import torch

# The plain tax counts as noise within the A/A difference of the run, or this much.
PLAIN_TAX_NOISE = 0.02
# Cores busy with other processes before or after the run above which the report warns.
BUSY_NOISE = 0.2


def load(directory):
    results = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path) as f:
            data = json.load(f)
        results.setdefault((data["part"], data["ranks"]), []).extend(data["rows"])
    return results


def size_text(nbytes):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def time_text(seconds):
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms" if seconds < 0.1 else f"{seconds * 1e3:.0f} ms"
    return f"{seconds * 1e6:.3g} µs"


def ratio_text(ratio):
    return f"{ratio:.3g}×" if ratio < 1000 else f"{ratio:.0f}×"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def machine():
    mpi = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    mpi = mpi.splitlines()[0] if mpi else "mpirun unknown"
    before = float(os.environ.get("BENCH_BUSY_BEFORE", "nan"))
    after = float(os.environ.get("BENCH_BUSY_AFTER", "nan"))
    warning = ("" if max(before, after) <= BUSY_NOISE else
               " — **other work was running: these timings are not reliable**")
    return (f"{datetime.date.today()}, {platform.node()}: {os.cpu_count()} cores, {mpi}, "
            f"torch {torch.__version__} (CPU). Cores busy with other work: {before:.2f} "
            f"before the run, {after:.2f} after{warning}.")


def bus_bandwidth(nbytes, seconds, ranks):
    return nbytes / seconds * 2 * (ranks - 1) / ranks / 1e9


def sweep_section(rows, ranks):
    out = []
    for r in rows:
        mpi = r["mpi"]
        cells = [size_text(r["bytes"]), time_text(mpi)]
        for key in ("horde", "horde_cpp", "gloo"):
            cells.append(f"{time_text(r[key])} ({ratio_text(r[key] / mpi)})")
        cells.append(" / ".join(f"{bus_bandwidth(r['bytes'], r[k], ranks):.2f}"
                                for k in ("mpi", "horde", "gloo")))
        out.append(cells)
    named = [f"{size_text(r['bytes'])}: Python {time_text(r['horde_named'])} "
             f"({ratio_text(r['horde_named'] / r['mpi'])}), C++ {time_text(r['horde_cpp_named'])} "
             f"({ratio_text(r['horde_cpp_named'] / r['mpi'])})"
             for r in rows if "horde_named" in r]
    note = ("\n\nhorde's calls above are unnamed (numbered, so each one is negotiated in "
            "full); the same loops named (cache hits): " + "; ".join(named) + "."
            if named else "")
    return (f"### Allreduce, float32 Sum, {ranks} ranks: time per call (× raw MPI)\n\n" +
            table(["size", "raw MPI", "horde (Python)", "horde (C++)", "gloo",
                   "bus GB/s: MPI / horde / gloo"], out) + note)


SET_ROWS = [
    ("mpi_each", "raw MPI, one call per tensor"),
    ("mpi_packed", "raw MPI, one call, bytes already packed"),
    ("mpi_packed_copies", "raw MPI, one call, with copies in and out"),
    ("horde", "horde (Python), async per tensor"),
    ("horde_no_fusion", "horde (Python), HORDE_FUSION_THRESHOLD=0"),
    ("horde_cpp", "horde (C++), async per tensor"),
    ("gloo_each", "gloo, async per tensor"),
    ("gloo_buckets", "gloo, 25 MiB buckets (all_reduce_coalesced)"),
]


def best_mpi(row):
    return min(row["mpi_each"], row["mpi_packed"], row["mpi_packed_copies"])


def sets_section(rows, ranks):
    header = ["contender"] + [f"{r['set']} ({r['tensors']} tensors, {r['bytes'] / 1e6:.3g} MB)"
                              for r in rows]
    body = [[label] + [f"{time_text(r[key])} ({ratio_text(r[key] / best_mpi(r))})" for r in rows]
            for key, label in SET_ROWS]
    body.append(["horde: negotiation rounds / responses per set"] +
                [f"{r['negotiation_rounds']} / {r['responses_executed']}" for r in rows])
    return (f"### Gradient sets, {ranks} ranks: submit all, then synchronize (× best raw MPI)\n\n"
            + table(header, body))


def overhead(row, key):
    return 1 - row["plain"] / row[key]


def training_input(row):
    if row["model"] == "transformer":
        return f"transformer encoder, {row['sequence_length']} synthetic tokens per sample"
    return f"{row['model']}, {row['image_size']}×{row['image_size']} images"


def training_section(row, ranks):
    labels = [("plain", "no communication, horde not running"),
              ("plain_again", "the same again (noise: A/A)"),
              ("plain_horde_idle", "no communication, horde initialized and idle"),
              ("plain_horde_idle_10ms", "the same, HORDE_CYCLE_TIME=10"),
              ("horde", "horde DistributedOptimizer"),
              ("horde_bucket_view", "horde, gradient_as_bucket_view=True"),
              ("ddp", "DistributedDataParallel (gloo)")]
    body = [[label, time_text(row[key]), time_text(row["cpu_per_step"][key]),
             f"{row['samples_per_s'][key]:.1f}", f"{overhead(row, key) * 100:+.1f}%"]
            for key, label in labels]
    return (f"### Training: {training_input(row)}, batch {row['batch_size']} per rank, "
            f"{row['parameters']} parameter tensors, {ranks} ranks\n\n" +
            table(["run", "step", "CPU per step (busiest rank)", "samples/s (all ranks)",
                   "1 − t_plain / t"], body) +
            f"\n\nhorde per step: {row['negotiation_rounds']:.0f} negotiation rounds, "
            f"{row['responses_executed']:.0f} responses executed.")


def training_sections(rows, ranks):
    return "\n\n".join(training_section(row, ranks) for row in rows)


def idle_section(rows, ranks):
    body = [["horde not running" if r["cycle_ms"] is None else
             f"horde idle, HORDE_CYCLE_TIME={r['cycle_ms']}",
             f"{r['cpu_per_s'] * 100:.1f}%", f"{r['rounds_per_s']:.0f}"] for r in rows]
    return (f"### Idle cost, {ranks} ranks: CPU time of the busiest rank while its main thread "
            "sleeps\n\n" + table(["state", "CPU (% of a core)", "negotiation rounds/s"], body))


def threads_section(rows, ranks):
    body = [[str(r["sets"]), f"{r['cpu_per_s'] * 100:.1f}%", time_text(r["latency_s"])]
            for r in rows]
    return (f"### A background thread per process set, {ranks} ranks: idle CPU of the busiest "
            "rank, and a 4 B allreduce on the global set from C++\n\n" +
            table(["process sets (each over all ranks)", "idle CPU (% of a core)",
                   "4 B allreduce"], body))


def verdict(met):
    return "met" if met else "**missed**"


def targets_section(results):
    rows = []
    sweep = {r["bytes"]: r for r in results.get(("allreduce_sweep", 2), [])}
    if 64 << 20 in sweep:
        r = sweep[64 << 20]
        ratio = r["horde"] / r["mpi"]
        rows.append(["64 MiB allreduce ≤ 1.05× raw MPI",
                     f"{ratio_text(ratio)} (C++ {ratio_text(r['horde_cpp'] / r['mpi'])})",
                     verdict(ratio <= 1.05)])
    if 4 in sweep:
        r = sweep[4]
        cpp, py = r["horde_cpp"] / r["mpi"], r["horde"] / r["mpi"]

        def named(key):
            if key not in r:
                return ""
            return f"; named {ratio_text(r[key] / r['mpi'])} ({time_text(r[key])})"
        rows.append(["4 B allreduce ≤ 10× raw MPI from C++",
                     f"{ratio_text(cpp)} ({time_text(r['horde_cpp'])} vs {time_text(r['mpi'])})"
                     f"{named('horde_cpp_named')}", verdict(cpp <= 10)])
        rows.append(["4 B allreduce ≤ 20× raw MPI from Python",
                     f"{ratio_text(py)} ({time_text(r['horde'])}){named('horde_named')}",
                     verdict(py <= 20)])
    sets = {r["set"]: r for r in results.get(("gradient_sets", 2), [])}
    if "resnet50" in sets:
        r = sets["resnet50"]
        ratio = r["horde"] / best_mpi(r)
        rows.append(["ResNet-50 gradient set ≤ 1.10× fastest raw MPI",
                     f"{ratio_text(ratio)} ({time_text(r['horde'])} vs "
                     f"{time_text(best_mpi(r))})", verdict(ratio <= 1.10)])
        speedup = min(r["gloo_each"], r["gloo_buckets"]) / r["horde"]
        rows.append(["ResNet-50 gradient set ≥ 2× faster than gloo",
                     f"{speedup:.2f}× faster than gloo's best", verdict(speedup >= 2)])
    if "1000x1KiB" in sets:
        r = sets["1000x1KiB"]
        py, cpp = r["horde"] / r["mpi_each"], r["horde_cpp"] / r["mpi_each"]
        rows.append(["1,000 × 1 KiB one by one ≤ 3× raw MPI per tensor, from Python",
                     f"{ratio_text(py)} ({time_text(r['horde'])} vs "
                     f"{time_text(r['mpi_each'])})", verdict(py <= 3)])
        rows.append(["1,000 × 1 KiB one by one ≤ 2× raw MPI per tensor, from C++",
                     f"{ratio_text(cpp)} ({time_text(r['horde_cpp'])})", verdict(cpp <= 2)])
    for row in results.get(("training", 2), []):
        horde, ddp = overhead(row, "horde"), overhead(row, "ddp")
        views = overhead(row, "horde_bucket_view")
        rows.append([f"{row['model']} training overhead ≤ ½ of DDP's",
                     f"horde {horde * 100:.1f}% (bucket views {views * 100:.1f}%), "
                     f"DDP {ddp * 100:.1f}%",
                     verdict(min(horde, views) <= ddp / 2)])
        tax, noise = overhead(row, "plain_horde_idle"), abs(overhead(row, "plain_again"))
        rows.append([f"{row['model']}: plain tax within noise of zero",
                     f"{tax * 100:+.1f}% (A/A noise {noise * 100:.1f}%)",
                     verdict(abs(tax) <= max(noise, PLAIN_TAX_NOISE))])
    return "### Targets, 2 ranks\n\n" + table(["target", "measured", ""], rows)


DETAILS = [("allreduce_sweep", sweep_section), ("gradient_sets", sets_section),
           ("training", training_sections),
           ("idle_cost", idle_section), ("process_set_threads", threads_section)]


def main():
    results = load(sys.argv[1])
    sections = [machine(), targets_section(results)]
    for part, section in DETAILS:
        for ranks in sorted(r for p, r in results if p == part):
            sections.append(section(results[(part, ranks)], ranks))
    print("\n\n".join(sections))


if __name__ == "__main__":
    main()
