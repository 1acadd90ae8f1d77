"""Where the time went, from a timeline file.

Each instant of the file's span is counted once: to the most advanced phase that any
tensor is in at that instant (communication, then copy out, copy in, queue, negotiation),
or to idle when no tensor is in any phase. So the lines add up to the span, and
"negotiation" is the time when tensors were only waiting for the ranks to agree.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from horde.timeline.trace import read_trace

# Most advanced first: an instant goes to the first of these in progress.
CATEGORIES = ("communication", "copy out", "copy in", "queue", "negotiation")
IDLE = "idle"


def phase_category(name):
    """The category of a phase name: NEGOTIATE*, QUEUE, MEMCPY_IN*, MEMCPY_OUT*, or else
    the collective itself (MPI_ALLREDUCE, NCCL_ALLREDUCE, MPI_BCAST, ...)."""
    if name.startswith("NEGOTIATE"):
        return "negotiation"
    if name.startswith("QUEUE"):
        return "queue"
    if "MEMCPY_IN" in name:
        return "copy in"
    if "MEMCPY_OUT" in name:
        return "copy out"
    return "communication"


def _is_phase(interval):
    # Horovod writes NEGOTIATE_<OP> as a top-level event; horde nests NEGOTIATE.
    return interval.depth > 0 or interval.name.startswith("NEGOTIATE")


@dataclass
class Summary:
    path: str
    span_ms: float = 0.0
    by_category_ms: dict = field(default_factory=dict)  # CATEGORIES and IDLE; adds up to span
    by_collective_ms: dict = field(default_factory=dict)  # the communication line, split
    tensor_time_ms: dict = field(default_factory=dict)  # phase name -> summed over tensors
    tensor_phase_ms: dict = field(default_factory=dict)  # (tensor, category) -> ms
    operations: Counter = field(default_factory=Counter)  # "ALLREDUCE" -> count
    # (name, ms in operations, operations), longest first
    tensors: list = field(default_factory=list)
    rounds: int = 0
    dropped: int = 0
    truncated: bool = False
    unclosed: int = 0


def _exclusive_times(phases, first_us, last_us):
    """Sweeps the phase boundaries; returns ({category: us}, {collective: us})."""
    boundaries = []
    for phase in phases:
        category = phase_category(phase.name)
        key = (CATEGORIES.index(category), phase.name if category == "communication" else "")
        boundaries += [(phase.start_us, 1, key), (phase.end_us, -1, key)]
    boundaries.sort(key=lambda boundary: boundary[0])
    active, by_category, by_collective = Counter(), defaultdict(float), defaultdict(float)
    previous = first_us

    def attribute(until):
        keys = [key for key, count in active.items() if count > 0]
        if not keys:
            by_category[IDLE] += until - previous
            return
        rank, collective = min(keys)
        by_category[CATEGORIES[rank]] += until - previous
        if collective:
            by_collective[collective] += until - previous

    for time, delta, key in boundaries:
        if time > previous:
            attribute(time)
            previous = time
        active[key] += delta
    if last_us > previous:
        attribute(last_us)
    return by_category, by_collective


def summarize(path):
    """Reads the timeline at `path` and returns its Summary (raises TraceError)."""
    trace = read_trace(path)
    phases = [interval for interval in trace.intervals if _is_phase(interval)]
    by_category, by_collective = _exclusive_times(phases, trace.first_us, trace.last_us)
    summary = Summary(path=path, span_ms=(trace.last_us - trace.first_us) / 1000,
                      truncated=trace.truncated, unclosed=trace.unclosed)
    summary.by_category_ms = {name: by_category.get(name, 0.0) / 1000
                              for name in CATEGORIES + (IDLE,)}
    summary.by_collective_ms = {name: us / 1000 for name, us in sorted(by_collective.items())}
    tensor_time, per_tensor, per_tensor_ops = defaultdict(float), defaultdict(float), Counter()
    for interval in trace.intervals:
        if _is_phase(interval):
            tensor_time[interval.name] += interval.duration_us / 1000
            key = (interval.row, phase_category(interval.name))
            summary.tensor_phase_ms[key] = (summary.tensor_phase_ms.get(key, 0.0)
                                            + interval.duration_us / 1000)
        if interval.depth == 0:
            per_tensor[interval.row] += interval.duration_us / 1000
            if not _is_phase(interval):
                summary.operations[interval.name] += 1
                per_tensor_ops[interval.row] += 1
    summary.tensor_time_ms = dict(sorted(tensor_time.items(), key=lambda item: -item[1]))
    summary.tensors = sorted(((name, ms, per_tensor_ops[name]) for name, ms in per_tensor.items()),
                             key=lambda item: (-item[1], item[0]))
    for instant in trace.instants:
        if instant.get("name") == "CYCLE_START":
            summary.rounds += 1
        elif instant.get("name") == "DROPPED_EVENTS":
            summary.dropped += int(instant.get("args", {}).get("count", 0))
    return summary


def _line(label, ms, span_ms=None, indent=2):
    """One aligned line; with `span_ms`, also the share of the span."""
    text = f"{' ' * indent}{label:<{28 - indent}}{ms:12.3f} ms"
    if span_ms:
        text += f"  {100 * ms / span_ms:5.1f}%"
    return text


def format_summary(summary, top=10):
    """The summary as text, for a terminal."""
    out = [f"timeline {summary.path}",
           f"span {summary.span_ms:.3f} ms, {len(summary.tensors)} tensors, "
           f"{sum(summary.operations.values())} operations"
           + (f", {summary.rounds} rounds (cycle marks)" if summary.rounds else ""),
           "",
           "where the time went (each instant once, to the most advanced phase in progress):"]
    for category in CATEGORIES + (IDLE,):
        out.append(_line(category, summary.by_category_ms[category], summary.span_ms))
        if category == "communication":
            out += [_line(name, ms, summary.span_ms, 4)
                    for name, ms in summary.by_collective_ms.items()]
    out += ["",
            "time in each phase, summed over tensors (a fused operation counts once per tensor):"]
    out += [_line(name, ms) for name, ms in summary.tensor_time_ms.items()]
    out += ["", "operations: " + (", ".join(f"{name} {count}" for name, count
                                            in sorted(summary.operations.items())) or "none")]
    out += ["", f"top {min(top, len(summary.tensors))} tensors by time in operations:"]
    out += [f"  {name:<40} {ms:12.3f} ms in {count} operations"
            for name, ms, count in summary.tensors[:top]]
    if summary.dropped:
        out.append(f"\nwarning: {summary.dropped} events were dropped (the recorder's queue was "
                   "full): the figures above miss them")
    if summary.truncated:
        out.append(f"\nnote: the file has no closing bracket (the run did not stop the timeline); "
                   f"read up to its last complete event, {summary.unclosed} open events closed "
                   "at its end")
    return "\n".join(out)
