"""A job: one call of an engine function as the GUI thread sees it (its status, progress, timings and the
callbacks run when it ends)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from engine.progress import CancelToken

from app.jobs.status import JobStatus

__all__ = ["Job"]


class Job:
    """One call of an engine function, as seen from the GUI thread.

    Created by :meth:`JobRunner.start`; its fields are only changed on the GUI thread.

    Attributes
    ----------
    id
        Unique, increasing id.
    title
        What the job does (shown in the jobs panel).
    token
        The :class:`~engine.progress.CancelToken` given to the function.
    status
        Current :class:`JobStatus`.
    fraction
        Last reported completion in [0, 1].
    message
        Last reported progress message (or the error text once failed).
    created_at
        Wall-clock time it was queued.
    started_at
        Wall-clock time it started running (``None`` while queued).
    ended_at
        Wall-clock time it ended (``None`` while active).
    error
        The exception of a failed job.
    kind
        Its task slot (``None``: none); see :meth:`JobRunner.start`.
    report_errors
        Whether a failure should be reported to the user by whoever listens to
        :attr:`JobRunner.failed` (``False``: the caller shows it in place).
    """

    def __init__(
        self,
        job_id: int,
        title: str,
        on_cancel: Callable[[Job], None] | None = None,
        *,
        kind: str | None = None,
        report_errors: bool = True,
    ) -> None:
        self.id = job_id
        self.title = title
        self.kind = kind
        self.report_errors = report_errors
        self.token = CancelToken()
        self.status = JobStatus.QUEUED
        self.fraction = 0.0
        self.message = ""
        self.created_at = datetime.now()
        self.started_at: datetime | None = None
        self.ended_at: datetime | None = None
        self.error: BaseException | None = None
        self._started_mono: float | None = None
        self._ended_mono: float | None = None
        self._on_cancel = on_cancel
        self._callbacks: dict[str, list[Callable[..., Any]]] = {"finished": [], "failed": [], "cancelled": []}

    def __repr__(self) -> str:
        return f"<Job {self.id} {self.title!r} {self.status.value} {self.fraction:.0%}>"

    @property
    def is_active(self) -> bool:
        """Whether the job is queued or running."""
        return self.status.is_active

    @property
    def elapsed(self) -> float | None:
        """Seconds spent running so far (or in total once ended); ``None`` while queued."""
        if self._started_mono is None:
            return None
        end = self._ended_mono if self._ended_mono is not None else time.monotonic()
        return end - self._started_mono

    def cancel(self) -> None:
        """Ask the function to stop at its next check of the token.

        The job ends with ``cancelled`` once the function raises
        :class:`~engine.errors.Cancelled` (a queued job never starts). A function that
        ignores the token still ends with ``finished`` or ``failed``.
        """
        if not self.status.is_active or self.token.cancelled:
            return
        self.token.cancel()
        if self._on_cancel is not None:
            self._on_cancel(self)

    # ------------------------------------------------------------------ per-job callbacks
    def on_finished(self, callback: Callable[[Any], Any]) -> Job:
        """Call ``callback(result)`` on the GUI thread when the job succeeds; return ``self``.

        Register callbacks right after :meth:`JobRunner.start`, before control returns to
        the event loop: results are delivered through it, so none can be missed.
        """
        self._callbacks_for("finished").append(callback)
        return self

    def on_failed(self, callback: Callable[[BaseException, str], Any]) -> Job:
        """Call ``callback(exception, traceback_text)`` on the GUI thread if the job fails."""
        self._callbacks_for("failed").append(callback)
        return self

    def on_cancelled(self, callback: Callable[[], Any]) -> Job:
        """Call ``callback()`` on the GUI thread if the job ends cancelled."""
        self._callbacks_for("cancelled").append(callback)
        return self

    def _callbacks_for(self, kind: str) -> list[Callable[..., Any]]:
        if kind not in self._callbacks:
            raise RuntimeError(f"{self!r} has already ended; connect to JobRunner signals instead")
        return self._callbacks[kind]

    def _run_callbacks(self, kind: str, *args: Any) -> None:
        callbacks = self._callbacks.get(kind, [])
        self._callbacks = {}  # drop references (results, widgets) once the job has ended
        for callback in callbacks:
            callback(*args)
