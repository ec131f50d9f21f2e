"""A table model over background jobs: title, status, progress, message, ETA, elapsed.

The model holds plain :class:`JobRow` records and knows nothing about threads: the
runner (:class:`app.jobs.JobRunner`) adds rows with :meth:`JobsTableModel.add_job`
and updates them with :meth:`JobsTableModel.update_job`, on the GUI thread. While a job is
running, a one-second timer refreshes its ETA and Elapsed cells.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
)

from app.jobs.status import JobStatus

ModelIndex = QModelIndex | QPersistentModelIndex

#: Shown in the ETA / Elapsed columns when the value is unknown.
UNKNOWN = "—"


@dataclass
class JobRow:
    """One job as the table shows it.

    Parameters
    ----------
    job_id
        Unique id of the job (the runner's).
    title
        What the job does, e.g. ``"Import reviews.csv"``.
    status
        Where the job is in its life cycle.
    fraction
        Completion in [0, 1].
    message
        Latest progress message, or the error text of a failed job.
    created_at
        Wall-clock time the job was queued.
    started
        :func:`time.monotonic` when it started running (``None`` while queued).
    ended
        :func:`time.monotonic` when it ended (``None`` while active).
    cancel_requested
        Whether the user asked it to stop (it may still be running until its next check).
    """

    job_id: int
    title: str
    status: JobStatus = JobStatus.QUEUED
    fraction: float = 0.0
    message: str = ""
    created_at: datetime = field(default_factory=datetime.now)
    started: float | None = None
    ended: float | None = None
    cancel_requested: bool = False

    @property
    def can_cancel(self) -> bool:
        """Whether cancelling would do anything (active, not yet asked to stop)."""
        return self.status.is_active and not self.cancel_requested


_ROW_FIELDS = frozenset(f.name for f in fields(JobRow)) - {"job_id"}


def format_duration(seconds: float | None) -> str:
    """Short human duration: ``"7 s"``, ``"3 min 05 s"``, ``"2 h 04 min"`` (``"—"`` if unknown).

    Examples
    --------
    >>> format_duration(7.4), format_duration(185), format_duration(7440), format_duration(None)
    ('7 s', '3 min 05 s', '2 h 04 min', '—')
    """
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return UNKNOWN
    total = int(round(seconds))
    if total < 60:
        return f"{total} s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class JobsTableModel(QAbstractTableModel):
    """Jobs, newest last, with one column per aspect.

    Parameters
    ----------
    parent
        Owning QObject.
    clock
        Monotonic clock in seconds (tests may inject a fake one).
    tick_ms
        Refresh interval of the ETA / Elapsed cells while a job runs (0: never).
    """

    TITLE, STATUS, PROGRESS, MESSAGE, ETA, ELAPSED = range(6)
    HEADERS = ("Title", "Status", "Progress", "Message", "ETA", "Elapsed")

    #: Completion as a float in [0, 1] (for progress-bar delegates).
    ProgressRole = Qt.ItemDataRole.UserRole + 1
    #: The job's id (int).
    JobIdRole = Qt.ItemDataRole.UserRole + 2
    #: The job's status as its string value (``"running"``; compare with :class:`JobStatus`).
    StatusRole = Qt.ItemDataRole.UserRole + 3

    #: Below this fraction, or this many seconds of running, the ETA is not estimated.
    MIN_ETA_FRACTION = 0.01
    MIN_ETA_SECONDS = 1.0

    def __init__(
        self,
        parent: QObject | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        tick_ms: int = 1000,
    ) -> None:
        super().__init__(parent)
        self._rows: list[JobRow] = []
        self._row_of: dict[int, int] = {}
        self._clock = clock
        self._timer = QTimer(self)
        self._timer.setInterval(max(tick_ms, 1))
        self._timer.timeout.connect(self.tick)
        self._tick_enabled = tick_ms > 0

    # ------------------------------------------------------------------ Qt model API
    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.HEADERS)

    def headerData(  # noqa: N802
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section] if 0 <= section < len(self.HEADERS) else None
        return str(section + 1)

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        job = self._rows[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(job, column)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == self.MESSAGE and job.message:
                return job.message
            if column == self.TITLE:
                return f"{job.title}\nQueued {job.created_at:%Y-%m-%d %H:%M:%S}"
            return None
        if role == Qt.ItemDataRole.TextAlignmentRole and column in (self.PROGRESS, self.ETA, self.ELAPSED):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == self.ProgressRole:
            return float(job.fraction)
        if role == self.JobIdRole:
            return job.job_id
        if role == self.StatusRole:
            return job.status.value
        return None

    # ------------------------------------------------------------------ rows
    def add_job(self, job: JobRow) -> None:
        """Append ``job`` (its id must be new)."""
        if job.job_id in self._row_of:
            raise ValueError(f"job {job.job_id} is already in the model")
        row = len(self._rows)
        self.beginInsertRows(QModelIndex(), row, row)
        self._rows.append(job)
        self._row_of[job.job_id] = row
        self.endInsertRows()
        self._update_timer()

    def update_job(self, job_id: int, **changes: Any) -> None:
        """Change fields of a job's row and refresh that row only.

        Parameters
        ----------
        job_id
            The job to update (unknown ids are ignored: the row may have been cleared).
        **changes
            :class:`JobRow` fields and their new values.
        """
        unknown = set(changes) - _ROW_FIELDS
        if unknown:
            raise TypeError(f"JobRow has no field(s) {sorted(unknown)}")
        row = self._row_of.get(job_id)
        if row is None:
            return
        job = self._rows[row]
        for name, value in changes.items():
            setattr(job, name, value)
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(self.HEADERS) - 1))
        if "status" in changes:
            self._update_timer()

    def job(self, job_id: int) -> JobRow | None:
        """The row of ``job_id``, or ``None``."""
        row = self._row_of.get(job_id)
        return None if row is None else self._rows[row]

    def job_at(self, row: int) -> JobRow:
        """The job shown in ``row``."""
        return self._rows[row]

    def row_of(self, job_id: int) -> int | None:
        """Row showing ``job_id``, or ``None``."""
        return self._row_of.get(job_id)

    def jobs(self) -> list[JobRow]:
        """All rows, in display order."""
        return list(self._rows)

    def active_count(self) -> int:
        """Number of queued or running jobs."""
        return sum(1 for job in self._rows if job.status.is_active)

    def counts(self) -> dict[str, int]:
        """Number of listed jobs per status value (``{"running": 2, "done": 5}``)."""
        out: dict[str, int] = {}
        for job in self._rows:
            out[job.status.value] = out.get(job.status.value, 0) + 1
        return out

    def remove_finished(self) -> int:
        """Remove every ended job (done, failed, cancelled); return how many were removed."""
        removed = 0
        row = len(self._rows) - 1
        while row >= 0:
            if self._rows[row].status.is_active:
                row -= 1
                continue
            last = row
            while row - 1 >= 0 and not self._rows[row - 1].status.is_active:
                row -= 1
            self.beginRemoveRows(QModelIndex(), row, last)
            del self._rows[row : last + 1]
            self._row_of = {job.job_id: i for i, job in enumerate(self._rows)}
            self.endRemoveRows()
            removed += last - row + 1
            row -= 1
        return removed

    # ------------------------------------------------------------------ time columns
    def elapsed(self, job: JobRow) -> float | None:
        """Seconds the job has been (or was) running, or ``None`` if it never started."""
        if job.started is None:
            return None
        end = job.ended if job.ended is not None else self._clock()
        return max(0.0, end - job.started)

    def eta(self, job: JobRow) -> float | None:
        """Estimated seconds left (linear in the reported fraction), or ``None`` if unknown."""
        if job.status is not JobStatus.RUNNING:
            return None
        elapsed = self.elapsed(job)
        fraction = job.fraction
        if elapsed is None or elapsed < self.MIN_ETA_SECONDS:
            return None
        if not self.MIN_ETA_FRACTION <= fraction < 1.0:
            return None
        return elapsed * (1.0 - fraction) / fraction

    def tick(self) -> None:
        """Refresh the ETA and Elapsed cells of running jobs (one signal per row)."""
        for row, job in enumerate(self._rows):
            if job.status is JobStatus.RUNNING:
                self.dataChanged.emit(self.index(row, self.ETA), self.index(row, self.ELAPSED))
        self._update_timer()

    # ------------------------------------------------------------------ helpers
    def _display(self, job: JobRow, column: int) -> str | None:
        if column == self.TITLE:
            return job.title
        if column == self.STATUS:
            if job.cancel_requested and job.status.is_active:
                return "Cancelling"
            return job.status.label
        if column == self.PROGRESS:
            return f"{round(job.fraction * 100)} %"
        if column == self.MESSAGE:
            return job.message.splitlines()[0] if job.message else ""
        if column == self.ETA:
            return format_duration(self.eta(job))
        if column == self.ELAPSED:
            return format_duration(self.elapsed(job))
        return None

    def _update_timer(self) -> None:
        running = self._tick_enabled and any(j.status is JobStatus.RUNNING for j in self._rows)
        if running and not self._timer.isActive():
            self._timer.start()
        elif not running and self._timer.isActive():
            self._timer.stop()
