"""A table model over counterbias candidates, and the proxy that filters them by status and example.

Rows are the decoded dicts of :func:`engine.counterbias.review.candidate_rows`, each with
an ``original`` dict (the example's text fields) and ``original_label`` added by the
application. The model never queries the project: the controller gives it rows and
updates single rows after a decision (:meth:`CandidatesTableModel.update_row`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import (
    QObject,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QBrush, QColor

from widgets.models.examples_model import one_line
from widgets.models.row_list import ModelIndex, RowListModel


__all__ = ["STATUS_COLORS", "CandidatesProxy", "CandidatesTableModel", "edited_field"]

#: Background of the Status cell per review state.
STATUS_COLORS = {
    "proposed": QColor(255, 255, 255, 0),
    "accepted": QColor(26, 107, 26, 60),
    "rejected": QColor(120, 120, 120, 60),
    "failed": QColor(164, 0, 0, 50),
}
_GREY = QColor(140, 140, 140)


def edited_field(candidate: dict[str, Any]) -> str:
    """The text field a candidate changed (``text``, or ``hypothesis``/``premise``)."""
    generated = (candidate.get("meta") or {}).get("generated") or {}
    return next(iter(generated), "text")


def _distance(cand: dict[str, Any]) -> float | None:
    """The candidate's edit distance: as the controller computed it, else as stored at generation."""
    if cand.get("edit_distance") is not None:
        return float(cand["edit_distance"])
    stored = (cand.get("meta") or {}).get("edit_distance") or {}
    value = stored.get(edited_field(cand))
    return None if value is None or cand.get("status") == "failed" else float(value)


class CandidatesTableModel(RowListModel[dict[str, Any]]):
    """Candidates: ID, Example, Target, Status, Flipped, P(target), Spurious kept, Edit distance, Text.

    Parameters
    ----------
    parent
        Owning QObject.
    """

    ID, EXAMPLE, TARGET, STATUS, FLIPPED, PROB, KEPT, EDIT, TEXT = range(9)
    HEADERS = ("ID", "Example", "Target", "Status", "Flipped", "P(target)", "Kept", "Edit", "Candidate text")

    #: The candidate id (int).
    CandidateIdRole = Qt.ItemDataRole.UserRole + 1
    #: The candidate dict itself.
    CandidateRole = Qt.ItemDataRole.UserRole + 2
    #: Raw sortable value of the cell.
    SortRole = Qt.ItemDataRole.UserRole + 3
    #: The review status (str).
    StatusRole = Qt.ItemDataRole.UserRole + 4
    #: The example id (int).
    ExampleIdRole = Qt.ItemDataRole.UserRole + 5

    def candidate_at(self, row: int) -> dict[str, Any]:
        """The candidate in ``row``."""
        return self._rows[row]

    def row_of(self, candidate_id: int) -> int | None:
        """Row of ``candidate_id``, or ``None``."""
        for row, cand in enumerate(self._rows):
            if int(cand["id"]) == int(candidate_id):
                return row
        return None

    def update_row(self, candidate: dict[str, Any]) -> None:
        """Replace the row holding ``candidate['id']`` (keeping its ``original``) and notify views."""
        row = self.row_of(int(candidate["id"]))
        if row is None:
            return
        old = self._rows[row]
        self._rows[row] = {**candidate, "original": old.get("original", {}),
                           "original_label": old.get("original_label")}
        self.dataChanged.emit(self.index(row, 0), self.index(row, self.columnCount() - 1))

    # ------------------------------------------------------------------ Qt model API
    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        cand = self._rows[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(cand, column)
        if role == self.SortRole:
            return self._sort_value(cand, column)
        if role == self.CandidateIdRole:
            return int(cand["id"])
        if role == self.CandidateRole:
            return cand
        if role == self.StatusRole:
            return cand["status"]
        if role == self.ExampleIdRole:
            return int(cand["example_id"])
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(cand, column)
        if role == Qt.ItemDataRole.BackgroundRole and column == self.STATUS:
            return QBrush(STATUS_COLORS.get(cand["status"], STATUS_COLORS["proposed"]))
        if role == Qt.ItemDataRole.ForegroundRole and self._greyed(cand):
            return QBrush(_GREY)
        if role == Qt.ItemDataRole.TextAlignmentRole and column in (self.ID, self.EXAMPLE, self.PROB, self.EDIT):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _greyed(cand: dict[str, Any]) -> bool:
        """Judged candidates that fail the filter are greyed (never hidden)."""
        scores = cand.get("scores") or {}
        return cand["status"] == "proposed" and scores.get("passes") is False

    def _display(self, cand: dict[str, Any], column: int) -> str | int | None:
        scores = cand.get("scores") or {}
        judge = scores.get("judge") or {}
        if column == self.ID:
            return int(cand["id"])
        if column == self.EXAMPLE:
            return int(cand["example_id"])
        if column == self.TARGET:
            return cand["target_label"]
        if column == self.STATUS:
            return cand["status"]
        if column == self.FLIPPED:
            return "—" if "flipped" not in judge else ("yes" if judge["flipped"] else "no")
        if column == self.PROB:
            return "—" if "target_prob" not in judge else f"{float(judge['target_prob']):.2f}"
        if column == self.KEPT:
            if "spurious_kept" not in scores:
                return "—"
            return "yes" if scores["spurious_kept"] else "no"
        if column == self.EDIT:
            distance = _distance(cand)
            return "—" if distance is None else f"{distance:.2f}"
        if column == self.TEXT:
            if cand["status"] == "failed":
                error = (cand.get("meta") or {}).get("error") or {}
                return f"failed at {error.get('step', '?')}: {one_line(error.get('message', ''), 120)}"
            return one_line(cand.get(edited_field(cand)) or "", 160)
        return None

    def _sort_value(self, cand: dict[str, Any], column: int) -> Any:
        scores = cand.get("scores") or {}
        judge = scores.get("judge") or {}
        if column == self.PROB:
            return float(judge.get("target_prob", -1.0))
        if column == self.FLIPPED:
            return -1 if "flipped" not in judge else int(bool(judge["flipped"]))
        if column == self.KEPT:
            return -1 if "spurious_kept" not in scores else int(bool(scores["spurious_kept"]))
        if column == self.EDIT:
            distance = _distance(cand)
            return -1.0 if distance is None else distance
        value = self._display(cand, column)
        return value.casefold() if isinstance(value, str) else value

    def _tooltip(self, cand: dict[str, Any], column: int) -> str | None:
        if column == self.TEXT:
            field = edited_field(cand)
            return f"{field}: {cand.get(field) or ''}"[:2000]
        if column == self.KEPT and "spurious_kept" in (cand.get("scores") or {}):
            missing = cand["scores"].get("missing_spurious") or []
            return "every spurious word kept" if not missing else f"spurious words lost: {', '.join(missing)}"
        if column == self.EDIT:
            return ("Word-level edit distance to the original: the share of words changed "
                    "(0 = unchanged; human counterfactual revisions ≈ 0.2)")
        if column == self.STATUS and self._greyed(cand):
            return "proposed, but fails the filter (label not flipped or a spurious word lost)"
        return None


class CandidatesProxy(QSortFilterProxyModel):
    """Sorts by :attr:`CandidatesTableModel.SortRole`; filters by status set and example id."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setSortRole(CandidatesTableModel.SortRole)
        self._statuses: frozenset[str] | None = None
        self._example_id: int | None = None

    def set_statuses(self, statuses: Iterable[str] | None) -> None:
        """Show only these statuses (``None``: all)."""
        self.beginFilterChange()
        self._statuses = None if statuses is None else frozenset(statuses)
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def set_example(self, example_id: int | None) -> None:
        """Show only the candidates of this example (``None``: all)."""
        self.beginFilterChange()
        self._example_id = None if example_id is None else int(example_id)
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    @property
    def statuses(self) -> frozenset[str] | None:
        return self._statuses

    @property
    def example_id(self) -> int | None:
        return self._example_id

    def filterAcceptsRow(self, source_row: int, source_parent: ModelIndex) -> bool:  # noqa: N802
        model = self.sourceModel()
        index = model.index(source_row, 0, source_parent)
        if self._statuses is not None and index.data(CandidatesTableModel.StatusRole) not in self._statuses:
            return False
        return self._example_id is None or index.data(CandidatesTableModel.ExampleIdRole) == self._example_id
