"""A table model over numpy columns with numpy sorting and filtering.

Statistics tables hold 10⁵–10⁶ rows. A QSortFilterProxyModel would call ``data()`` (Python)
for every comparison; here sorting is one ``np.argsort`` and filtering one boolean mask, and
the view only asks for the visible cells.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QFont

ModelIndex = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class Column:
    """One column: a title, the values (one per base row) and how to show them."""

    title: str
    values: np.ndarray
    fmt: Callable[[object], str] = str
    numeric: bool = False
    tooltip: str = ""


def fmt_float(digits: int) -> Callable[[object], str]:
    """Formatter with ``digits`` decimals; NaN shows as an en dash."""

    def _fmt(value: object) -> str:
        v = float(value)  # type: ignore[arg-type]
        return "–" if np.isnan(v) else f"{v:.{digits}f}"

    return _fmt


def fmt_int(value: object) -> str:
    return f"{int(value):,}"  # type: ignore[call-overload]


class ArrayTableModel(QAbstractTableModel):
    """Rows are indices into equal-length numpy columns.

    Use :meth:`set_columns` to load, :meth:`set_mask` to filter, ``sort()`` to order. The
    base-row index of a view row is available as :attr:`BaseRowRole`.
    """

    BaseRowRole = Qt.ItemDataRole.UserRole + 1
    """The row's index into the column arrays."""
    SortRole = Qt.ItemDataRole.UserRole + 2
    """The raw value (number or string) of a cell."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._columns: list[Column] = []
        self._n = 0
        self._mask: np.ndarray | None = None
        self._rows = np.zeros(0, dtype=np.int64)
        self._sort: tuple[int, Qt.SortOrder] | None = None
        self._bold: np.ndarray | None = None

    # ------------------------------------------------------------------ loading
    def set_columns(self, columns: Sequence[Column], *, bold: np.ndarray | None = None) -> None:
        """Replace every column (all of the same length); ``bold`` marks rows to emphasise."""
        lengths = {len(c.values) for c in columns}
        if len(lengths) > 1:
            raise ValueError(f"columns differ in length: {sorted(lengths)}")
        self.beginResetModel()
        self._columns = list(columns)
        self._n = lengths.pop() if lengths else 0
        self._mask = None
        self._bold = bold
        self._rows = self._ordered(np.arange(self._n))
        self.endResetModel()

    def set_mask(self, mask: np.ndarray | None) -> None:
        """Show only base rows where ``mask`` is true (``None``: all)."""
        self.beginResetModel()
        self._mask = mask
        rows = np.arange(self._n) if mask is None else np.flatnonzero(mask)
        self._rows = self._ordered(rows)
        self.endResetModel()

    def base_row(self, row: int) -> int:
        """Index into the column arrays of view row ``row``."""
        return int(self._rows[row])

    def view_row(self, base: int) -> int | None:
        """View row showing base row ``base`` (``None`` if filtered out)."""
        hits = np.flatnonzero(self._rows == base)
        return int(hits[0]) if len(hits) else None

    @property
    def base_rows(self) -> np.ndarray:
        """Base-row indices in view order (read-only)."""
        view = self._rows.view()
        view.flags.writeable = False
        return view

    # ------------------------------------------------------------------ Qt API
    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(self._columns):
            column = self._columns[section]
            if role == Qt.ItemDataRole.DisplayRole:
                return column.title
            if role == Qt.ItemDataRole.ToolTipRole and column.tooltip:
                return column.tooltip
        if orientation == Qt.Orientation.Vertical and role == Qt.ItemDataRole.DisplayRole:
            return section + 1
        return None

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not (0 <= index.row() < len(self._rows)):
            return None
        base = int(self._rows[index.row()])
        column = self._columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return column.fmt(column.values[base])
        if role == self.SortRole:
            value = column.values[base]
            return value.item() if isinstance(value, np.generic) else value
        if role == self.BaseRowRole:
            return base
        if role == Qt.ItemDataRole.TextAlignmentRole and column.numeric:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.FontRole and self._bold is not None and bool(self._bold[base]):
            font = QFont()
            font.setBold(True)
            return font
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        if not (0 <= column < len(self._columns)):
            return
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        bases = [int(self._rows[i.row()]) for i in persistent]
        self._sort = (column, order)
        self._rows = self._ordered(self._rows)
        if persistent:
            position = np.empty(self._n, dtype=np.int64)
            position[self._rows] = np.arange(len(self._rows))
            self.changePersistentIndexList(
                persistent, [self.index(int(position[b]), i.column()) for b, i in zip(bases, persistent)]
            )
        self.layoutChanged.emit()

    # ------------------------------------------------------------------ internals
    def _ordered(self, rows: np.ndarray) -> np.ndarray:
        if self._sort is None or not len(rows):
            return rows
        column, order = self._sort
        values = self._columns[column].values[rows]
        if values.dtype.kind == "f":
            values = np.where(np.isnan(values), np.inf if order == Qt.SortOrder.AscendingOrder else -np.inf, values)
        keys = np.argsort(values, kind="stable")
        if order == Qt.SortOrder.DescendingOrder:
            keys = keys[::-1]
        return rows[keys]
