"""The report's figures, drawn with matplotlib's object API (a ``Figure`` and the Agg canvas, never ``pyplot``, so
no global backend is switched inside the GUI process): the competency plot, the downstream bars, the candidates'
statuses; and a figure as a PNG ``data:`` URI. matplotlib is imported inside the functions."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.evaluation.report import Report
from engine.stats.zstats import significance_curve

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["AFTER_COLOR", "BEFORE_COLOR", "STATUS_COLORS", "competency_figure", "downstream_figure",
           "draw_competency", "draw_downstream", "draw_status_bars", "new_figure", "plain_text", "png_data_uri",
           "status_figure"]

#: Colours of the original and the augmented version (Okabe-Ito blue and orange: colour-blind safe).
BEFORE_COLOR = "#0072B2"
AFTER_COLOR = "#E69F00"
#: Colours of accepted / rejected / undecided / failed candidates.
STATUS_COLORS = ("#009E73", "#D55E00", "#999999", "#CC79A7")
#: Most points drawn per version and label in the competency plot (the highest-n ones are kept).
MAX_POINTS = 20_000


def plain_text(text: object) -> str:
    """``text`` escaped so that matplotlib draws it as it is, never as mathtext.

    matplotlib reads a string with two unescaped ``$`` as math markup (``under $5_or_$10``
    fails to parse); with every ``$`` written ``\\$`` none is unescaped, and matplotlib turns
    ``\\$`` back into ``$`` (a backslash elsewhere stays as it is). Every label, dataset name,
    feature, method and table cell that reaches a figure goes through here.
    """
    return str(text).replace("$", r"\$")


def new_figure(width: float, height: float) -> Figure:
    """A figure of ``width`` × ``height`` inches on its own Agg canvas (no pyplot)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def draw_competency(fig: Figure, report: Report, rect: Sequence[float] = (0.07, 0.1, 0.92, 0.8),
                    annotate: int = 5) -> None:
    """Draw the overlaid competency plots (one panel per label) into ``rect`` of ``fig``.

    x is the feature count n (log), y is p̂(label | feature); the original in blue, the augmented
    version in orange, each with its significance curve; arrows follow the ``annotate`` features
    most biased in the original (or, when none is significant, whose |z| dropped most) from before
    to after.
    """
    import numpy as np
    from matplotlib.ticker import FuncFormatter, NullFormatter

    before, after = report.before, report.after
    labels = before.labels
    left, bottom, width, height = rect
    grid = fig.add_gridspec(1, len(labels), left=left, right=left + width, bottom=bottom, top=bottom + height,
                            wspace=0.08)
    shown = np.flatnonzero(before.tested | after.tested)
    n_max = max(float(after.n.max(initial=1)), float(before.n.max(initial=1)), 10.0)
    n_min = max(min(before.min_count, after.min_count), 1)
    curve_n = np.logspace(np.log10(n_min), np.log10(n_max), 200)
    top = report.biased(annotate) or report.dropped(annotate)
    axes = []
    handles = []
    for j, label in enumerate(labels):
        ax = fig.add_subplot(grid[0, j], sharey=axes[0] if axes else None, sharex=axes[0] if axes else None)
        axes.append(ax)
        for stats, color, name, marker, size in ((before, BEFORE_COLOR, "original", "o", 10),
                                                 (after, AFTER_COLOR, "augmented", "^", 9)):
            index = shown[stats.tested[shown]]
            if len(index) > MAX_POINTS:
                index = index[np.argsort(-stats.n[index], kind="stable")[:MAX_POINTS]]
            points = ax.scatter(stats.n[index], stats.p_hat[index, j], s=size, color=color, alpha=0.5,
                                marker=marker, linewidths=0, label=f"{name} ({len(index):,} features)",
                                rasterized=True)
            (line,) = ax.plot(curve_n, np.clip(significance_curve(curve_n, stats.p0, stats.z_threshold), 0, 1.02),
                              color=color, linestyle="--", linewidth=1.3,
                              label=f"{name}: significance (z* = {stats.z_threshold:.2f})")
            if j == 0:
                handles += [points, line]
        ax.axhline(before.p0, color="#777777", linewidth=0.8)
        moves: dict[tuple[float, float, float, float], list[str]] = {}
        for r in top:
            if r.label == label:
                i = r.feature_index
                key = (float(before.n[i]), float(before.p_hat[i, j]), float(after.n[i]), float(after.p_hat[i, j]))
                moves.setdefault(key, []).append(r.feature)
        for (n0, p0, n1, p1), names in moves.items():
            ax.annotate("", xy=(n1, p1), xytext=(n0, p0),
                        arrowprops={"arrowstyle": "->", "color": "#333333", "lw": 0.9})
            text = ", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else "")
            ax.annotate(plain_text(text), xy=(n0, p0), xytext=(4, -10 if p0 > 0.9 else 4), textcoords="offset points",
                        fontsize=7, color="#333333")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(0, 1.03)
        ax.set_title(plain_text(f"label: {label}"), fontsize=10)
        ax.set_xlabel("n (feature count, log scale)", fontsize=9)
        ax.grid(True, alpha=0.25)
        ax.tick_params(labelsize=8)
        if j:
            ax.tick_params(labelleft=False)
    axes[0].set_ylabel(r"$\hat{p}$(label | feature)", fontsize=9)
    # above the panel titles: 0.3 inch over the axes, whatever the figure's height
    fig.legend(handles=handles, fontsize=8, ncols=2, loc="lower center", frameon=False,
               bbox_to_anchor=(left + width / 2, bottom + height + 0.3 / fig.get_figheight()),
               bbox_transform=fig.transFigure)


def competency_figure(report: Report) -> Figure:
    """The overlaid competency plot as a stand-alone figure."""
    fig = new_figure(min(4.2 * len(report.before.labels) + 0.8, 13.0), 4.8)
    draw_competency(fig, report, (0.07, 0.11, 0.91, 0.74))
    return fig


def _downstream_groups(report: Report) -> tuple[list[str], list[str], dict[tuple[str, str], Any]]:
    tests = list(dict.fromkeys(r.test_set for r in report.downstream))
    classifiers = {r.classifier for r in report.downstream}
    keyed = {}
    for r in report.downstream:
        name = r.condition if len(classifiers) == 1 else f"{r.condition} / {r.classifier}"
        keyed[(name, r.test_set)] = r
    series = list(dict.fromkeys(name for name, _ in keyed))
    return tests, series, keyed


def draw_downstream(fig: Figure, report: Report, rect: Sequence[float] = (0.08, 0.15, 0.9, 0.75)) -> None:
    """Grouped bars of accuracy (%) per test set and condition, with 95% CI error bars."""
    import numpy as np

    tests, series, keyed = _downstream_groups(report)
    ax = fig.add_axes(rect)
    width = min(0.8 / max(len(series), 1), 0.3)
    colors = [BEFORE_COLOR, AFTER_COLOR, "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
    x = np.arange(len(tests))
    for s, name in enumerate(series):
        means, errs = [], []
        for t in tests:
            row = keyed.get((name, t))
            mean = row.accuracy.mean if row is not None else float("nan")
            half = row.accuracy.half_width if row is not None else float("nan")
            means.append(100 * mean)
            errs.append(0.0 if math.isnan(half) else 100 * half)
        ax.bar(x + width * (s - (len(series) - 1) / 2), means, width * 0.92, yerr=errs, capsize=3,
               label=plain_text(name),
               color=colors[s % len(colors)], error_kw={"elinewidth": 1, "ecolor": "#222222"})
    ax.set_xticks(x, [plain_text(t) for t in tests], fontsize=8)
    ax.set_ylabel("accuracy (%)", fontsize=9)
    ax.set_ylim(0, 118)
    ax.set_yticks(range(0, 101, 20))
    ax.grid(True, axis="y", alpha=0.25)
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=7, loc="upper center", ncols=min(len(series), 4), framealpha=0.9)
    ax.set_title("mean ± 95% CI over seeds", fontsize=9)


def downstream_figure(report: Report) -> Figure | None:
    """The downstream bar plot as a stand-alone figure (``None`` when nothing is stored)."""
    if not report.downstream:
        return None
    tests, series, _ = _downstream_groups(report)
    fig = new_figure(min(max(5.0, 1.2 * len(tests) * max(len(series), 1) * 0.6 + 2.5), 12.0), 3.6)
    draw_downstream(fig, report, (0.09, 0.14, 0.88, 0.76))
    return fig


def draw_status_bars(fig: Figure, report: Report, rect: Sequence[float] = (0.22, 0.2, 0.74, 0.7)) -> None:
    """Horizontal stacked bars: accepted / rejected / undecided / failed candidates per method."""
    import numpy as np

    methods = list(report.methods)
    ax = fig.add_axes(rect)
    y = np.arange(len(methods))
    left = np.zeros(len(methods))
    for name, color in zip(("accepted", "rejected", "undecided", "failed"), STATUS_COLORS):
        values = np.array([getattr(m, name) for m in methods], float)
        ax.barh(y, values, left=left, color=color, label=name, height=0.6)
        left += values
    ax.set_yticks(y, [plain_text(m.method) for m in methods], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("candidates", fontsize=9)
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=7, ncols=4, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)


def status_figure(report: Report) -> Figure | None:
    """The per-method status bars as a stand-alone figure (``None`` without candidates)."""
    if not report.methods:
        return None
    fig = new_figure(7.0, 0.9 + 0.35 * len(report.methods))
    draw_status_bars(fig, report, (0.2, 0.45 / (0.9 + 0.35 * len(report.methods)) + 0.05, 0.76,
                                   0.35 * len(report.methods) / (0.9 + 0.35 * len(report.methods))))
    return fig


def png_data_uri(fig: Figure, dpi: float = 110, max_width_px: int | None = None) -> str:
    if max_width_px:
        dpi = max(min(dpi, max_width_px / fig.get_figwidth()), 50)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
