"""The dataset table: search, label filter, row count and a lazily filled table view."""

from __future__ import annotations

from PySide6.QtCore import QItemSelection, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine.store import DatasetInfo, ExampleQuery, Project
from widgets.models.examples_model import ExamplesTableModel

ALL_LABELS = "All labels"


class ExamplesView(QWidget):
    """Shows one dataset version's examples; stays fluid at 500k rows.

    Sorting, searching and label filtering run as SQL in the store (see
    :class:`~widgets.models.examples_model.ExamplesTableModel`), never over all rows in Python.
    """

    exampleSelected = Signal(object)
    """Emitted with the selected example's row dict (or ``None``)."""

    idsSelected = Signal(list)
    """Emitted with the ids of the selected examples (in table order) when the selection changes."""

    def __init__(self, parent: QWidget | None = None, *, debounce_ms: int = 250) -> None:
        super().__init__(parent)
        self.model = ExamplesTableModel(parent=self)
        self.search = QLineEdit(placeholderText="Search text…  (Ctrl+F)", clearButtonEnabled=True)
        self.search.setObjectName("search")
        self.label_filter = QComboBox()
        self.label_filter.setObjectName("labelFilter")
        self.label_filter.addItem(ALL_LABELS)
        self.count_label = QLabel()
        self.clear_subset = QPushButton("Show all rows")
        self.clear_subset.hide()
        self.clear_subset.clicked.connect(lambda: self.set_example_filter(None))

        self.table = QTableView()
        self.table.setObjectName("examplesTable")
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setWordWrap(False)
        self.table.setAlternatingRowColors(True)
        vh = self.table.verticalHeader()
        vh.hide()  # the "#" column shows the example id; row numbers would only duplicate it
        vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vh.setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.table.horizontalHeader().setStretchLastSection(False)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)

        self._debounce = QTimer(self, singleShot=True, interval=debounce_ms)
        self._debounce.timeout.connect(self._apply_search)
        self.search.textChanged.connect(self._debounce.start)
        self.label_filter.currentIndexChanged.connect(self._apply_label)
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self.model.modelReset.connect(self._update_count)

        bar = QHBoxLayout()
        bar.addWidget(self.search, 1)
        bar.addWidget(self.label_filter)
        bar.addWidget(self.clear_subset)
        bar.addWidget(self.count_label)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.table, 1)

    # ------------------------------------------------------------------ public
    def show_dataset(self, project: Project | None, dataset: DatasetInfo | None) -> None:
        """Show ``dataset`` of ``project`` (``None`` clears the view)."""
        self.model.set_project(project)
        self.label_filter.blockSignals(True)
        self.label_filter.clear()
        self.label_filter.addItem(ALL_LABELS)
        if dataset is not None:
            self.label_filter.addItems(dataset.labels)
        self.label_filter.blockSignals(False)
        self.search.blockSignals(True)
        self.search.clear()
        self.search.blockSignals(False)
        self.clear_subset.hide()
        self.model.set_query(ExampleQuery(dataset.id) if (project and dataset) else None)
        if dataset is not None:
            self._size_columns(dataset)

    def set_example_filter(self, example_ids: list[int] | None, description: str = "") -> None:
        """Show only these examples (e.g. those holding a feature); ``None`` shows all."""
        self.model.set_example_filter(example_ids)
        self.clear_subset.setVisible(example_ids is not None)
        self.clear_subset.setToolTip(description)

    # ------------------------------------------------------------------ internals
    def _size_columns(self, dataset: DatasetInfo) -> None:
        header = self.table.horizontalHeader()
        keys = self.model.column_keys
        for col, key in enumerate(keys):
            if key in ("text", "premise", "hypothesis"):
                header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
                self.table.setColumnWidth(col, 560 if key == "text" else 360)
            else:
                self.table.setColumnWidth(col, {"id": 64, "label": 110}.get(key, 80))

    def _apply_search(self) -> None:
        self.model.set_search(self.search.text().strip())

    def _apply_label(self) -> None:
        text = self.label_filter.currentText()
        self.model.set_label_filter(None if text in ("", ALL_LABELS) else [text])

    def _update_count(self) -> None:
        dataset = self.model.dataset
        total = dataset.row_count if dataset else 0
        shown = self.model.rowCount()
        self.count_label.setText(f"{shown:,} of {total:,} rows" if shown != total else f"{total:,} rows")

    def selected_ids(self) -> list[int]:
        """Ids of the selected examples, in table order."""
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        ids = []
        for r in rows:
            try:
                ids.append(int(self.model.example_id_at(r)))
            except (KeyError, IndexError):  # the row went away since the last refresh
                continue
        return ids

    def _selection_changed(self, selected: QItemSelection, deselected: QItemSelection) -> None:
        self.idsSelected.emit(self.selected_ids())
        index = self.table.currentIndex()
        rows = self.table.selectionModel().selectedRows()
        if rows:
            index = rows[-1]
        row = None
        if index.isValid():
            try:
                row = self.model.example_at(index.row())
            except (KeyError, IndexError):  # the row went away since the last refresh
                row = None
        self.exampleSelected.emit(row)
