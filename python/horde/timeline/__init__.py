"""Reading horde timelines (Chrome-trace JSON, viewable in https://ui.perfetto.dev).

From a shell: ``python -m horde.timeline summary FILE [--png OUT.png]``. From Python:
``print(format_summary(summarize(path)))``. Pure Python; matplotlib only for charts.
"""

from horde.timeline.summary import Summary, format_summary, summarize
from horde.timeline.trace import TraceError, read_trace

__all__ = ["Summary", "TraceError", "format_summary", "read_trace", "summarize"]
