"""The Annotate tab: the analyst labels chosen examples and their counterfactuals; the learning curve grows.

Left, the queue of examples the selection strategy chose (a check mark once labelled). Middle,
the current example with one button per label (keys 1…9), and below it its counterfactuals with
their target label and the verdicts of the checks; *Accept* labels a counterfactual with its
target label, the combo beside *Fix label* gives it another, *Reject* drops it. Right, macro-F1
on the held-out split against the number of labelled examples, one point per retraining.

The panel computes nothing: every action is a signal that
:class:`app.controllers.annotation.AnnotationController` turns into engine calls and jobs.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from engine.verification.checks import label_judged

__all__ = ["AnnotationPanel"]

#: Strategies offered (registry names of engine.active.strategies).
STRATEGY_CHOICES = (("cluster", "Cluster (k-means, central first)"), ("random", "Random"))
#: Counterfactual makers offered (engine.active.annotation.COUNTERFACTUAL_METHODS, plus none).
COUNTERFACTUAL_CHOICES = (("vt", "Pattern-keeping (variation theory)"), ("llm", "LLM minimal edit"),
                          ("none", "None"))


def _verdict_summary(scores: dict[str, Any]) -> tuple[str, str]:
    """``(short text, tooltip)`` of a candidate's verdicts."""
    verdicts = scores.get("verdicts") or {}
    failed = {k: v for k, v in verdicts.items() if v.get("status") == "fail"}
    tip = "\n".join(f"{k}: {v.get('status')} — {v.get('reason') or ''}" for k, v in sorted(verdicts.items()))
    if not verdicts:
        return "not checked", ""
    if failed:
        return "✗ " + ", ".join(sorted(failed)), tip
    passed = sum(v.get("status") == "pass" for v in verdicts.values())
    skipped = sum(v.get("status") not in ("pass", "fail") for v in verdicts.values())
    not_run = f", {skipped} not run" if skipped else ""
    if not label_judged(verdicts):  # never a tick: the check that matters most did not run
        return (f"? label not judged · {passed} pass{not_run}",
                tip + "\nNo ensemble member or LLM judge read the label, so nothing says it flipped.")
    return f"✓ {passed} checks pass{not_run}", tip


class AnnotationPanel(QWidget):
    """Queue, current example with label buttons, its counterfactuals, and the learning curve."""

    nextBatchRequested = Signal(str, int)
    """``nextBatchRequested(strategy, n)``: choose the next examples to label."""

    labelGiven = Signal(int, str)
    """``labelGiven(example_id, label)``."""

    exampleChosen = Signal(int)
    """``exampleChosen(example_id)``: the analyst picked an example of the queue."""

    counterfactualDecided = Signal(int, int, str)
    """``counterfactualDecided(example_id, candidate_id, label)``; an empty label rejects it."""

    makeCounterfactuals = Signal()
    """Make counterfactuals of the labelled examples that have none yet."""

    retrainRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._labels: list[str] = []
        self._example_id: int | None = None
        self._candidates: list[dict[str, Any]] = []

        # top bar
        self.strategy = QComboBox()
        for key, text in STRATEGY_CHOICES:
            self.strategy.addItem(text, key)
        self.batch = QSpinBox()
        self.batch.setRange(1, 100)
        self.batch.setValue(10)
        self.batch.setSuffix(" examples")
        self.next_button = QPushButton("Next batch")
        self.next_button.setToolTip("Choose the next examples to label with the strategy (labelled ones skipped)")
        self.counterfactuals = QComboBox()
        for key, text in COUNTERFACTUAL_CHOICES:
            self.counterfactuals.addItem(text, key)
        self.counterfactuals.setToolTip("Counterfactuals made for each example once it is labelled (with the LLM "
                                        "of the Counterbias tab's LLM settings)")
        self.make_button = QPushButton("Make counterfactuals")
        self.retrain_button = QPushButton("Retrain")
        self.status = QLabel("Open a dataset to annotate it.")
        self.status.setObjectName("annotationStatus")
        self.next_button.clicked.connect(
            lambda: self.nextBatchRequested.emit(self.strategy.currentData(), self.batch.value()))
        self.make_button.clicked.connect(self.makeCounterfactuals)
        self.retrain_button.clicked.connect(self.retrainRequested)
        bar = QHBoxLayout()
        for w in (QLabel("Strategy"), self.strategy, self.batch, self.next_button, QLabel("Counterfactuals"),
                  self.counterfactuals, self.make_button, self.retrain_button):
            bar.addWidget(w)
        bar.addStretch(1)

        # queue
        self.queue = QListWidget()
        self.queue.setObjectName("annotationQueue")
        self.queue.setWordWrap(True)
        self.queue.currentItemChanged.connect(self._queue_changed)

        # current example
        self.text = QTextBrowser()
        self.text.setObjectName("annotationText")
        self.label_row = QHBoxLayout()
        self.label_buttons: list[QPushButton] = []
        self.given = QLabel("")
        self.cf_table = QTableWidget(0, 4)
        self.cf_table.setObjectName("annotationCounterfactuals")
        self.cf_table.setHorizontalHeaderLabels(["Counterfactual", "Target", "Checks", "Your label"])
        self.cf_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.cf_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.cf_table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.cf_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.cf_table.setWordWrap(True)
        self.accept_button = QPushButton("Accept (target label)")
        self.fix_label = QComboBox()
        self.fix_button = QPushButton("Fix label")
        self.reject_button = QPushButton("Reject")
        self.accept_button.clicked.connect(lambda: self._decide("target"))
        self.fix_button.clicked.connect(lambda: self._decide("fix"))
        self.reject_button.clicked.connect(lambda: self._decide(""))
        cf_bar = QHBoxLayout()
        for w in (self.accept_button, self.fix_label, self.fix_button, self.reject_button):
            cf_bar.addWidget(w)
        cf_bar.addStretch(1)
        middle = QWidget()
        mid = QVBoxLayout(middle)
        mid.setContentsMargins(0, 0, 0, 0)
        mid.addWidget(self.text, 2)
        mid.addLayout(self.label_row)
        mid.addWidget(self.given)
        mid.addWidget(QLabel("Counterfactuals of this example"))
        mid.addWidget(self.cf_table, 3)
        mid.addLayout(cf_bar)

        # learning curve
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("annotationCurve")
        self.plot.setBackground("w")
        self.plot.setLabel("bottom", "labelled examples")
        self.plot.setLabel("left", "macro-F1 (held out)")
        self.plot.setYRange(0.0, 1.0)
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.curve = self.plot.plot([], [], pen=pg.mkPen("#1f77b4", width=2), symbol="o", symbolSize=7,
                                    symbolBrush="#1f77b4")
        self.curve_label = QLabel("No retraining yet.")
        self.curve_label.setWordWrap(True)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.plot, 1)
        rl.addWidget(self.curve_label)

        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.queue)
        split.addWidget(middle)
        split.addWidget(right)
        split.setSizes([250, 620, 380])
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(split, 1)
        layout.addWidget(self.status)
        for w in (self.queue, self.text, self.cf_table):  # number keys give labels wherever the focus is
            w.installEventFilter(self)
        self.set_labels([])

    # ------------------------------------------------------------------ what the controller sets
    def set_labels(self, labels: Sequence[str]) -> None:
        """One button per label (keys 1…9); the fix-label choices."""
        self._labels = list(labels)
        for b in self.label_buttons:
            self.label_row.removeWidget(b)
            b.deleteLater()
        self.label_buttons = []
        for k, label in enumerate(self._labels):
            button = QPushButton(f"{k + 1}  {label}" if k < 9 else label)
            button.setObjectName(f"annotationLabel{k}")
            button.clicked.connect(lambda _=False, label=label: self._give(label))
            self.label_row.addWidget(button)
            self.label_buttons.append(button)
        self.fix_label.clear()
        self.fix_label.addItems(self._labels)
        self._enable()

    def set_queue(self, items: Sequence[tuple[int, str, str | None]], current: int | None = None) -> None:
        """``items``: ``(example id, text, label given or None)``; ``current`` is selected."""
        self.queue.blockSignals(True)
        self.queue.clear()
        select = None
        for example_id, text, label in items:
            short = text if len(text) <= 140 else text[:137] + "…"
            item = QListWidgetItem(f"{'✓ ' + label + ' · ' if label else '• '}{short}")
            item.setData(Qt.ItemDataRole.UserRole, example_id)
            self.queue.addItem(item)
            if example_id == current:
                select = item
        self.queue.blockSignals(False)
        if select is not None:
            self.queue.setCurrentItem(select)

    def show_example(self, example_id: int | None, text: str, gold: str | None, given: str | None) -> None:
        """The current example (``gold``: the dataset's label, shown only once the analyst has labelled)."""
        self._example_id = example_id
        self.text.setPlainText(text)
        if example_id is None:
            self.given.setText("")
        elif given:
            agree = "" if gold is None or gold == given else f" (the dataset says {gold})"
            self.given.setText(f"Your label: <b>{html.escape(given)}</b>{html.escape(agree)}")
        else:
            self.given.setText("Not labelled yet: press a label button or its number key.")
        self._enable()

    def show_counterfactuals(self, rows: Sequence[dict[str, Any]], labels_given: dict[int, str]) -> None:
        """Candidates of the current example: ``id``, ``text`` (or a pair's ``hypothesis``), ``target_label``,
        ``status``, ``scores``, ``meta``."""
        self._candidates = list(rows)
        self.cf_table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            failed = row["status"] == "failed"
            # a pair's counterfactual is its new hypothesis (the premise is the example's, shown above)
            text = (f"(failed: {(row.get('meta') or {}).get('error', {}).get('message', '')})" if failed
                    else row.get("text") or row.get("hypothesis") or "")
            meta = row.get("meta") or {}
            tip = text
            if meta.get("pattern"):
                tip += f"\n\npattern {meta['pattern']} · phrases: {' | '.join(meta.get('phrases') or [])}"
            cells = [text, row["target_label"], *_verdict_summary(row.get("scores") or {})[:1],
                     labels_given.get(int(row["id"]), "rejected" if row["status"] == "rejected" else "")]
            for c, value in enumerate(cells):
                item = QTableWidgetItem(value)
                item.setToolTip(_verdict_summary(row.get("scores") or {})[1] if c == 2 else tip)
                if failed:
                    item.setForeground(Qt.GlobalColor.gray)
                self.cf_table.setItem(r, c, item)
        self.cf_table.resizeRowsToContents()
        if rows:
            self.cf_table.selectRow(0)
        self._enable()

    def show_curve(self, points: Sequence[Any]) -> None:
        """Points with ``annotations``, ``counterfactuals``, ``macro_f1``, ``accuracy``, ``test_size``."""
        xs = [p.annotations for p in points]
        ys = [p.macro_f1 for p in points]
        self.curve.setData(xs, ys)
        if points:
            last = points[-1]
            cf = f" + {last.counterfactuals} counterfactuals" if last.counterfactuals else ""
            self.curve_label.setText(f"Last retraining: macro-F1 {last.macro_f1:.3f}, accuracy {last.accuracy:.3f} "
                                     f"on {last.test_size} held-out examples, trained on {last.annotations} "
                                     f"labelled examples{cf}.")
        else:
            self.curve_label.setText("No retraining yet.")

    def set_status(self, text: str) -> None:
        self.status.setText(text)

    def counterfactual_method(self) -> str:
        return str(self.counterfactuals.currentData())

    def select_counterfactual(self, row: int) -> None:
        self.cf_table.selectRow(row)

    # ------------------------------------------------------------------ internals
    def _label_key(self, event: QKeyEvent) -> bool:
        """Give the label of a number key 1…9 (no modifiers); whether the key was one."""
        key = event.key()
        if event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier or not Qt.Key.Key_1 <= key <= Qt.Key.Key_9:
            return False
        self._press(key - Qt.Key.Key_1)
        return True

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if not self._label_key(event):
            super().keyPressEvent(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            return self._label_key(event)
        return super().eventFilter(watched, event)

    def _enable(self) -> None:
        has = self._example_id is not None
        for b in self.label_buttons:
            b.setEnabled(has)
        usable = has and any(c["status"] != "failed" for c in self._candidates)
        for w in (self.accept_button, self.fix_button, self.reject_button, self.fix_label):
            w.setEnabled(usable)

    def _queue_changed(self, item: QListWidgetItem | None, _previous: Any = None) -> None:
        if item is not None:
            self.exampleChosen.emit(int(item.data(Qt.ItemDataRole.UserRole)))

    def _press(self, k: int) -> None:
        if k < len(self._labels) and self._example_id is not None:
            self._give(self._labels[k])

    def _give(self, label: str) -> None:
        if self._example_id is not None:
            self.labelGiven.emit(self._example_id, label)

    def _decide(self, how: str) -> None:
        row = self.cf_table.currentRow()
        if self._example_id is None or not 0 <= row < len(self._candidates):
            return
        cand = self._candidates[row]
        if cand["status"] == "failed":
            return
        label = cand["target_label"] if how == "target" else (self.fix_label.currentText() if how == "fix" else "")
        self.counterfactualDecided.emit(self._example_id, int(cand["id"]), label)
