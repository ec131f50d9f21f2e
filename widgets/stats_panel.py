"""Bias statistics panel: settings, the competency plot, biased features and Δz tables.

The panel computes nothing: it emits :attr:`StatsPanel.computeRequested` and
:attr:`StatsPanel.zfilterRequested`, and the application runs the engine as jobs and calls
:meth:`StatsPanel.show_stats` with the results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
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

from engine.stats import FeatureConfig, StatsConfig, ZStatsConfig, ZStatsResult, compare_zstats
from engine.store import DatasetInfo
from widgets.competency_plot import ALL, CompetencyPlot
from widgets.models.array_model import ArrayTableModel, Column, fmt_float, fmt_int
from widgets.wording import count_of

FAMILIES = (
    ("unigrams", "unigrams"),
    ("bigrams", "bigrams"),
    ("length", "length"),
    ("length_ratio", "length ratio"),
    ("overlap", "overlap"),
    ("null", "null"),
)


def take_names(names: Sequence[str], index: np.ndarray) -> list[str]:
    """``names[i]`` for ``i`` in ``index``; lazy name lists (``FeatureNames``) spell only those."""
    take = getattr(names, "take", None)
    return take(index) if take is not None else [names[i] for i in np.asarray(index).tolist()]


#: Column of z in the biased-features table (sorted by it, strongest first).
Z_COLUMN = 2


def features_columns(stats: ZStatsResult) -> tuple[list[Column], np.ndarray, dict[str, np.ndarray]]:
    """Columns of the biased-features table: one row per (tested feature, label)."""
    index = np.flatnonzero(stats.tested)
    n_labels = len(stats.labels)
    feat = np.repeat(index, n_labels)
    lab = np.tile(np.arange(n_labels), len(index))
    names = np.empty(len(feat), dtype=object)
    names[:] = take_names(stats.feature_names, feat)  # spells only the tested features' names
    labels = np.asarray(stats.labels, dtype=object)[lab]
    with np.errstate(invalid="ignore"):
        significant = stats.z[feat, lab] > stats.z_threshold
    # the deciding numbers first, so that a narrow table still shows them
    columns = [
        Column("Feature", names),
        Column("Label", labels),
        Column("z", stats.z[feat, lab], fmt_float(2), numeric=True,
               tooltip=f"z-statistic; significant above z* = {stats.z_threshold:.2f}"),
        Column("p̂", stats.p_hat[feat, lab], fmt_float(3), numeric=True, tooltip="p̂(label | feature)"),
        Column("n", stats.n[feat], fmt_int, numeric=True, tooltip="examples holding the feature"),
        Column("count", stats.counts[feat, lab], fmt_int, numeric=True, tooltip="of which carry this label"),
        Column("Kind", stats.kinds[feat].astype(object)),
    ]
    keys = {"feature": names, "kind": stats.kinds[feat].astype(str), "label": labels.astype(str),
            "n": stats.n[feat], "significant": significant}
    return columns, significant, keys


def delta_columns(rows: list[dict[str, Any]]) -> tuple[list[Column], dict[str, np.ndarray]]:
    """Columns of the Δz table from :func:`engine.stats.compare_zstats` rows."""

    def col(key: str, dtype: Any = object) -> np.ndarray:
        return np.asarray([r[key] for r in rows], dtype=dtype)

    keys = {
        "feature": col("feature"),
        "kind": col("kind").astype(str) if rows else np.zeros(0, str),
        "label": col("label").astype(str) if rows else np.zeros(0, str),
        "n": col("n_before", np.int64),
    }
    columns = [
        Column("Feature", keys["feature"]),
        Column("Kind", col("kind")),
        Column("Label", col("label")),
        Column("n before", keys["n"], fmt_int, numeric=True),
        Column("n after", col("n_after", np.int64), fmt_int, numeric=True),
        Column("z before", col("z_before", float), fmt_float(2), numeric=True),
        Column("z after", col("z_after", float), fmt_float(2), numeric=True),
        Column("Δz", col("delta_z", float), fmt_float(2), numeric=True, tooltip="z after − z before"),
    ]
    return columns, keys


class StatsPanel(QWidget):
    """Competency plot + biased features + before/after comparison for one dataset version."""

    computeRequested = Signal(object, object)
    """Emitted with (:class:`StatsConfig`, compare dataset id or ``None``)."""

    zfilterRequested = Signal()
    """The user asked for the z-filtering dialog."""

    featureActivated = Signal(str, str)
    """Emitted with (feature, label) when a point or a table row is activated."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.dataset: DatasetInfo | None = None
        self.stats: ZStatsResult | None = None
        self.compare: ZStatsResult | None = None
        self._feature_keys: dict[str, np.ndarray] = {}
        self._delta_keys: dict[str, np.ndarray] = {}

        self.title = QLabel("No dataset")
        self.family_boxes = {}
        settings = QHBoxLayout()
        for key, text in FAMILIES:
            box = QCheckBox(text)
            box.setChecked(True)
            self.family_boxes[key] = box
            settings.addWidget(box)
        self.per_document = QCheckBox("count once per example")
        self.min_count = QSpinBox(minimum=1, maximum=1_000_000, value=5)
        self.min_count.setPrefix("min n ")
        self.alpha = QDoubleSpinBox(decimals=4, minimum=0.0001, maximum=0.2, singleStep=0.005, value=0.01)
        self.alpha.setPrefix("α ")
        self.compare_combo = QComboBox()
        self.compare_combo.setMinimumContentsLength(14)
        self.compare_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.compare_combo.setObjectName("compareCombo")
        self.compute_button = QPushButton("Compute statistics")
        self.compute_button.setObjectName("computeStats")
        self.zfilter_button = QPushButton("z-filter…")
        self.compute_button.clicked.connect(self.request_compute)
        self.zfilter_button.clicked.connect(self.zfilterRequested)
        for widget in (self.per_document, self.min_count, self.alpha):
            settings.addWidget(widget)
        settings.addStretch(1)
        header = QHBoxLayout()
        header.addWidget(self.title, 1)
        header.addWidget(QLabel("compare with"))
        header.addWidget(self.compare_combo)
        header.addWidget(self.compute_button)
        header.addWidget(self.zfilter_button)

        self.plot = CompetencyPlot(self)
        self.plot.featureClicked.connect(self.featureActivated)
        self.summary = QLabel()
        self.summary.setWordWrap(True)

        self.features_model = ArrayTableModel(self)
        self.features_table = self._table(self.features_model)
        self.search = QLineEdit(placeholderText="Filter features…", clearButtonEnabled=True)
        self.significant_only = QCheckBox("significant only")
        self.significant_only.setChecked(True)
        feature_tab = QWidget()
        fl = QVBoxLayout(feature_tab)
        fl.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(self.search, 1)
        row.addWidget(self.significant_only)
        fl.addLayout(row)
        fl.addWidget(self.features_table, 1)
        self.delta_model = ArrayTableModel(self)
        self.delta_table = self._table(self.delta_model)
        self.tabs = QTabWidget()
        self.tabs.addTab(feature_tab, "Biased features")
        self.tabs.addTab(self.delta_table, "Δz (compare)")

        splitter = QSplitter()
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.plot, 1)
        ll.addWidget(self.summary)
        splitter.addWidget(left)
        splitter.addWidget(self.tabs)
        splitter.setSizes([700, 500])
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addLayout(settings)
        layout.addWidget(splitter, 1)

        self._filter_timer = QTimer(self, singleShot=True, interval=200)
        self._filter_timer.timeout.connect(self.apply_filters)
        self.search.textChanged.connect(self._filter_timer.start)
        self.significant_only.toggled.connect(self.apply_filters)
        self.plot.label_combo.currentIndexChanged.connect(self.apply_filters)
        self.plot.min_count.valueChanged.connect(self._filter_timer.start)
        self.features_table.doubleClicked.connect(lambda i: self._activate(self.features_model, self._feature_keys, i))
        self.delta_table.doubleClicked.connect(lambda i: self._activate(self.delta_model, self._delta_keys, i))
        self.set_dataset(None, [])

    # ------------------------------------------------------------------ public
    def set_dataset(self, dataset: DatasetInfo | None, datasets: list[DatasetInfo]) -> None:
        """Show the settings for ``dataset``; ``datasets`` fill the comparison choice."""
        self.dataset = dataset
        self.title.setText(
            f"<b>{dataset.name}</b> — {count_of(dataset.row_count, 'example')}, labels: {', '.join(dataset.labels)}"
            if dataset else "No dataset"
        )
        self.compute_button.setEnabled(dataset is not None)
        self.zfilter_button.setEnabled(dataset is not None)
        self.compare_combo.clear()
        self.compare_combo.addItem("—", None)
        for d in datasets:
            if dataset is not None and d.id != dataset.id and d.task == dataset.task and set(d.labels) == set(dataset.labels):
                self.compare_combo.addItem(d.name, d.id)
        if self.stats is not None and (dataset is None or self.stats_dataset_id != dataset.id):
            self.show_stats(None)

    stats_dataset_id: int | None = None

    def config(self) -> StatsConfig:
        """The statistics settings chosen in the panel."""
        families = {key: box.isChecked() for key, box in self.family_boxes.items()}
        if not any(families.values()):
            families["unigrams"] = True
        return StatsConfig(
            features=FeatureConfig(per_document=self.per_document.isChecked(), **families),
            zstats=ZStatsConfig(alpha=self.alpha.value(), min_count=self.min_count.value()),
        )

    def request_compute(self) -> None:
        if self.dataset is not None:
            self.computeRequested.emit(self.config(), self.compare_combo.currentData())

    def set_busy(self, busy: bool) -> None:
        self.compute_button.setEnabled(not busy and self.dataset is not None)
        self.compute_button.setText("Computing…" if busy else "Compute statistics")

    def show_stats(self, stats: ZStatsResult | None, compare: ZStatsResult | None = None,
                   dataset_id: int | None = None) -> None:
        """Show computed statistics (and optionally a second dataset's for comparison)."""
        self.stats, self.compare = stats, compare
        self.stats_dataset_id = dataset_id
        self.set_busy(False)
        self.plot.set_stats(stats, compare)
        if stats is None:
            self.features_model.set_columns([])
            self.delta_model.set_columns([])
            self.summary.clear()
            return
        columns, significant, self._feature_keys = features_columns(stats)
        self.features_model.set_columns(columns, bold=significant)
        self._size_columns(self.features_table)
        self.features_model.sort(Z_COLUMN, Qt.SortOrder.DescendingOrder)
        self.features_table.horizontalHeader().setSortIndicator(Z_COLUMN, Qt.SortOrder.DescendingOrder)
        if compare is not None:
            rows = compare_zstats(stats, compare)
            dcols, self._delta_keys = delta_columns(rows)
            self.delta_model.set_columns(dcols)
            self._size_columns(self.delta_table)
            self.tabs.setTabText(1, f"Δz (compare, {len(rows):,})")
        else:
            self.delta_model.set_columns([])
            self._delta_keys = {}
            self.tabs.setTabText(1, "Δz (compare)")
        n_sig = int(stats.significant_mask.any(axis=1).sum())
        self.summary.setText(
            f"{len(stats.feature_names):,} features, {int(stats.tested.sum()):,} with n ≥ {stats.min_count}; "
            f"z* = {stats.z_threshold:.2f} (α = {stats.alpha}, Bonferroni over m = {stats.m:,}); "
            f"{n_sig:,} features significant for some label; p0 = {stats.p0:.3f}."
        )
        self.apply_filters()

    def apply_filters(self) -> None:
        """Filter both tables by the plot's label, kinds and min count, the search text and significance."""
        for model, keys, sig_filter in ((self.features_model, self._feature_keys, True),
                                        (self.delta_model, self._delta_keys, False)):
            if not keys:
                continue
            mask = np.ones(len(keys["feature"]), bool)
            label = self.plot.label_combo.currentText()
            if label and label != ALL:
                mask &= keys["label"] == label
            kinds = [k for k, b in self.plot.kind_boxes.items() if b.isChecked()]
            mask &= np.isin(keys["kind"], kinds)
            mask &= keys["n"] >= self.plot.min_count.value()
            needle = self.search.text().strip().lower()
            if needle:
                mask &= np.char.find(np.char.lower(keys["feature"].astype(str)), needle) >= 0
            if sig_filter and self.significant_only.isChecked():
                mask &= keys["significant"]
            model.set_mask(mask)

    # ------------------------------------------------------------------ internals
    def _table(self, model: ArrayTableModel) -> QTableView:
        view = QTableView()
        view.setModel(model)
        view.setSortingEnabled(True)
        view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.setWordWrap(False)
        view.verticalHeader().hide()
        view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        view.verticalHeader().setDefaultSectionSize(view.fontMetrics().height() + 6)
        view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        return view

    @staticmethod
    def _size_columns(view: QTableView) -> None:
        """Columns as wide as their content (sampled rows), the feature column at most 220 px."""
        header = view.horizontalHeader()
        header.setResizeContentsPrecision(200)
        view.resizeColumnsToContents()
        if view.model().columnCount():
            view.setColumnWidth(0, min(max(view.columnWidth(0), 90), 220))

    def _activate(self, model: ArrayTableModel, keys: dict[str, np.ndarray], index: QModelIndex) -> None:
        if not index.isValid() or not keys:
            return
        base = model.base_row(index.row())
        self.featureActivated.emit(str(keys["feature"][base]), str(keys["label"][base]))
