"""A PNG chart of a timeline Summary (matplotlib, imported only when a chart is asked for)."""

import os

from horde.timeline.summary import BETWEEN, CATEGORIES, FRAMEWORK, WAITING

COLORS = {"communication": "#d62728", "copy out": "#ff7f0e", "copy in": "#ffbb78",
          "queue": "#9467bd", "negotiation protocol": "#1f77b4", WAITING: "#aec7e8",
          BETWEEN: "#dbdb8d", FRAMEWORK: "#c7c7c7"}


class ChartError(Exception):
    """The chart cannot be drawn; the message says what to install or fix."""


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ChartError("--png needs matplotlib: install it (Debian: apt-get install "
                         "python3-matplotlib; pip: pip install matplotlib)") from None
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as pyplot
    return pyplot


def _save(pyplot, figure, path):
    figure.tight_layout()
    try:
        figure.savefig(path, dpi=100)
    except OSError as error:
        raise ChartError(f"cannot write {path}: {error.strerror}") from None
    finally:
        pyplot.close(figure)


def save_chart(summary, path, top=10):
    """Left: the span split into categories. Right: the `top` tensors' time per category."""
    pyplot = _pyplot()
    figure, (split, tensors) = pyplot.subplots(1, 2, figsize=(13, 5),
                                               gridspec_kw={"width_ratios": (1, 2)})
    labels = CATEGORIES + (BETWEEN, FRAMEWORK)
    split.barh(labels, [summary.by_category_ms[label] for label in labels],
               color=[COLORS[label] for label in labels])
    split.invert_yaxis()
    split.set_xlabel("ms (each instant counted once)")
    split.set_title(f"where {summary.span_ms:.1f} ms went")

    top_tensors = summary.tensors[:top]
    names = [name for name, _, _ in top_tensors]
    left = [0.0] * len(names)
    for category in CATEGORIES:
        widths = [summary.tensor_phase_ms.get((name, category), 0.0) for name in names]
        tensors.barh(names, widths, left=left, color=COLORS[category], label=category)
        left = [a + b for a, b in zip(left, widths)]
    # Inside an operation but in no phase (e.g. between its negotiation and its queueing).
    between = [max(total - phased, 0.0) for (_, total, _), phased in zip(top_tensors, left)]
    tensors.barh(names, between, left=left, color="#e7e7e7", label="between phases")
    tensors.invert_yaxis()
    tensors.set_xlabel("ms in each phase, summed over the tensor's operations")
    tensors.set_title(f"top {len(names)} tensors")
    tensors.legend(loc="lower right")
    _save(pyplot, figure, path)


def save_comparison_chart(summaries, path):
    """One bar per file (e.g. per rank): its span split into categories, in %."""
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(11, 1.2 + 0.6 * len(summaries)))
    names = [os.path.basename(summary.path) for summary in summaries]
    left = [0.0] * len(summaries)
    for label in CATEGORIES + (BETWEEN, FRAMEWORK):
        widths = [100 * summary.by_category_ms[label] / summary.span_ms if summary.span_ms else 0
                  for summary in summaries]
        axes.barh(names, widths, left=left, color=COLORS[label], label=label)
        left = [a + b for a, b in zip(left, widths)]
    axes.invert_yaxis()
    axes.set_xlabel("% of the file's span (each instant counted once)")
    axes.set_title("where the time went, per file")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=4, fontsize="small")
    _save(pyplot, figure, path)
