"""A table model over the project's dataset versions (a few dozen rows at most).

Views sort and filter it through a ``QSortFilterProxyModel`` (see :func:`make_proxy`).
The Rows column's display value is an ``int``, so even a default proxy sorts it as a
number; :attr:`DatasetsTableModel.SortRole` adds case-insensitive names and label counts.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QObject,
    QSortFilterProxyModel,
    Qt,
)

from engine.store import DatasetInfo
from widgets.models.row_list import ModelIndex, RowListModel



class DatasetsTableModel(RowListModel[DatasetInfo]):
    """Dataset versions: Name, Kind, Task, Rows, Labels, Created.

    Parameters
    ----------
    parent
        Owning QObject.
    """

    NAME, KIND, TASK, ROWS, LABELS, CREATED = range(6)
    HEADERS = ("Name", "Kind", "Task", "Rows", "Labels", "Created")

    #: The dataset id (int).
    DatasetIdRole = Qt.ItemDataRole.UserRole + 1
    #: The :class:`~engine.store.DatasetInfo` itself.
    DatasetRole = Qt.ItemDataRole.UserRole + 2
    #: Raw sortable value of the cell (int rows, ISO date, lower-case text).
    SortRole = Qt.ItemDataRole.UserRole + 3

    def dataset_at(self, row: int) -> DatasetInfo:
        """The dataset in ``row``."""
        return self._rows[row]

    def row_of_dataset(self, dataset_id: int) -> int | None:
        """Row of ``dataset_id``, or ``None``."""
        for row, info in enumerate(self._rows):
            if info.id == dataset_id:
                return row
        return None

    # ------------------------------------------------------------------ Qt model API
    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        info = self._rows[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(info, column)
        if role == self.SortRole:
            return self._sort_value(info, column)
        if role == self.DatasetIdRole:
            return info.id
        if role == self.DatasetRole:
            return info
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(info, column)
        if role == Qt.ItemDataRole.TextAlignmentRole and column == self.ROWS:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    # ------------------------------------------------------------------ helpers
    def _display(self, info: DatasetInfo, column: int) -> str | int | None:
        if column == self.NAME:
            return info.name
        if column == self.KIND:
            return info.kind
        if column == self.TASK:
            return "text pair" if info.task == "pair" else "single text"
        if column == self.ROWS:
            return info.row_count  # an int, so any proxy sorts it as a number
        if column == self.LABELS:
            return ", ".join(info.labels)
        if column == self.CREATED:
            return info.created_at[:16].replace("T", " ")
        return None

    def _sort_value(self, info: DatasetInfo, column: int) -> Any:
        if column == self.ROWS:
            return info.row_count
        if column == self.LABELS:
            return len(info.labels)
        if column == self.CREATED:
            return info.created_at
        text = self._display(info, column)
        return text.casefold() if isinstance(text, str) else text

    def _tooltip(self, info: DatasetInfo, column: int) -> str | None:
        if column == self.NAME:
            lines = [f"{info.name} (id {info.id})"]
            if info.source:
                lines.append(f"Source: {info.source}")
            if info.parent_id is not None:
                lines.append(f"Derived from dataset {info.parent_id}")
            return "\n".join(lines)
        if column == self.LABELS:
            return "\n".join(info.labels)
        if column == self.CREATED:
            return info.created_at
        return None


def make_proxy(model: DatasetsTableModel, parent: QObject | None = None) -> QSortFilterProxyModel:
    """A sort/filter proxy over ``model``: sorts by :attr:`~DatasetsTableModel.SortRole`,
    filters case-insensitively on every column (``proxy.setFilterFixedString(text)``)."""
    proxy = QSortFilterProxyModel(parent)
    proxy.setSourceModel(model)
    proxy.setSortRole(DatasetsTableModel.SortRole)
    proxy.setFilterKeyColumn(-1)
    proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
    return proxy
