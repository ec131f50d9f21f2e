"""The jobs panel: running and finished background jobs, with progress bars and Cancel.

The panel shows a jobs table model (the runner's :class:`app.jobs.JobsTableModel`, or any model
with the :class:`JobsModel` shape) and asks a callback to cancel a job; it never runs jobs itself.
In the application::

    panel = JobsPanel(runner.model, cancel=runner.cancel)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from PySide6.QtCore import QItemSelection, QModelIndex, QPersistentModelIndex, QPoint, Qt, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionProgressBar,
    QStyleOptionViewItem,
    QTableView,
    QVBoxLayout,
    QWidget,
)


__all__ = ["JobsModel", "JobsPanel", "ProgressBarDelegate"]


def _short(title: str, limit: int = 28) -> str:
    return title if len(title) <= limit else title[: limit - 1] + "…"


class JobsModel(Protocol):
    """What the panel needs of a jobs table model (besides being a ``QAbstractItemModel``).

    Rows are job records with ``job_id`` and ``can_cancel``; ``TITLE``, ``PROGRESS`` and
    ``MESSAGE`` are column numbers and ``ProgressRole`` the role holding the completed fraction.
    """

    TITLE: int
    PROGRESS: int
    MESSAGE: int
    ProgressRole: int

    def job(self, job_id: int) -> Any: ...

    def job_at(self, row: int) -> Any: ...

    def row_of(self, job_id: int) -> int | None: ...

    def counts(self) -> dict[str, int]: ...

    def remove_finished(self) -> int: ...


class ProgressBarDelegate(QStyledItemDelegate):
    """Paints a float in [0, 1] (read from ``role``) as a progress bar.

    Parameters
    ----------
    role
        Item data role holding the fraction (the jobs model's ``ProgressRole``).
    parent
        Owning object (usually the view).
    """

    def __init__(self, role: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._role = role

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        fraction = index.data(self._role)
        if not isinstance(fraction, float):
            super().paint(painter, option, index)
            return
        # Paint the selection/background as usual, then the bar on top.
        background = QStyleOptionViewItem(option)
        self.initStyleOption(background, index)
        background.text = ""
        widget = option.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, background, painter, widget)

        bar = QStyleOptionProgressBar()
        bar.rect = option.rect.adjusted(2, 2, -2, -2)
        bar.minimum = 0
        bar.maximum = 1000
        bar.progress = round(min(max(fraction, 0.0), 1.0) * 1000)
        bar.text = f"{round(fraction * 100)} %"
        bar.textVisible = True
        bar.textAlignment = Qt.AlignmentFlag.AlignCenter
        # Qt 6 reads the orientation from State_Horizontal; without it the bar is vertical.
        bar.state = option.state | QStyle.StateFlag.State_Horizontal
        bar.palette = option.palette
        bar.fontMetrics = option.fontMetrics
        style.drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter, widget)


class JobsPanel(QWidget):
    """A table of jobs with a progress bar per row and a Cancel button.

    Parameters
    ----------
    model
        The jobs to show.
    cancel
        Called with a job id when the user cancels that job (e.g. ``JobRunner.cancel``).
        :attr:`cancel_requested` is emitted as well, so the callback may be omitted.
    parent
        Parent widget.
    """

    cancel_requested = Signal(int)
    """``cancel_requested(job_id)``: the user asked to cancel this job."""

    def __init__(
        self,
        model: JobsModel,
        cancel: Callable[[int], object] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._model = model
        self._cancel = cancel

        self.view = QTableView(self)
        self.view.setModel(model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setAlternatingRowColors(True)
        self.view.setWordWrap(False)
        self.view.verticalHeader().setVisible(False)
        self.view.setItemDelegateForColumn(model.PROGRESS, ProgressBarDelegate(model.ProgressRole, parent=self.view))
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._show_context_menu)
        header = self.view.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(model.MESSAGE, QHeaderView.ResizeMode.Stretch)
        self.view.setColumnWidth(model.TITLE, 220)
        self.view.setColumnWidth(model.PROGRESS, 120)

        self.summary = QLabel(self)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setToolTip("Stop the selected job (none selected: the newest one still running) at its next "
                                      "checkpoint; what it finished is kept")
        self.cancel_button.clicked.connect(self.cancel_selected)
        self.clear_button = QPushButton("Clear finished", self)
        self.clear_button.setToolTip("Remove finished, failed and cancelled jobs from the list")
        self.clear_button.clicked.connect(self._model.remove_finished)

        buttons = QHBoxLayout()
        buttons.addWidget(self.summary, 1)
        buttons.addWidget(self.clear_button)
        buttons.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view, 1)
        layout.addLayout(buttons)

        self.view.selectionModel().selectionChanged.connect(self._selection_changed)
        for signal in (model.dataChanged, model.rowsInserted, model.rowsRemoved, model.modelReset):
            signal.connect(self._update_controls)
        model.rowsInserted.connect(self._show_new_rows)
        self._update_controls()

    # ------------------------------------------------------------------ public API
    @property
    def model(self) -> JobsModel:
        """The model shown."""
        return self._model

    def selected_job(self) -> Any:
        """The job of the selected row, or ``None``."""
        rows = self.view.selectionModel().selectedRows()
        if not rows:
            return None
        return self._model.job_at(rows[0].row())

    def select_job(self, job_id: int) -> None:
        """Select the row of ``job_id`` (if it is listed)."""
        row = self._model.row_of(job_id)
        if row is not None:
            self.view.selectRow(row)

    def cancel_job(self, job_id: int) -> None:
        """Ask for ``job_id`` to be cancelled (callback, then :attr:`cancel_requested`)."""
        job = self._model.job(job_id)
        if job is None or not job.can_cancel:
            return
        if self._cancel is not None:
            self._cancel(job_id)
        self.cancel_requested.emit(job_id)

    def cancel_target(self) -> Any:
        """The job Cancel stops: the selected one if it can be cancelled, else the newest one that can."""
        job = self.selected_job()
        if job is not None and job.can_cancel:
            return job
        for row in range(self._model.rowCount() - 1, -1, -1):
            candidate = self._model.job_at(row)
            if candidate is not None and candidate.can_cancel:
                return candidate
        return None

    def cancel_selected(self) -> None:
        """Cancel :meth:`cancel_target` (the selected job, or the newest running one)."""
        job = self.cancel_target()
        if job is not None:
            self.cancel_job(job.job_id)

    # ------------------------------------------------------------------ slots
    def _selection_changed(self, selected: QItemSelection, deselected: QItemSelection) -> None:
        self._update_controls()

    def _show_new_rows(self, parent: QModelIndex, first: int, last: int) -> None:
        self.view.scrollTo(self._model.index(last, 0))  # a new job is never hidden below the visible rows

    def _update_controls(self, *args: object) -> None:
        target = self.cancel_target()
        self.cancel_button.setEnabled(target is not None)
        self.cancel_button.setText("Cancel" if target is None or target is self.selected_job() else
                                   f"Cancel “{_short(target.title)}”")
        counts = self._model.counts()
        running, queued = counts.get("running", 0), counts.get("queued", 0)
        self.clear_button.setEnabled(sum(counts.values()) > running + queued)
        parts = [f"{running} running"] if running else []
        if queued:
            parts.append(f"{queued} queued")
        self.summary.setText(", ".join(parts) if parts else "No running jobs")

    def _show_context_menu(self, pos: QPoint) -> None:
        index = self.view.indexAt(pos)
        if not index.isValid():
            return
        job = self._model.job_at(index.row())
        menu = QMenu(self)
        action = menu.addAction("Cancel job")
        action.setEnabled(job.can_cancel)
        action.triggered.connect(lambda: self.cancel_job(job.job_id))
        menu.addAction("Clear finished jobs", self._model.remove_finished)
        menu.popup(self.view.viewport().mapToGlobal(pos))
