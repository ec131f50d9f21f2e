"""The list of the project's dataset versions (the Datasets dock)."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QSortFilterProxyModel, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QVBoxLayout, QWidget

from engine.store import DatasetInfo
from widgets.models.datasets_model import DatasetsTableModel

__all__ = ["DatasetsView"]


class DatasetsView(QWidget):
    """A sortable table of dataset versions; one is current.

    Parameters
    ----------
    parent
        Parent widget.
    """

    datasetSelected = Signal(int)
    """``datasetSelected(dataset_id)``: the user made another dataset current."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = DatasetsTableModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.table = QTableView(self)
        self.table.setObjectName("datasetsTable")
        self.table.setModel(self.proxy)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setSortingEnabled(True)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table)
        self._quiet = False
        self.table.selectionModel().currentRowChanged.connect(self._current_changed)

    def set_datasets(self, datasets: list[DatasetInfo]) -> None:
        """List ``datasets`` (the current row is set with :meth:`select`)."""
        self._quiet = True
        try:
            self.model.set_rows(datasets)
        finally:
            self._quiet = False
        self.table.resizeColumnsToContents()

    def select(self, dataset_id: int | None) -> None:
        """Mark ``dataset_id`` as current without emitting :attr:`datasetSelected`."""
        self._quiet = True
        try:
            if dataset_id is None:
                self.table.clearSelection()
                return
            for row in range(self.proxy.rowCount()):
                index = self.proxy.index(row, 0)
                if index.data(DatasetsTableModel.DatasetIdRole) == dataset_id:
                    self.table.setCurrentIndex(index)
                    self.table.selectRow(row)
                    return
        finally:
            self._quiet = False

    def current_id(self) -> int | None:
        """The id of the current row, or ``None``."""
        index = self.table.currentIndex()
        return index.data(DatasetsTableModel.DatasetIdRole) if index.isValid() else None

    def _current_changed(self, current: QModelIndex, previous: QModelIndex) -> None:
        if self._quiet or not current.isValid():
            return
        self.datasetSelected.emit(int(current.data(DatasetsTableModel.DatasetIdRole)))
