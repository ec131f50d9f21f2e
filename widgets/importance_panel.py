"""Ensemble word importance: train members, explain examples, see principal vs spurious words.

The panel computes nothing: it emits requests (:attr:`trainRequested`,
:attr:`explainRequested`, :attr:`voteSettingsChanged`) and shows what the application gives
back (:meth:`show_members`, :meth:`show_example`, :meth:`show_summary`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from engine.attribution.vote import VoteSettings
from engine.attribution.vote_registry import available_vote_rules
from widgets.breakdown_grid import BreakdownGrid
from widgets.models.array_model import ArrayTableModel, Column, fmt_float, fmt_int
from widgets.sentence_view import SentenceView

METHODS = ("ig", "lime", "shapley")
DEFAULT_BACKBONES = "minilm-l6, minilm-l3, mpnet-base"
#: Training presets offered (name, tooltip); the controller selects the default for the machine.
PRESETS = (
    ("sample-cpu", "Each member on a sample of the train rows: MiniLMs fully fine-tuned on 800 rows, MPNet's top "
                   "layer and head on up to 3,000 — minutes on a CPU, bounded whatever the dataset's size; word "
                   "importance close to full fine-tuning's"),
    ("top-cpu", "Lower layers run once, top layer and classification head trained on their output for every row: "
                "minutes on a CPU per thousand rows, close to full fine-tuning's accuracy"),
    ("quick-cpu", "Frozen encoder, features cached in the project, classification head trained: fastest, "
                  "least accurate"),
    ("fast-cpu", "Full fine-tuning, 2 epochs, 128 tokens: best accuracy, about an hour for 3 members on 2 CPU cores"),
    ("paper", "Full fine-tuning as in CoBA: 300 tokens, up to 15 epochs (for a GPU)"),
)


class ImportancePanel(QWidget):
    """Controls, highlighted sentence, member × method breakdown, dataset word tables."""

    trainRequested = Signal(list, str)
    """(backbone names, preset) — train (or reuse) the ensemble on the shown dataset."""

    explainRequested = Signal(str)
    """``"selection"`` or ``"dataset"`` — attribute and vote on those examples."""

    voteSettingsChanged = Signal()
    """K, combination rule, methods, members or word lists changed: re-vote the shown example."""

    wordActivated = Signal(str, str)
    """(word, ``"principal"`` or ``"spurious"``) — list the examples where it is so."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._training = self._explaining = False
        self.backbones = QLineEdit(DEFAULT_BACKBONES)
        self.backbones.setToolTip("Registered backbones (odd count) or local-dir:/path/to/hf-model")
        self.preset = QComboBox()
        for name, tip in PRESETS:
            self.preset.addItem(name)
            self.preset.setItemData(self.preset.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        self.preset.setToolTip("sample-cpu: minutes on a CPU (each member on a sample of rows); top-cpu: top layer + "
                               "head trained on every row; quick-cpu: fastest (head only); fast-cpu / paper: full "
                               "fine-tuning (about an hour for 3 members on 2 cores)")
        self.train_button = QPushButton("Train ensemble")
        self.train_button.clicked.connect(self._train)
        self.members_label = QLabel("No trained members yet.")
        self.members_label.setWordWrap(True)
        self.method_boxes = {}
        row2 = QHBoxLayout()
        row2.addWidget(QLabel("Methods:"))
        for method in METHODS:
            box = QCheckBox(method)
            box.setChecked(method == "ig")
            box.toggled.connect(self.voteSettingsChanged)
            self.method_boxes[method] = box
            row2.addWidget(box)
        self.k = QSpinBox(minimum=1, maximum=50, value=5)
        self.k.setPrefix("top-K ")
        self.combine = QComboBox()
        self.combine.addItems(["majority", "any", "all"])
        self.combine.setToolTip("How a member's methods combine: a member votes for a word in the top-K of "
                                "a majority / any / all of its methods")
        self.rule = QComboBox()
        self.rule.addItems(available_vote_rules())
        self.rule.setCurrentText(VoteSettings().rule)
        self.rule.setToolTip("How the members' scores become principal words: majority (CoBA's vote), "
                             "weighted-majority (members weighted by dev accuracy), rank-mean / score-mean "
                             "(averaged rankings or scores), margin, z-prior / z-tiebreak (the labels' word "
                             "statistics as a prior)")
        self.gender = QCheckBox("gender words are spurious")
        self.gender.setChecked(True)
        self.user_words = QLineEdit(placeholderText="your spurious words, comma-separated")
        for w in (self.k, self.combine, self.rule):
            (w.valueChanged if isinstance(w, QSpinBox) else w.currentIndexChanged).connect(self.voteSettingsChanged)
        self.gender.toggled.connect(self.voteSettingsChanged)
        self.user_words.editingFinished.connect(self.voteSettingsChanged)
        self.explain_selection = QPushButton("Explain selected rows")
        self.explain_dataset = QPushButton("Explain dataset")
        self.explain_selection.clicked.connect(lambda: self.explainRequested.emit("selection"))
        self.explain_dataset.clicked.connect(lambda: self.explainRequested.emit("dataset"))
        for w in (self.k, self.combine, self.rule, self.gender, self.user_words, self.explain_selection,
                  self.explain_dataset):
            row2.addWidget(w)
        row1 = QHBoxLayout()
        row1.addWidget(QLabel("Backbones:"))
        row1.addWidget(self.backbones, 1)
        row1.addWidget(self.preset)
        row1.addWidget(self.train_button)

        self.sentence = SentenceView(self)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.grid = BreakdownGrid(self)
        self.grid.togglesChanged.connect(lambda *_: self.voteSettingsChanged.emit())
        centre = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.sentence, 1)
        tl.addWidget(self.status)
        centre.addWidget(top)
        centre.addWidget(self.grid)
        centre.setSizes([320, 220])

        self.principal_model = ArrayTableModel(self)
        self.spurious_model = ArrayTableModel(self)
        self.word_tabs = QTabWidget()
        self.principal_table = self._table(self.principal_model, "principal")
        self.spurious_table = self._table(self.spurious_model, "spurious")
        self.word_tabs.addTab(self.principal_table, "Principal words")
        self.word_tabs.addTab(self.spurious_table, "Spurious words")
        self._words: dict[str, np.ndarray] = {}

        split = QSplitter()
        split.addWidget(centre)
        split.addWidget(self.word_tabs)
        split.setSizes([800, 380])
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        self.word_tabs.setMinimumWidth(300)  # word, count, z columns stay readable
        layout = QVBoxLayout(self)
        layout.addLayout(row1)
        layout.addWidget(self.members_label)
        layout.addLayout(row2)
        layout.addWidget(split, 1)
        self.sentence.clear_text("Train an ensemble, then explain rows to see their principal and spurious words.")

    # ------------------------------------------------------------------ settings
    def methods(self) -> list[str]:
        return [m for m, b in self.method_boxes.items() if b.isChecked()] or ["ig"]

    def vote_settings(self, threshold: int | None = None) -> VoteSettings:
        """The vote settings shown (K, how methods combine, the vote rule)."""
        return VoteSettings(k=self.k.value(), combine=self.combine.currentText(), rule=self.rule.currentText(),
                            threshold=threshold)

    def set_vote_settings(self, methods: list[str], k: int, combine: str, gender: bool, rule: str = "majority") -> None:
        """Show the settings of a stored vote (its methods, K, combination rule, gender list, vote rule)."""
        index = self.rule.findText(rule)
        if index >= 0:
            self.rule.setCurrentIndex(index)
        for method, box in self.method_boxes.items():
            box.setChecked(method in methods)
        self.k.setValue(int(k))
        index = self.combine.findText(combine)
        if index >= 0:
            self.combine.setCurrentIndex(index)
        self.gender.setChecked(bool(gender))

    def user_word_list(self) -> list[str]:
        return [w.strip().lower() for w in self.user_words.text().split(",") if w.strip()]

    def set_training(self, busy: bool) -> None:
        """While members train, rows can still be explained by the members already stored."""
        self._training = busy
        self._enable_actions()

    def set_explaining(self, busy: bool) -> None:
        """While rows are explained, neither explaining again nor (re)training members is offered."""
        self._explaining = busy
        self._enable_actions()

    def _enable_actions(self) -> None:
        self.train_button.setEnabled(not (self._training or self._explaining))
        for button in (self.explain_selection, self.explain_dataset):
            button.setEnabled(not self._explaining)

    # ------------------------------------------------------------------ showing
    def set_default_preset(self, name: str) -> None:
        """Select the training preset offered by default (chosen by the machine's device)."""
        index = self.preset.findText(name)
        if index >= 0:
            self.preset.setCurrentIndex(index)

    def show_members(self, members: Sequence[str], accuracy: Mapping[str, float],
                     presets: Mapping[str, str] | None = None, explainers: Sequence[str] | None = None,
                     training: Sequence[str] = ()) -> None:
        """The trained members of the shown dataset, their dev accuracy and the preset each was trained with.

        ``explainers``: the members ticked to explain at first (``None``: all); the others only judge.
        ``training``: members of a running training job not stored yet (named after the others).
        """
        presets = presets or {}
        explainers = list(members if explainers is None else explainers)
        judges = [m for m in members if m not in explainers]
        if members:
            parts = []
            for m in members:
                text = f"<b>{m}</b> {accuracy[m]:.1%}" if m in accuracy else f"<b>{m}</b>"
                parts.append(f"{text} ({presets[m]})" if m in presets else text)
            text = f"Members (dev accuracy, preset): {', '.join(parts)}; "
            if judges:
                text += (f"explaining: {', '.join(explainers)} (τ = {len(explainers) // 2 + 1} of {len(explainers)}); "
                         f"judging only: {', '.join(judges)} (tick it below to explain with it too)")
            else:
                text += f"τ = {len(members) // 2 + 1} of {len(members)}"
            if training:
                text += f"; still training: {', '.join(training)}"
            self.members_label.setText(text)
        elif training:
            self.members_label.setText(f"Training {', '.join(training)}: each member appears here when it is trained.")
        else:
            self.members_label.setText("No trained members yet: press Train ensemble.")
        tips = {m: (f"{m} judges flips but does not explain by default: only its top layer (or head) was trained, and such "
                    "members' words match the words human editors change far less often than fine-tuned members' "
                    "(and cost the most to explain). Tick to include it in the vote.") for m in judges}
        self.grid.set_members(list(members), list(METHODS), accuracy, presets, ticked=explainers, tooltips=tips)

    def show_example(self, fields: list, tops: Mapping[str, Mapping[str, Sequence[str]]],
                     principal: Sequence[str], spurious: Sequence[str], message: str = "") -> None:
        """Highlighted fields (see :meth:`SentenceView.show_text`) and the breakdown."""
        if fields:
            self.sentence.show_text(fields)
        else:
            self.sentence.clear_text(message or "Not explained yet: press Explain selected rows.")
        self.status.setText(message if fields else "")
        self.grid.show_tops(tops, principal, spurious)

    def show_summary(self, principal: Sequence, spurious: Sequence, z: Mapping[str, float] | None = None) -> None:
        """Dataset-level tables of :class:`~engine.attribution.vote.WordCount` rows."""
        z = z or {}
        for model, table, rows, key in ((self.principal_model, self.principal_table, principal, "principal"),
                                        (self.spurious_model, self.spurious_table, spurious, "spurious")):
            words = np.asarray([r.word for r in rows], dtype=object)
            counts = np.asarray([r.examples for r in rows], dtype=np.int64)
            zs = np.asarray([z.get(r.word, np.nan) for r in rows], dtype=float)
            labels = sorted({lab for r in rows for lab in r.by_label})
            columns = [Column("Word", words), Column("Examples", counts, fmt_int, numeric=True),
                       Column("max z", zs, fmt_float(2), numeric=True, tooltip="largest z over labels (statistics tab)")]
            for lab in labels:
                columns.append(Column(lab, np.asarray([r.by_label.get(lab, 0) for r in rows], dtype=np.int64),
                                      fmt_int, numeric=True))
            model.set_columns(columns)
            self._words[key] = words
            table.resizeColumnsToContents()
        self.word_tabs.setTabText(0, f"Principal words ({len(principal)})")
        self.word_tabs.setTabText(1, f"Spurious words ({len(spurious)})")

    # ------------------------------------------------------------------ internals
    def _train(self) -> None:
        names = [b.strip() for b in self.backbones.text().split(",") if b.strip()]
        self.trainRequested.emit(names, self.preset.currentText())

    def _table(self, model: ArrayTableModel, key: str) -> QTableView:
        view = QTableView()
        view.setModel(model)
        view.setSortingEnabled(True)
        view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.verticalHeader().hide()
        view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        view.doubleClicked.connect(lambda index: self._activate(key, model, index))
        return view

    def _activate(self, key: str, model: ArrayTableModel, index: QModelIndex) -> None:
        if index.isValid() and key in self._words:
            self.wordActivated.emit(str(self._words[key][model.base_row(index.row())]), key)
