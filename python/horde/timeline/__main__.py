"""python -m horde.timeline summary FILE [--png OUT.png] [--top N]"""

import argparse
import sys

from horde.timeline.chart import ChartError, save_chart
from horde.timeline.summary import format_summary, summarize
from horde.timeline.trace import TraceError


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m horde.timeline",
        description="Reads a horde timeline (HORDE_TIMELINE=file, or hvd.start_timeline) and "
                    "prints where the time went.")
    commands = parser.add_subparsers(dest="command", required=True)
    summary_parser = commands.add_parser(
        "summary", help="print the time in negotiation, queueing, copies, communication and "
                        "idle, the operations and the top tensors")
    summary_parser.add_argument("file", help="the timeline's JSON file (a file cut short is fine)")
    summary_parser.add_argument("--png", metavar="OUT.png", help="also save a chart (matplotlib)")
    summary_parser.add_argument("--top", type=int, default=10, metavar="N",
                                help="tensors to list (default 10)")
    args = parser.parse_args(argv)
    if args.top < 1:
        parser.error(f"--top must be at least 1, got {args.top}")
    try:
        summary = summarize(args.file)
        print(format_summary(summary, args.top))
        if args.png:
            save_chart(summary, args.png, args.top)
            print(f"\nchart saved to {args.png}")
    except (TraceError, ChartError) as error:
        print(f"horde.timeline: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
