"""The competency plot (Gardner et al. 2021): p̂(y|x) against n for every feature.

x is the feature count n on a log axis, y is p̂(y|x); one colour per label; the curve
p0 + z*·sqrt(p0(1 − p0)/n) marks significance, and points above it are drawn larger with an
outline. Hovering shows the feature, n, p̂ and z; clicking emits :attr:`featureClicked`.
A second dataset's statistics can be overlaid as hollow points (before/after comparison).
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.errors import CounterbiasError
from engine.stats.zstats import ZStatsResult, significance_curve
from widgets.error_dialog import show_error
from widgets.labels import label_color_for

ALL = "All labels"


@dataclass(frozen=True)
class PlotPoint:
    """What a plotted point stands for."""

    feature: str
    kind: str
    label: str
    n: int
    p_hat: float
    z: float
    significant: bool
    series: str  # "main" or "compare"


class CompetencyPlot(QWidget):
    """Scatter of p̂(y|x) vs n with the significance curve, filters, hover and click."""

    featureClicked = Signal(str, str)
    """Emitted with (feature, label) when a point is clicked."""

    pointHovered = Signal(object)
    """Emitted with the :class:`PlotPoint` under the mouse (or ``None``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._stats: ZStatsResult | None = None
        self._compare: ZStatsResult | None = None
        self._points: dict[int, tuple[str, np.ndarray, np.ndarray]] = {}
        pg.setConfigOptions(antialias=False, background="w", foreground="k")

        self.label_combo = QComboBox()
        self.label_combo.setObjectName("plotLabel")
        self.min_count = QSpinBox(minimum=1, maximum=1_000_000, value=5)
        self.min_count.setPrefix("n ≥ ")
        self.kind_boxes: dict[str, QCheckBox] = {}
        self.kinds_row = QHBoxLayout()
        self.png_button = QPushButton("PNG…")
        self.svg_button = QPushButton("SVG…")
        self.png_button.clicked.connect(lambda: self._export_dialog("png"))
        self.svg_button.clicked.connect(lambda: self._export_dialog("svg"))
        self.info = QLabel("Hover over a point to see its feature; click to list its examples.")
        self.info.setObjectName("plotInfo")
        self.info.setTextFormat(Qt.TextFormat.PlainText)

        self.plot_widget = pg.PlotWidget()
        self.plot = self.plot_widget.getPlotItem()
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.plot.setLabel("bottom", "n (feature count, log scale)")
        self.plot.setLabel("left", "p̂(y | x)")
        self.plot.getAxis("bottom").setLogMode(True)
        self.plot.setYRange(0, 1.02, padding=0)
        self.legend = self.plot.addLegend(offset=(-10, 10))

        controls = QHBoxLayout()
        controls.addWidget(self.label_combo)
        controls.addWidget(self.min_count)
        controls.addStretch(1)
        controls.addWidget(self.png_button)
        controls.addWidget(self.svg_button)
        self.kinds_row.addWidget(QLabel("show:"))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(controls)
        layout.addLayout(self.kinds_row)
        layout.addWidget(self.plot_widget, 1)
        layout.addWidget(self.info)

        self.label_combo.currentIndexChanged.connect(self.redraw)
        self.min_count.valueChanged.connect(self.redraw)

    # ------------------------------------------------------------------ public
    def set_stats(self, stats: ZStatsResult | None, compare: ZStatsResult | None = None) -> None:
        """Show ``stats`` (and ``compare`` as hollow points); ``None`` clears the plot."""
        self._stats = stats
        self._compare = compare
        current = self.label_combo.currentText()
        self.label_combo.blockSignals(True)
        self.label_combo.clear()
        if stats is not None:
            self.label_combo.addItems([ALL, *stats.labels])
            self.label_combo.setCurrentText(current if current in stats.labels else ALL)
            self.min_count.blockSignals(True)
            self.min_count.setValue(max(1, int(stats.min_count)))
            self.min_count.blockSignals(False)
        self.label_combo.blockSignals(False)
        self._rebuild_kind_boxes(stats)
        self.redraw()

    def visible_points(self) -> int:
        """Number of points currently drawn (both series)."""
        return sum(len(x) for _, x, _ in self._points.values())

    def point_position(self, series_label: str, feature: str) -> tuple[float, float] | None:
        """Data coordinates (log10 n, p̂) of a plotted feature (for tests and scripting)."""
        stats = self._stats
        if stats is None or feature not in stats.feature_names:
            return None
        i = stats.feature_names.index(feature)
        j = stats.labels.index(series_label)
        return float(np.log10(stats.n[i])), float(stats.p_hat[i, j])

    def export_image(self, path: str | Path, *, project: str | Path | None = None) -> Path:
        """Write the plot as PNG (pyqtgraph's image exporter, 2× size) or SVG (by extension).

        SVG goes through Qt's own SVG generator: pyqtgraph's SVG exporter fails on some
        paths Qt 6.11 writes. The file is checked and written atomically by
        :func:`engine.io.output.output_path`: never a project (``project`` or any other), its
        ``_files`` folder, a folder, a device, FIFO or link
        (:class:`~engine.errors.OutputPathError`).
        """
        from engine.io.output import output_path

        path = Path(path)
        with output_path(path, project=project, what="the plot") as part:
            self._render_image(part, svg=path.suffix.lower() == ".svg")
        return path

    def _render_image(self, path: Path, *, svg: bool) -> None:
        """Draw the plot into the existing file ``path`` (SVG or PNG)."""
        if svg:
            from PySide6.QtCore import QRectF, QSize
            from PySide6.QtGui import QPainter
            from PySide6.QtSvg import QSvgGenerator

            source = self.plot.sceneBoundingRect()
            generator = QSvgGenerator()
            generator.setFileName(str(path))
            generator.setSize(QSize(int(source.width()), int(source.height())))
            generator.setViewBox(QRectF(0, 0, source.width(), source.height()))
            generator.setTitle("Competency plot")
            generator.setDescription("p̂(y|x) against feature count n — Counterbias Studio")
            items = [i for i in self.plot.scene().items() if hasattr(i, "setExportMode")]
            for item in items:  # vector symbols instead of cached pixmaps
                item.setExportMode(True, {"antialias": True, "background": None, "painter": None})
            painter = QPainter(generator)
            try:
                self.plot.scene().render(painter, QRectF(0, 0, source.width(), source.height()), source)
            finally:
                painter.end()
                for item in items:
                    item.setExportMode(False)
            return
        import pyqtgraph.exporters as exporters

        exporter = exporters.ImageExporter(self.plot)
        exporter.parameters()["width"] = max(1200, int(self.plot.width()) * 2)
        image = exporter.export(toBytes=True)
        if not image.save(str(path), "PNG"):
            raise OSError(errno.EIO, "the image could not be saved")

    # ------------------------------------------------------------------ drawing
    def redraw(self) -> None:
        self.plot.clear()
        self.legend.clear()
        self._points.clear()
        stats = self._stats
        if stats is None:
            return
        chosen = self.label_combo.currentText()
        labels = stats.labels if chosen in ("", ALL) else [chosen]
        n_min = self.min_count.value()
        kinds = {k for k, box in self.kind_boxes.items() if box.isChecked()}
        for label in labels:
            self._add_series(stats, label, n_min, kinds, "main")
            if self._compare is not None and label in self._compare.labels:
                self._add_series(self._compare, label, n_min, kinds, "compare")
        self._add_curve(stats, n_min)

    def _add_series(self, stats: ZStatsResult, label: str, n_min: int, kinds: set[str], series: str) -> None:
        j = stats.labels.index(label)
        keep = (stats.n >= n_min) & np.isin(stats.kinds, list(kinds)) if kinds else np.zeros(len(stats.n), bool)
        with np.errstate(invalid="ignore"):
            significant = keep & stats.tested & (stats.z[:, j] > stats.z_threshold)
        color = QColor(label_color_for(label, self._all_labels()))
        for emphasised in (False, True):
            index = np.flatnonzero(significant if emphasised else keep & ~significant)
            if not len(index):
                continue
            x = np.log10(stats.n[index].astype(float))
            y = stats.p_hat[index, j]
            if series == "main":
                brush = pg.mkBrush(color.red(), color.green(), color.blue(), 230 if emphasised else 90)
                pen = pg.mkPen("k", width=1) if emphasised else None
                name = f"{label} (significant)" if emphasised else label
            else:
                brush = None
                pen = pg.mkPen(color, width=1.5)
                name = f"{label}, compared" if emphasised else None
            item = pg.ScatterPlotItem(
                x=x, y=y, data=index, size=9 if emphasised else 5, brush=brush, pen=pen,
                symbol="o" if series == "main" else "t", hoverable=True, name=name,
            )
            item.sigHovered.connect(self._hovered)
            item.sigClicked.connect(self._clicked)
            self._points[id(item)] = (f"{series}:{label}", x, y)
            self.plot.addItem(item)

    def _add_curve(self, stats: ZStatsResult, n_min: int) -> None:
        n_max = max(float(stats.n.max(initial=1)), 10.0)
        n_values = np.logspace(np.log10(max(n_min, 1)), np.log10(n_max), 200)
        curve = significance_curve(n_values, stats.p0, stats.z_threshold)
        self.plot.addItem(
            pg.PlotCurveItem(np.log10(n_values), np.clip(curve, 0, 1.02), pen=pg.mkPen((200, 0, 0), width=2,
                             style=Qt.PenStyle.DashLine), name=f"significance (z* = {stats.z_threshold:.2f})")
        )
        self.plot.addItem(pg.InfiniteLine(stats.p0, angle=0, pen=pg.mkPen((120, 120, 120), width=1)))

    # ------------------------------------------------------------------ interaction
    def describe(self, item: pg.ScatterPlotItem, index: int) -> PlotPoint:
        """The :class:`PlotPoint` behind feature ``index`` of scatter ``item``."""
        series_label = self._points[id(item)][0]
        series, label = series_label.split(":", 1)
        stats = self._compare if series == "compare" and self._compare is not None else self._stats
        j = stats.labels.index(label)
        return PlotPoint(
            feature=stats.feature_names[index],
            kind=str(stats.kinds[index]),
            label=label,
            n=int(stats.n[index]),
            p_hat=float(stats.p_hat[index, j]),
            z=float(stats.z[index, j]),
            significant=bool(stats.tested[index] and stats.z[index, j] > stats.z_threshold),
            series=series,
        )

    def _hovered(self, item: pg.ScatterPlotItem, points, event) -> None:
        if points is None or len(points) == 0:
            return
        point = self.describe(item, int(points[0].data()))
        text = (
            f"{point.feature}  [{point.kind}]  label {point.label}:  n = {point.n:,}   "
            f"p̂ = {point.p_hat:.3f}   z = {point.z:.2f}" + ("   (significant)" if point.significant else "")
        )
        if point.series == "compare":
            text = "compared dataset — " + text
        self.info.setText(text)
        item.setToolTip(text)
        self.pointHovered.emit(point)

    def _clicked(self, item: pg.ScatterPlotItem, points, event) -> None:
        if points is None or len(points) == 0:
            return
        point = self.describe(item, int(points[0].data()))
        self.featureClicked.emit(point.feature, point.label)

    def _export_dialog(self, kind: str) -> None:
        path, _ = QFileDialog.getSaveFileName(self, f"Export plot as {kind.upper()}", f"competency.{kind}",
                                              f"{kind.upper()} (*.{kind})")
        if path:
            try:
                self.export_image(path)
            except CounterbiasError as exc:
                show_error(self, exc).open()

    def _all_labels(self) -> list[str]:
        return list(self._stats.labels) if self._stats is not None else []

    def _rebuild_kind_boxes(self, stats: ZStatsResult | None) -> None:
        previous = {k: b.isChecked() for k, b in self.kind_boxes.items()}
        for box in self.kind_boxes.values():
            self.kinds_row.removeWidget(box)
            box.deleteLater()
        stretch = self.kinds_row.itemAt(self.kinds_row.count() - 1)
        if stretch is not None and stretch.spacerItem() is not None:
            self.kinds_row.removeItem(stretch)
        self.kind_boxes = {}
        if stats is None:
            return
        for kind in dict.fromkeys(str(k) for k in stats.kinds):
            box = QCheckBox(kind)
            box.setObjectName(f"kind_{kind}")
            box.setChecked(previous.get(kind, True))
            box.toggled.connect(self.redraw)
            self.kinds_row.addWidget(box)
            self.kind_boxes[kind] = box
        self.kinds_row.addStretch(1)
