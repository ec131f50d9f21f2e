"""A lazy table model over one dataset version's examples (fluid at 500k rows).

On every query change the model fetches only the ordered id array
(:meth:`engine.store.Project.example_ids`); rows are read on demand, a page at a time,
into a small LRU cache when a view asks for them. Sorting and filtering are done by SQL
through the :class:`~engine.store.ExampleQuery`: never put this model behind a
``QSortFilterProxyModel``, which would read every row.

Views over it should use fixed row heights (``verticalHeader().setSectionResizeMode(Fixed)``,
never ``ResizeToContents``) and ``setWordWrap(False)``, so that scrolling touches only the
visible pages. ``QTableView.setSortingEnabled(True)`` immediately calls :meth:`sort` with
the header's current indicator (descending by default in Qt 6): set
``horizontalHeader().setSortIndicator(0, Qt.AscendingOrder)`` first to keep file order.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal

from engine.store import DatasetInfo, ExampleQuery, Project
from widgets.labels import label_color_for, tint

ModelIndex = QModelIndex | QPersistentModelIndex

#: Newlines are shown as this character in one-line cells.
NEWLINE_MARK = "⏎"
#: Characters shown in a cell (DisplayRole) before eliding.
DISPLAY_CHARS = 300
#: Characters shown in a tooltip before eliding.
TOOLTIP_CHARS = 2000

#: (header, example column, ExampleQuery.order_by) per task.
_COLUMNS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "single": (
        ("#", "id", "position"),
        ("Label", "label", "label"),
        ("Text", "text", "text"),
        ("Split", "split", "split"),
        ("Source", "source", "source"),
    ),
    "pair": (
        ("#", "id", "position"),
        ("Label", "label", "label"),
        ("Premise", "premise", "premise"),
        ("Hypothesis", "hypothesis", "hypothesis"),
        ("Split", "split", "split"),
        ("Source", "source", "source"),
    ),
}
_TEXT_FIELDS = frozenset({"text", "premise", "hypothesis"})


def one_line(text: str | None, limit: int = DISPLAY_CHARS) -> str:
    """``text`` on one line (newlines shown as ⏎, tabs as spaces), cut to ``limit`` characters.

    Examples
    --------
    >>> one_line("a\\nb\\r\\nc")
    'a⏎b⏎c'
    >>> one_line("abcdef", limit=3)
    'abc…'
    """
    if not text:
        return ""
    head = text[: limit + 1]
    head = head.replace("\r\n", NEWLINE_MARK).replace("\n", NEWLINE_MARK).replace("\r", NEWLINE_MARK)
    head = head.replace("\t", " ")
    return head[:limit] + "…" if len(text) > limit else head


def clipped(text: str | None, limit: int = TOOLTIP_CHARS) -> str:
    """``text`` cut to ``limit`` characters (with an ellipsis when cut)."""
    if not text:
        return ""
    return text if len(text) <= limit else text[:limit] + "…"


class ExamplesTableModel(QAbstractTableModel):
    """Examples of one dataset version matching an :class:`~engine.store.ExampleQuery`.

    Parameters
    ----------
    project
        The open project to read from (on the GUI thread's read connection).
    parent
        Owning QObject.
    page_size
        Rows read per page.
    max_pages
        Pages kept in the LRU cache.
    """

    #: The example's id (int).
    ExampleIdRole = Qt.ItemDataRole.UserRole + 1
    #: The example's label (str).
    LabelRole = Qt.ItemDataRole.UserRole + 2
    #: The full example row (dict of the ``examples`` columns).
    RowDictRole = Qt.ItemDataRole.UserRole + 3

    query_changed = Signal(object)
    """``query_changed(query)``: the model now shows ``query`` (an ExampleQuery or ``None``)."""

    def __init__(
        self,
        project: Project | None = None,
        parent: QObject | None = None,
        *,
        page_size: int = 200,
        max_pages: int = 32,
    ) -> None:
        super().__init__(parent)
        if page_size < 1 or max_pages < 1:
            raise ValueError("page_size and max_pages must be positive")
        self._project = project
        self._page_size = page_size
        self._max_pages = max_pages
        self._query: ExampleQuery | None = None
        self._dataset: DatasetInfo | None = None
        self._ids = np.empty(0, dtype=np.int64)
        self._order: np.ndarray | None = None  # argsort of _ids, built on first row_of_example
        self._sorted_ids: np.ndarray | None = None
        self._pages: OrderedDict[int, list[dict[str, Any] | None]] = OrderedDict()
        self._columns: tuple[tuple[str, str, str], ...] = ()
        self._colors: dict[str, tuple[Any, Any]] = {}

    # ------------------------------------------------------------------ state
    @property
    def project(self) -> Project | None:
        """The project read from."""
        return self._project

    @property
    def query(self) -> ExampleQuery | None:
        """The query shown (``None``: empty model)."""
        return self._query

    @property
    def dataset(self) -> DatasetInfo | None:
        """The dataset version of the query."""
        return self._dataset

    @property
    def labels(self) -> list[str]:
        """The dataset's label set (colour order)."""
        return list(self._dataset.labels) if self._dataset is not None else []

    @property
    def ids(self) -> np.ndarray:
        """Example ids in row order (read-only int64 array; ``ids[row]`` is O(1))."""
        return self._ids

    @property
    def column_keys(self) -> tuple[str, ...]:
        """Example field of each column (``"id"``, ``"label"``, ``"text"``…)."""
        return tuple(key for _, key, _ in self._columns)

    @property
    def cached_pages(self) -> int:
        """Number of pages currently held in the cache."""
        return len(self._pages)

    def set_project(self, project: Project | None) -> None:
        """Read from ``project`` from now on; the model becomes empty."""
        self._project = project
        self.set_query(None)

    def set_query(self, query: ExampleQuery | None, ids: np.ndarray | None = None) -> None:
        """Show the examples matching ``query`` (reset the model).

        Parameters
        ----------
        query
            What to show (``None``: nothing).
        ids
            The query's ids if already computed (e.g. by ``project.example_ids`` in a
            background job); otherwise they are fetched here.

        Raises
        ------
        RuntimeError
            If a query is given but the model has no project.
        engine.errors.DatasetNotFoundError
            If the query's dataset does not exist.
        """
        if query is not None and self._project is None:
            raise RuntimeError("ExamplesTableModel has no project to query")
        dataset = None
        new_ids = np.empty(0, dtype=np.int64)
        if query is not None:
            assert self._project is not None
            dataset = self._project.dataset(query.dataset_id)
            fetched = self._project.example_ids(query) if ids is None else ids
            new_ids = np.ascontiguousarray(fetched, dtype=np.int64)
        new_ids.setflags(write=False)
        self.beginResetModel()
        self._query = query
        self._dataset = dataset
        self._ids = new_ids
        self._order = None
        self._sorted_ids = None
        self._pages.clear()
        self._columns = _COLUMNS.get(dataset.task, _COLUMNS["single"]) if dataset is not None else ()
        self._colors = {}
        if dataset is not None:
            for label in dataset.labels:
                color = label_color_for(label, dataset.labels)
                self._colors[label] = (color, tint(color))
        self.endResetModel()
        self.query_changed.emit(query)

    def refresh(self) -> None:
        """Re-run the current query (after the project changed)."""
        self.set_query(self._query)

    def invalidate_rows(self) -> None:
        """Forget cached rows (their contents changed, not their order) and repaint."""
        self._pages.clear()
        if self.rowCount() and self.columnCount():
            self.dataChanged.emit(self.index(0, 0), self.index(self.rowCount() - 1, self.columnCount() - 1))

    # ------------------------------------------------------------------ filters
    def set_search(self, text: str) -> None:
        """Keep examples whose text contains ``text`` (case-insensitive ASCII; ``""``: all)."""
        self._replace(search=text)

    def set_label_filter(self, labels: Iterable[str] | None) -> None:
        """Keep examples with one of ``labels`` (``None``: all)."""
        self._replace(labels=None if labels is None else tuple(labels))

    def set_split_filter(self, splits: Iterable[str] | None) -> None:
        """Keep examples in one of ``splits`` (``None``: all)."""
        self._replace(splits=None if splits is None else tuple(splits))

    def set_example_filter(self, example_ids: Iterable[int] | None) -> None:
        """Keep only these example ids (e.g. those holding a feature; ``None``: all)."""
        self._replace(example_ids=None if example_ids is None else tuple(int(i) for i in example_ids))

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Order rows by ``column`` in SQL (resets the model; ``column < 0``: file order)."""
        if self._query is None:
            return
        key = self._columns[column][2] if 0 <= column < len(self._columns) else "position"
        descending = order == Qt.SortOrder.DescendingOrder
        if key == self._query.order_by and descending == self._query.descending:
            return
        self._replace(order_by=key, descending=descending)

    def sort_column(self) -> int:
        """Column the current query is ordered by (``-1``: none shown)."""
        if self._query is None:
            return -1
        for i, (_, _, key) in enumerate(self._columns):
            if key == self._query.order_by:
                return i
        return -1

    # ------------------------------------------------------------------ rows
    def example_id_at(self, row: int) -> int:
        """Id of the example in ``row``."""
        return int(self._ids[row])

    def example_at(self, row: int) -> dict[str, Any]:
        """The full example row shown in ``row``.

        Raises
        ------
        IndexError
            If ``row`` is out of range.
        KeyError
            If the example no longer exists (the model needs a :meth:`refresh`).
        """
        if not 0 <= row < len(self._ids):
            raise IndexError(f"row {row} out of range (0..{len(self._ids) - 1})")
        found = self._row(row)
        if found is None:
            raise KeyError(f"example {int(self._ids[row])} no longer exists")
        return found

    def row_of_example(self, example_id: int) -> int | None:
        """Row showing ``example_id``, or ``None`` (O(log n) after a one-off O(n log n) index)."""
        if not len(self._ids):
            return None
        if self._order is None or self._sorted_ids is None:
            self._order = np.argsort(self._ids, kind="stable")
            self._sorted_ids = self._ids[self._order]
        sorted_ids = self._sorted_ids
        pos = int(np.searchsorted(sorted_ids, example_id))
        if pos < len(sorted_ids) and sorted_ids[pos] == example_id:
            return int(self._order[pos])
        return None

    # ------------------------------------------------------------------ Qt model API
    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._ids)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._columns)

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren

    def headerData(  # noqa: N802
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Vertical:
            if role == Qt.ItemDataRole.DisplayRole and 0 <= section < len(self._ids):
                return str(section + 1)
            return None
        if not 0 <= section < len(self._columns):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self._columns[section][0]
        if role == Qt.ItemDataRole.ToolTipRole and self._columns[section][1] == "id":
            return "Example id (sorting orders by position in the dataset)"
        return None

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        if not (0 <= row < len(self._ids) and 0 <= column < len(self._columns)):
            return None
        if role == self.ExampleIdRole:
            return int(self._ids[row])
        if role not in _ROW_ROLES:
            return None
        example = self._row(row)
        if example is None:
            return None
        key = self._columns[column][1]
        if role == Qt.ItemDataRole.DisplayRole:
            value = example.get(key)
            if key in _TEXT_FIELDS:
                return one_line(value)
            return "" if value is None else str(value)
        if role == Qt.ItemDataRole.ToolTipRole:
            if key in _TEXT_FIELDS:
                return clipped(example.get(key)) or None
            if key == "id":
                ext = example.get("ext_id")
                return f"Example {example['id']}" + (f" (id in file: {ext})" if ext else "")
            return None
        if role == self.LabelRole:
            return example.get("label")
        if role == self.RowDictRole:
            return dict(example)
        if key == "label" and role in (Qt.ItemDataRole.DecorationRole, Qt.ItemDataRole.BackgroundRole):
            colors = self._colors.get(example.get("label") or "")
            if colors is None:
                colors = (label_color_for(None, ()), tint(label_color_for(None, ())))
            return colors[0] if role == Qt.ItemDataRole.DecorationRole else colors[1]
        if role == Qt.ItemDataRole.TextAlignmentRole and key == "id":
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    # ------------------------------------------------------------------ helpers
    def _replace(self, **changes: Any) -> None:
        if self._query is None:
            return
        query = dataclasses.replace(self._query, **changes)
        if query != self._query:
            self.set_query(query)

    def _row(self, row: int) -> dict[str, Any] | None:
        page_no = row // self._page_size
        page = self._pages.get(page_no)
        if page is None:
            page = self._fetch_page(page_no)
        else:
            self._pages.move_to_end(page_no)
        return page[row - page_no * self._page_size]

    def _fetch_page(self, page_no: int) -> list[dict[str, Any] | None]:
        assert self._project is not None
        start = page_no * self._page_size
        ids: Sequence[int] = self._ids[start : start + self._page_size].tolist()
        found = {r["id"]: r for r in self._project.examples(ids)}
        page = [found.get(i) for i in ids]
        self._pages[page_no] = page
        while len(self._pages) > self._max_pages:
            self._pages.popitem(last=False)
        return page


_ROW_ROLES = frozenset(
    {
        Qt.ItemDataRole.DisplayRole,
        Qt.ItemDataRole.ToolTipRole,
        Qt.ItemDataRole.DecorationRole,
        Qt.ItemDataRole.BackgroundRole,
        Qt.ItemDataRole.TextAlignmentRole,
        ExamplesTableModel.LabelRole,
        ExamplesTableModel.RowDictRole,
    }
)
