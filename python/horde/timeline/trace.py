"""Reading a timeline file: Chrome-trace JSON as horde's Timeline writes it.

A file cut short (a crash before the closing bracket, even mid-event) is read up to its
last complete event, as Perfetto does."""

import json
from dataclasses import dataclass, field


class TraceError(Exception):
    """The file cannot be read as a Chrome trace; the message says why."""


@dataclass
class Interval:
    """One closed B/E pair on a row (a tensor)."""
    row: str
    name: str
    start_us: float
    end_us: float
    depth: int  # 0: an operation (or a top-level NEGOTIATE_*), 1 and more: a phase

    @property
    def duration_us(self):
        return self.end_us - self.start_us


@dataclass
class Trace:
    intervals: list = field(default_factory=list)
    instants: list = field(default_factory=list)  # the "i"/"I" event dicts
    first_us: float = 0.0
    last_us: float = 0.0
    event_count: int = 0
    truncated: bool = False  # no closing bracket: the writer did not finish
    unclosed: int = 0  # begin events without an end, closed at the last timestamp


def _decode_events(text, path):
    """Returns (list of event dicts, truncated)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return _decode_prefix(text, path), True
    if isinstance(document, dict) and isinstance(document.get("traceEvents"), list):
        return document["traceEvents"], False
    if isinstance(document, list):
        return document, False
    raise TraceError(f"{path} is not a Chrome trace: expected a JSON array of events "
                     "or an object with a 'traceEvents' array")


def _decode_prefix(text, path):
    """The complete events of an array whose end is missing."""
    decoder = json.JSONDecoder()
    start = text.find("[")
    if start < 0 or text[:start].strip():
        raise TraceError(f"{path} is not a Chrome trace: expected valid JSON, or a JSON array "
                         "of events cut short (starting with '[')")
    events, position = [], start + 1
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text) or text[position] == "]":
            return events
        try:
            event, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return events  # the last event was cut mid-way
        events.append(event)


def read_trace(path):
    """Reads `path` into a Trace of closed intervals per row, named after the tensors."""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            text = file.read()
    except OSError as error:
        raise TraceError(f"cannot read {path}: {error.strerror}") from None
    events, truncated = _decode_events(text, path)
    trace = Trace(truncated=truncated, event_count=len(events))
    row_names, stacks, times = {}, {}, []
    for event in events:
        if not isinstance(event, dict):
            continue
        phase, row = event.get("ph"), (event.get("pid"), event.get("tid"))
        if phase == "M" and event.get("name") == "thread_name":
            row_names[row] = str(event.get("args", {}).get("name", row[1]))
            continue
        if "ts" not in event:
            continue
        ts = float(event["ts"])
        times.append(ts)
        if phase in ("i", "I"):
            trace.instants.append(event)
        elif phase == "B":
            stacks.setdefault(row, []).append((event.get("name", "?"), ts))
        elif phase == "E" and stacks.get(row):
            name, start = stacks[row].pop()
            trace.intervals.append(Interval(row_names.get(row, str(row[1])), name, start, ts,
                                            len(stacks[row])))
    trace.first_us, trace.last_us = (min(times), max(times)) if times else (0.0, 0.0)
    for row, stack in stacks.items():
        for depth, (name, start) in enumerate(stack):
            trace.unclosed += 1
            trace.intervals.append(Interval(row_names.get(row, str(row[1])), name, start,
                                            trace.last_us, depth))
    return trace
