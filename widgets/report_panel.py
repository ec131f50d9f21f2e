"""The Report tab: the before/after report of the current dataset, as the exported HTML shows it.

The panel renders the same self-contained HTML that *Export HTML…* writes
(:func:`engine.evaluation.report_render.render_html`) in a :class:`QTextBrowser`, with a table of
contents to jump between sections. It computes nothing: *Refresh* and the export buttons emit
signals that :class:`app.controllers.report.ReportController` turns into jobs.
"""

from __future__ import annotations

import base64
import re
import struct

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from engine.evaluation.report import SECTIONS
from engine.store import DatasetInfo

__all__ = ["ReportPanel"]

#: The combo entry for "originals + the candidates accepted now" (no stored version).
IN_MEMORY = None


class ReportPanel(QWidget):
    """Shows a report's HTML with Refresh / Export HTML… / Export PDF… and a section list."""

    refreshRequested = Signal()
    """The user asked for the report to be built again."""

    exportRequested = Signal(str)
    """``exportRequested(kind)``: *Export HTML…* (``"html"``) or *Export PDF…* (``"pdf"``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel("Open a dataset to see its before/after report.")
        self.title.setObjectName("reportTitle")
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        # a long title or error wraps instead of widening the window past a laptop's screen
        self.title.setWordWrap(True)
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.compare = QComboBox()
        self.compare.setObjectName("reportCompare")
        self.compare.setToolTip("What the original is compared with: the originals plus the candidates accepted "
                                "now, or a stored augmented version")
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setObjectName("reportRefresh")
        self.refresh_button.setToolTip("Build the report again from the project (statistics, candidates, stored "
                                       "results)")
        self.html_button = QPushButton("Export HTML…")
        self.pdf_button = QPushButton("Export PDF…")
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(160)
        self.progress.hide()
        self.refresh_button.clicked.connect(self.refreshRequested)
        self.html_button.clicked.connect(lambda: self.exportRequested.emit("html"))
        self.pdf_button.clicked.connect(lambda: self.exportRequested.emit("pdf"))

        self.contents = QListWidget()
        self.contents.setObjectName("reportContents")
        self.contents.setMaximumWidth(300)
        self.contents.setWordWrap(True)
        for key, title in SECTIONS:
            item = QListWidgetItem(title)
            item.setData(Qt.ItemDataRole.UserRole, key)
            self.contents.addItem(item)
        self.contents.itemClicked.connect(lambda item: self.browser.scrollToAnchor(
            item.data(Qt.ItemDataRole.UserRole)))
        self.browser = QTextBrowser()
        self.browser.setObjectName("reportBrowser")
        self.browser.setOpenLinks(False)

        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(QLabel("compare with:"))
        top.addWidget(self.compare)
        top.addWidget(self.progress)
        top.addWidget(self.refresh_button)
        top.addWidget(self.html_button)
        top.addWidget(self.pdf_button)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.contents)
        split.addWidget(self.browser)
        split.setStretchFactor(1, 1)
        split.setSizes([250, 1000])
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        self._has_report = False
        self._can_refresh = False
        self._html = ""
        self._fitted_width = 0
        self.set_dataset(None, [])

    # ------------------------------------------------------------------ public
    def set_dataset(self, dataset: DatasetInfo | None, datasets: list[DatasetInfo], *,
                    keep_report: bool = False) -> None:
        """Offer the augmented versions of ``dataset`` to compare with (the current choice is kept when it
        is still offered); a shown report is cleared unless ``keep_report``."""
        chosen = self.compare.currentData()
        self.compare.blockSignals(True)
        self.compare.clear()
        self.compare.addItem("originals + accepted candidates", IN_MEMORY)
        if dataset is not None:
            for d in datasets:
                if d.kind == "augmented" and d.parent_id == dataset.id:
                    self.compare.addItem(d.name, d.id)
        index = self.compare.findData(chosen) if chosen is not None else 0
        self.compare.setCurrentIndex(max(index, 0))
        self.compare.blockSignals(False)
        self._can_refresh = dataset is not None
        if keep_report and self._has_report:
            self.set_busy(self.progress.isVisible())
            return
        self.show_message("Open a dataset to see its before/after report." if dataset is None else
                          f"Dataset {dataset.name}: press Refresh to build its before/after report.")

    def augmented_id(self) -> int | None:
        """The stored augmented version chosen to compare with (``None``: originals + accepted)."""
        return self.compare.currentData()

    def set_busy(self, busy: bool) -> None:
        """Show or hide the busy indicator; Refresh is disabled while a report is being built."""
        self.progress.setVisible(busy)
        self.refresh_button.setEnabled(self._can_refresh and not busy)

    def show_report(self, title: str, html_text: str) -> None:
        """Show a rendered report (the HTML of :func:`~engine.evaluation.report_render.render_html`)."""
        self.set_busy(False)
        self.title.setText(title)
        self.title.setToolTip(title)
        self._html = html_text
        self._has_report = True
        self._fit_to_width(force=True)
        self._update_buttons()

    def show_message(self, text: str) -> None:
        """Show ``text`` instead of a report (no report, or why it cannot be built)."""
        self.set_busy(False)
        self.title.setText(text.splitlines()[0] if text else "")
        self.title.setToolTip(text.splitlines()[0] if text else "")
        self.browser.setPlainText(text)
        self._has_report = False
        self._update_buttons()

    @property
    def has_report(self) -> bool:
        """Whether a report is shown (the export buttons are enabled)."""
        return self._has_report

    def content_width(self) -> int:
        """Pixels a plot may take in the browser (its width less the page margins)."""
        return max(self.browser.viewport().width() - 80, 300)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        if self._has_report:
            self._fit_to_width()

    def _fit_to_width(self, force: bool = False) -> None:
        """Show the report with its plots scaled down to the browser's width (Qt ignores max-width)."""
        width = self.content_width()
        if not force and abs(width - self._fitted_width) < 40:
            return
        self._fitted_width = width
        bar = self.browser.verticalScrollBar()
        share = bar.value() / bar.maximum() if bar.maximum() else 0.0
        self.browser.setHtml(fit_images(self._html, width))
        bar.setValue(round(share * bar.maximum()))

    def _update_buttons(self) -> None:
        self.html_button.setEnabled(self._has_report)
        self.pdf_button.setEnabled(self._has_report)
        self.contents.setEnabled(self._has_report)


_IMG = re.compile(r'<img ([^>]*?)src="data:image/png;base64,([A-Za-z0-9+/=]{32})')


def fit_images(html_text: str, width: int) -> str:
    """``html_text`` with every inline PNG wider than ``width`` pixels given a ``width``/``height`` that fit.

    The size is read from the PNG header (bytes 16–24 of the data), so nothing is decoded.
    """

    def scale(match: re.Match) -> str:
        head = base64.b64decode(match.group(2))
        w, h = struct.unpack(">II", head[16:24])
        if w <= width:
            return match.group(0)
        return f'<img width="{width}" height="{round(h * width / w)}" {match.group(1)}src="data:image/png;base64,' \
               f"{match.group(2)}"

    return _IMG.sub(scale, html_text)
