"""Competency plot with many points: draw, hover lookup and filter times.

Builds synthetic statistics for F features × 3 labels (Zipf-like counts, so most features are
rare as in real text) and measures, in the real widget (offscreen when there is no display):
the time to show them, to redraw after changing the label filter, and the time of a hover
lookup (``ScatterPlotItem.pointsAt``) — the per-mouse-move cost. Compared against plotting
the same points as one ``PlotDataItem`` with per-point brushes (a common naive approach).

Usage: ``python benchmarks/plot_points.py [F]`` (default 200,000 features → 600,000 points).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402


def synthetic(n_features: int):
    from engine.stats import ZStatsConfig, zstats_from_counts

    rng = np.random.default_rng(0)
    n = np.maximum(1, (rng.pareto(1.1, n_features) * 3).astype(np.int64))
    share = rng.dirichlet([2, 2, 2], n_features)
    counts = np.stack([rng.binomial(n, share[:, 0]), np.zeros_like(n), np.zeros_like(n)], axis=1)
    counts[:, 1] = rng.binomial(n - counts[:, 0], share[:, 1] / (share[:, 1] + share[:, 2]))
    counts[:, 2] = n - counts[:, 0] - counts[:, 1]
    names = [f"f{i}" for i in range(n_features)]
    kinds = np.where(np.arange(n_features) % 2, "unigram", "bigram")
    return zstats_from_counts(counts, names, kinds, ["a", "b", "c"], ZStatsConfig(min_count=1))


def main() -> None:
    import pyqtgraph as pg
    from PySide6.QtCore import QPointF
    from PySide6.QtWidgets import QApplication

    from widgets.competency_plot import CompetencyPlot

    n_features = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    app = QApplication.instance() or QApplication([])
    stats = synthetic(n_features)
    plot = CompetencyPlot()
    plot.resize(1000, 700)
    plot.show()
    plot.min_count.setValue(1)
    app.processEvents()

    t = time.perf_counter()
    plot.set_stats(stats)
    app.processEvents()
    plot.plot_widget.repaint()
    app.processEvents()
    shown = time.perf_counter() - t
    points = plot.visible_points()

    t = time.perf_counter()
    plot.label_combo.setCurrentText("a")
    app.processEvents()
    plot.plot_widget.repaint()
    relabel = time.perf_counter() - t

    scatter = [i for i in plot.plot.items if isinstance(i, pg.ScatterPlotItem)]
    plot.label_combo.setCurrentText("All labels")
    app.processEvents()
    scatter = [i for i in plot.plot.items if isinstance(i, pg.ScatterPlotItem)]
    probes = [QPointF(float(x), float(y)) for x, y in zip(np.linspace(0.2, 3, 50), np.linspace(0.2, 0.9, 50))]
    t = time.perf_counter()
    for p in probes:
        for item in scatter:
            item.pointsAt(p)
    hover = (time.perf_counter() - t) / len(probes)

    # Baseline: one item, one brush per point.
    j = np.repeat(np.arange(3), n_features)
    x = np.log10(np.tile(stats.n, 3).astype(float))
    y = stats.p_hat.T.ravel()
    colours = [pg.mkBrush(c) for c in ("#0072B2", "#E69F00", "#009E73")]
    brushes = [colours[k] for k in j]
    naive = pg.PlotWidget()
    naive.resize(1000, 700)
    naive.show()
    t = time.perf_counter()
    naive.plot(x, y, pen=None, symbol="o", symbolSize=5, symbolBrush=brushes)
    app.processEvents()
    naive.repaint()
    app.processEvents()
    baseline = time.perf_counter() - t

    print(f"{n_features:,} features x 3 labels = {points:,} points drawn")
    print(f"{'step':<42} {'seconds':>8}")
    print(f"{'show (build items + first paint)':<42} {shown:>8.3f}")
    print(f"{'switch to one label + repaint':<42} {relabel:>8.3f}")
    print(f"{'hover lookup per mouse move (all items)':<42} {hover:>8.4f}")
    print(f"{'baseline: one item, per-point brushes':<42} {baseline:>8.3f}")
    print(f"show: x{baseline / shown:.1f} faster than the baseline")


if __name__ == "__main__":
    main()
