"""Where the time went, from a timeline file.

Each instant of the file's span is counted once: to waiting for other ranks when some
tensor still waits for another rank's submission (the step cannot end before that rank
submits, whatever else is in flight), else to the most advanced phase any tensor is in
(communication, then copy out, copy in, queue, the negotiation protocol), or to the
framework when no tensor is in any phase: time outside horde, the model's own compute and
data loading. So the lines add up to the span. Waiting for other ranks
(WAITING_FOR_RANKS) is the part of a negotiation spent in rounds that could not decide it
because some rank had not submitted it yet; the protocol (NEGOTIATE) is the rest, the
round that decided it. Files written by Horovod, or by horde before it told the two
apart, count all of a negotiation as protocol.

horde works in the background while the framework computes (gradients are reduced during
the backward pass). When the file records when the framework's threads were blocked on
horde (FRAMEWORK_WAIT events), horde's phases count only while a thread was blocked: the
rest of the span is the framework's, and horde's work during it is reported apart as
hidden behind the framework.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from horde.timeline.trace import read_trace

WAITING = "waiting for other ranks"
# In the order an instant goes to them: the first in progress takes it.
CATEGORIES = (WAITING, "communication", "copy out", "copy in", "queue", "negotiation protocol")
FRAMEWORK = "framework (outside horde)"
# Blocked on horde while no tensor was in any phase (e.g. waking up after completion).
BETWEEN = "blocked, between phases"
FRAMEWORK_WAIT = "FRAMEWORK_WAIT"


def phase_category(name):
    """The category of a phase name: WAITING_FOR_RANKS, NEGOTIATE*, QUEUE, MEMCPY_IN*,
    MEMCPY_OUT*, or else the collective itself (MPI_ALLREDUCE, NCCL_ALLREDUCE, MPI_BCAST,
    ...)."""
    if name == "WAITING_FOR_RANKS":
        return WAITING
    if name.startswith("NEGOTIATE"):
        return "negotiation protocol"
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


def _is_framework_wait(interval):
    return interval.depth == 0 and interval.name == FRAMEWORK_WAIT


@dataclass
class Summary:
    path: str
    span_ms: float = 0.0
    # CATEGORIES, BETWEEN and FRAMEWORK: adds up to the span
    by_category_ms: dict = field(default_factory=dict)
    framework_waits: bool = False  # the file says when the framework was blocked on horde
    hidden_ms: float = 0.0  # horde's phases while the framework was not blocked on it
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
    straggler_reports: list = field(default_factory=list)  # STRAGGLER_REPORT args, in order


def _exclusive_times(phases, waits, first_us, last_us):
    """Sweeps the phase and wait boundaries; returns ({category: us}, {collective: us},
    hidden us). Without waits, every instant counts as if the framework were blocked."""
    boundaries = [(wait.start_us, 1, None) for wait in waits]
    boundaries += [(wait.end_us, -1, None) for wait in waits]
    for phase in phases:
        category = phase_category(phase.name)
        key = (CATEGORIES.index(category), phase.name if category == "communication" else "")
        boundaries += [(phase.start_us, 1, key), (phase.end_us, -1, key)]
    boundaries.sort(key=lambda boundary: boundary[0])
    active, by_category, by_collective = Counter(), defaultdict(float), defaultdict(float)
    blocked, hidden, previous = 0, 0.0, first_us

    def attribute(until):
        nonlocal hidden
        keys = [key for key, count in active.items() if count > 0]
        if waits and blocked <= 0:
            by_category[FRAMEWORK] += until - previous
            hidden += (until - previous) if keys else 0.0
            return
        if not keys:
            by_category[BETWEEN if waits else FRAMEWORK] += until - previous
            return
        rank, collective = min(keys)
        by_category[CATEGORIES[rank]] += until - previous
        if collective:
            by_collective[collective] += until - previous

    for time, delta, key in boundaries:
        if time > previous:
            attribute(time)
            previous = time
        if key is None:
            blocked += delta
        else:
            active[key] += delta
    if last_us > previous:
        attribute(last_us)
    return by_category, by_collective, hidden


def summarize(path):
    """Reads the timeline at `path` and returns its Summary (raises TraceError)."""
    trace = read_trace(path)
    phases = [interval for interval in trace.intervals if _is_phase(interval)]
    waits = [interval for interval in trace.intervals if _is_framework_wait(interval)]
    by_category, by_collective, hidden = _exclusive_times(phases, waits, trace.first_us,
                                                          trace.last_us)
    summary = Summary(path=path, span_ms=(trace.last_us - trace.first_us) / 1000,
                      truncated=trace.truncated, unclosed=trace.unclosed,
                      framework_waits=bool(waits), hidden_ms=hidden / 1000)
    summary.by_category_ms = {name: by_category.get(name, 0.0) / 1000
                              for name in CATEGORIES + (BETWEEN, FRAMEWORK)}
    summary.by_collective_ms = {name: us / 1000 for name, us in sorted(by_collective.items())}
    tensor_time, per_tensor, per_tensor_ops = defaultdict(float), defaultdict(float), Counter()
    for interval in trace.intervals:
        if _is_phase(interval):
            tensor_time[interval.name] += interval.duration_us / 1000
            key = (interval.row, phase_category(interval.name))
            summary.tensor_phase_ms[key] = (summary.tensor_phase_ms.get(key, 0.0)
                                            + interval.duration_us / 1000)
        if interval.depth == 0 and not _is_framework_wait(interval):
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
        elif instant.get("name") == "STRAGGLER_REPORT" and isinstance(instant.get("args"), dict):
            summary.straggler_reports.append(instant["args"])
    return summary


def _line(label, ms, span_ms=None, indent=2):
    """One aligned line; with `span_ms`, also the share of the span."""
    text = f"{' ' * indent}{label:<{28 - indent}}{ms:12.3f} ms"
    if span_ms:
        text += f"  {100 * ms / span_ms:5.1f}%"
    return text


def describe_straggler(report):
    """One report in words, as horde logs it."""
    rank = report.get("most_often_last")
    return (f"rank {rank} ({report.get('host', '?')}) arrived last in "
            f"{100 * report.get('share_last', 0):.0f}% of {report.get('rounds', 0)} rounds, by "
            f"{report.get('lag_median_ms', 0):.1f} ms (median; p90 "
            f"{report.get('lag_p90_ms', 0):.1f} ms): the other ranks spent "
            f"{100 * report.get('cost_to_others', 0):.0f}% of their time waiting for it")


def format_stragglers(reports):
    """The straggler section: what the windows of rounds (one report each) said."""
    if not reports:
        return ["stragglers: no report (one comes every 64 rounds that run collectives, "
                "on 2 ranks or more)"]
    named = Counter(report["straggler"] for report in reports
                    if report.get("straggler") is not None)
    if not named:
        return [f"stragglers: none in {len(reports)} windows of rounds (no rank was last in "
                "most rounds at a cost of over 5% of the others' time)"]
    rank, windows = named.most_common(1)[0]
    last = next(report for report in reversed(reports) if report.get("straggler") == rank)
    return [f"stragglers: rank {rank} in {windows} of {len(reports)} windows of rounds; "
            "in the last of them:", "  " + describe_straggler(last)]


def format_summary(summary, top=10):
    """The summary as text, for a terminal."""
    out = [f"timeline {summary.path}",
           f"span {summary.span_ms:.3f} ms, {len(summary.tensors)} tensors, "
           f"{sum(summary.operations.values())} operations"
           + (f", {summary.rounds} rounds (cycle marks)" if summary.rounds else ""),
           "",
           "where the time went (each instant once: to waiting when a tensor waits for "
           "another rank, else to the most advanced phase in progress"
           + ("; horde's phases only while the framework was blocked on horde):"
              if summary.framework_waits else "):")]
    for category in CATEGORIES + ((BETWEEN,) if summary.framework_waits else ()) + (FRAMEWORK,):
        out.append(_line(category, summary.by_category_ms[category], summary.span_ms))
        if category == "communication":
            out += [_line(name, ms, summary.span_ms, 4)
                    for name, ms in summary.by_collective_ms.items()]
    if summary.framework_waits:
        out.append(f"  horde's work hidden behind the framework (not above): "
                   f"{summary.hidden_ms:.3f} ms")
    out += ["", *format_stragglers(summary.straggler_reports)]
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


def format_comparison(summaries):
    """Several files' splits side by side, as shares of each file's span."""
    short = {"communication": "comm", "copy out": "copy out", "copy in": "copy in",
             "queue": "queue", "negotiation protocol": "protocol", WAITING: "waiting",
             BETWEEN: "between", FRAMEWORK: "framework"}
    labels = CATEGORIES + (BETWEEN, FRAMEWORK)
    width = max(len(summary.path) for summary in summaries)
    legend = ", ".join(f"{short[label]} = {label}" for label in labels if short[label] != label)
    out = ["each file's span, split (%): " + legend,
           f"{'file':<{width}} " + " ".join(f"{short[label]:>9}" for label in labels)]
    for summary in summaries:
        shares = [100 * summary.by_category_ms[label] / summary.span_ms if summary.span_ms else 0
                  for label in labels]
        out.append(f"{summary.path:<{width}} " + " ".join(f"{share:9.1f}" for share in shares))
    return "\n".join(out)
