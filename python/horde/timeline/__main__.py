"""python -m horde.timeline summary FILE [FILE ...] [--png OUT.png] [--top N]

Several files (e.g. one per rank, from HORDE_TIMELINE=/tmp/timeline-{rank}.json) are
summarized one after the other and then compared side by side; the chart then shows
each file's split."""

import argparse
import sys

from horde.timeline.chart import ChartError, save_chart, save_comparison_chart
from horde.timeline.summary import format_comparison, format_summary, summarize
from horde.timeline.trace import TraceError


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m horde.timeline",
        description="Reads a horde timeline (HORDE_TIMELINE=file, or hvd.start_timeline) and "
                    "prints where the time went.")
    commands = parser.add_subparsers(dest="command", required=True)
    summary_parser = commands.add_parser(
        "summary", help="print the time in communication, copies, queueing, the negotiation "
                        "protocol, waiting for other ranks and the framework, the straggler "
                        "report, the operations and the top tensors")
    summary_parser.add_argument("files", nargs="+", metavar="FILE",
                                help="the timeline's JSON file (a file cut short is fine); "
                                     "several (one per rank) are compared")
    summary_parser.add_argument("--png", metavar="OUT.png", help="also save a chart (matplotlib)")
    summary_parser.add_argument("--top", type=int, default=10, metavar="N",
                                help="tensors to list (default 10)")
    args = parser.parse_args(argv)
    if args.top < 1:
        parser.error(f"--top must be at least 1, got {args.top}")
    try:
        summaries = [summarize(path) for path in args.files]
        print("\n\n".join(format_summary(summary, args.top) for summary in summaries))
        if len(summaries) > 1:
            print("\n" + format_comparison(summaries))
        if args.png:
            if len(summaries) > 1:
                save_comparison_chart(summaries, args.png)
            else:
                save_chart(summaries[0], args.png, args.top)
            print(f"\nchart saved to {args.png}")
    except (TraceError, ChartError) as error:
        print(f"horde.timeline: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
