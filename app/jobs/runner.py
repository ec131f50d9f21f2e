"""Run engine callables on a thread pool and report back on the GUI thread.

This is the one adapter between the headless engine and Qt threads. An engine callable
has the signature ``fn(*args, progress=..., cancel=..., **kwargs) -> result``; give it to
:meth:`JobRunner.start` and connect to the runner's signals (or the job's callbacks)::

    runner = JobRunner(main_window)
    job = runner.start(import_file, project, path, title=f"Import {path.name}")
    job.on_finished(lambda dataset: datasets_model.set_rows(project.datasets()))
    job.on_failed(lambda exc, tb: show_error(main_window, exc, tb))

Design
------
* A :class:`Worker` (a ``QRunnable``) calls the function on a private ``QThreadPool``.
  It never touches widgets or the :class:`Job`: it only emits the signals of one shared
  :class:`WorkerSignals` object (owned by the runner, living on the GUI thread), so every
  signal reaches the runner through a queued connection and is handled on the GUI thread.
  Sharing one signals object avoids per-job QObjects being destroyed on a worker thread or
  while a worker still emits.
* Progress is throttled in the worker: at most one ``progressed`` every ``throttle_ms``
  (50 ms), and the last reported value is always delivered before the final signal.
* ``Cancelled`` raised by the function becomes ``cancelled``; any other exception becomes
  ``failed`` with the formatted traceback; a return value becomes ``finished``. A ``done``
  signal always follows.
* Task slots (Orange-style): a job started with a ``kind`` never runs beside another job of
  that kind. With ``when_busy="queue"`` it waits for the active one(s); with ``"cancel"`` the
  active and waiting ones are cancelled and the new one runs once they have stopped (a
  statistics panel recomputing with new settings). Jobs without a kind run at once.
* ``report_errors=False`` marks a job whose failure its caller shows itself (a dialog shows
  the error in place); :attr:`Job.report_errors` tells the window not to pop up a message box.
* Call :meth:`JobRunner.shutdown` before the application exits (it is also connected to
  ``QCoreApplication.aboutToQuit``): it cancels every job and waits for the pool.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from PySide6.QtCore import (
    QCoreApplication,
    QEventLoop,
    QObject,
    Qt,
    QThreadPool,
    Signal,
    Slot,
)

from app.jobs.job import Job
from app.jobs.model import JobRow, JobsTableModel
from app.jobs.status import JobStatus
from app.jobs.worker import GUI_SWITCH_INTERVAL_S, Worker, WorkerSignals

__all__ = ["BUSY_POLICIES", "Job", "JobRunner"]

#: What a new job of a kind does when one of that kind is active: wait for it, or cancel it (and
#: any still waiting) and run after it has stopped.
BUSY_POLICIES = ("queue", "cancel")

_RESERVED_KWARGS = frozenset({"progress", "cancel"})


class JobRunner(QObject):
    """Runs engine callables on a private thread pool; every signal arrives on the GUI thread.

    Parameters
    ----------
    parent
        Owning QObject (usually the main window).
    model
        Table model the jobs are listed in (a new :class:`JobsTableModel` if omitted).
    max_threads
        Pool size (default: the number of CPU cores).
    throttle_ms
        Minimum interval between two ``progressed`` signals of one job.
    """

    started = Signal(object)
    """``started(job)``: the job left the queue and its function is running."""

    progressed = Signal(object, float, str)
    """``progressed(job, fraction, message)``: at most every ``throttle_ms`` per job, plus the last report."""

    finished = Signal(object, object)
    """``finished(job, result)``: the function returned ``result``."""

    failed = Signal(object, object, str)
    """``failed(job, exception, traceback_text)``: the function raised ``exception``."""

    cancelled = Signal(object)
    """``cancelled(job)``: the job stopped after :meth:`Job.cancel` (or never started)."""

    done = Signal(object)
    """``done(job)``: the job ended, whatever the outcome (after the signal above)."""

    active_count_changed = Signal(int)
    """``active_count_changed(n)``: the number of queued or running jobs changed."""

    def __init__(
        self,
        parent: QObject | None = None,
        *,
        model: JobsTableModel | None = None,
        max_threads: int | None = None,
        throttle_ms: int = 50,
    ) -> None:
        super().__init__(parent)
        # CPython hands the GIL between threads every 5 ms by default. While a worker runs
        # pure-Python code, every Python call on the GUI thread (slots, model.data) may wait
        # that long, which adds up to visible stutter; 1 ms keeps the GUI fluid (measured in
        # benchmarks/gui_responsiveness.py) at a negligible cost to the worker.
        sys.setswitchinterval(min(sys.getswitchinterval(), GUI_SWITCH_INTERVAL_S))
        # The pool is created before the signals object: as children they are destroyed in
        # creation order, so the pool's destructor waits for the workers before the signals
        # object they emit through goes away.
        self._pool = QThreadPool(self)
        if max_threads is not None:
            self._pool.setMaxThreadCount(max(1, max_threads))
        self._signals = WorkerSignals(self)
        queued = Qt.ConnectionType.QueuedConnection
        self._signals.started.connect(self._on_started, queued)
        self._signals.progressed.connect(self._on_progressed, queued)
        self._signals.finished.connect(self._on_finished, queued)
        self._signals.failed.connect(self._on_failed, queued)
        self._signals.cancelled.connect(self._on_cancelled, queued)
        self._signals.done.connect(self._on_done, queued)
        self._model = model if model is not None else JobsTableModel(self)
        self._throttle_s = max(0, throttle_ms) / 1000.0
        self._ids = itertools.count(1)
        self._active: dict[int, Job] = {}
        #: Jobs whose task slot is taken, with their workers, in start order.
        self._waiting: list[tuple[Job, Worker]] = []
        self._closed = False
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)

    # ------------------------------------------------------------------ public API
    @property
    def model(self) -> JobsTableModel:
        """The table model listing this runner's jobs (for :class:`widgets.jobs_panel.JobsPanel`)."""
        return self._model

    @property
    def is_busy(self) -> bool:
        """Whether any job is queued or running."""
        return bool(self._active)

    def start(
        self,
        fn: Callable[..., Any],
        *args: Any,
        title: str,
        kind: str | None = None,
        when_busy: str = "queue",
        report_errors: bool = True,
        **kwargs: Any,
    ) -> Job:
        """Queue ``fn(*args, progress=..., cancel=..., **kwargs)`` and return its :class:`Job`.

        Parameters
        ----------
        fn
            An engine callable accepting ``progress`` and ``cancel`` keyword arguments.
        *args, **kwargs
            Passed to ``fn``. They travel to a pool thread: pass data and engine objects
            (a :class:`~engine.store.Project` is fine), never widgets or models.
        title
            What the job does, for the jobs panel.
        kind
            The job's task slot (e.g. ``"stats"``, ``"generate"``): at most one job of a kind
            runs at a time. ``None``: no slot, it runs as soon as a thread is free.
        when_busy
            With a ``kind`` whose slot is taken: ``"queue"`` waits behind the active job(s);
            ``"cancel"`` cancels them (and the ones waiting) and runs when they have stopped.
        report_errors
            ``False`` when the caller shows a failure itself (see :attr:`Job.report_errors`).

        Raises
        ------
        RuntimeError
            After :meth:`shutdown`.
        TypeError
            If ``progress`` or ``cancel`` is passed in ``kwargs`` (the runner supplies them).
        ValueError
            For a ``when_busy`` other than :data:`BUSY_POLICIES`.
        """
        if self._closed:
            raise RuntimeError("the job runner has been shut down")
        clash = _RESERVED_KWARGS & kwargs.keys()
        if clash:
            raise TypeError(f"the runner supplies {sorted(clash)}; do not pass them")
        if when_busy not in BUSY_POLICIES:
            raise ValueError(f"when_busy must be one of {BUSY_POLICIES}, not {when_busy!r}")
        job = Job(next(self._ids), title, on_cancel=self._on_cancel_requested, kind=kind,
                  report_errors=report_errors)
        self._active[job.id] = job
        self._model.add_job(JobRow(job_id=job.id, title=title, created_at=job.created_at))
        worker = Worker(job.id, self._signals, job.token, fn, args, kwargs, self._throttle_s)
        busy = [j for j in self._active.values() if j is not job and kind is not None and j.kind == kind]
        if busy:
            if when_busy == "cancel":
                for other in busy:
                    other.cancel()
            self._waiting.append((job, worker))
        else:
            self._pool.start(worker)
        self.active_count_changed.emit(len(self._active))
        return job

    def job(self, job_id: int) -> Job | None:
        """The active (queued or running) job with ``job_id``, or ``None``."""
        return self._active.get(job_id)

    def active_jobs(self) -> list[Job]:
        """Queued and running jobs, oldest first."""
        return list(self._active.values())

    def cancel(self, job_id: int) -> bool:
        """Cancel the active job ``job_id``; return whether there was one (panel callback)."""
        job = self._active.get(job_id)
        if job is None:
            return False
        job.cancel()
        return True

    def cancel_all(self) -> None:
        """Ask every active job to stop."""
        for job in list(self._active.values()):
            job.cancel()

    def wait_for_done(self, timeout_ms: int = -1) -> bool:
        """Block until every job has ended and its signals were delivered.

        Runs the event loop while waiting (the signals are queued to this thread), so use
        it in tests and at shutdown, not in ordinary slots.

        Parameters
        ----------
        timeout_ms
            Give up after this many milliseconds (negative: wait forever).

        Returns
        -------
        bool
            Whether every job ended in time.
        """
        deadline = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000.0
        while True:
            QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
            if not self._active:
                return True
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            step = 20 if remaining is None else max(1, min(20, int(remaining * 1000)))
            self._pool.waitForDone(step)

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Refuse new jobs, cancel the running ones and wait for the pool threads.

        Safe to call more than once. Signals still pending are delivered by the event loop
        if it runs again; nothing else happens to the jobs.

        Returns
        -------
        bool
            Whether every worker finished within ``timeout_ms``.
        """
        self._closed = True
        self.cancel_all()
        return bool(self._pool.waitForDone(timeout_ms))

    # ------------------------------------------------------------------ worker signals (GUI thread)
    def _on_cancel_requested(self, job: Job) -> None:
        self._model.update_job(job.id, cancel_requested=True)
        for i, (waiting, _worker) in enumerate(self._waiting):
            if waiting is job:  # it never started: it ends now (through the event loop, like any end)
                del self._waiting[i]
                self._signals.cancelled.emit(job.id)
                self._signals.done.emit(job.id)
                break

    def _start_waiting(self) -> None:
        """Start the waiting jobs whose task slot has become free, in start order."""
        running = {j.kind for j in self._active.values() if j.kind is not None
                   and not any(j is w for w, _ in self._waiting)}
        still: list[tuple[Job, Worker]] = []
        for job, worker in self._waiting:
            if job.kind in running:
                still.append((job, worker))
            else:
                running.add(job.kind)
                self._pool.start(worker)
        self._waiting = still

    @Slot(int)
    def _on_started(self, job_id: int) -> None:
        job = self._active.get(job_id)
        if job is None:
            return
        job.status = JobStatus.RUNNING
        job.started_at = datetime.now()
        job._started_mono = time.monotonic()
        self._model.update_job(job_id, status=JobStatus.RUNNING, started=job._started_mono)
        self.started.emit(job)

    @Slot(int, float, str)
    def _on_progressed(self, job_id: int, fraction: float, message: str) -> None:
        job = self._active.get(job_id)
        if job is None or not job.status.is_active:
            return
        job.fraction = fraction
        if message:
            job.message = message
        self._model.update_job(job_id, fraction=fraction, message=job.message)
        self.progressed.emit(job, fraction, message)

    @Slot(int, object)
    def _on_finished(self, job_id: int, result: Any) -> None:
        job = self._end(job_id, JobStatus.DONE, fraction=1.0)
        if job is None:
            return
        self.finished.emit(job, result)
        job._run_callbacks("finished", result)

    @Slot(int, object, str)
    def _on_failed(self, job_id: int, exc: BaseException, traceback_text: str) -> None:
        message = exc.message if hasattr(exc, "message") else f"{type(exc).__name__}: {exc}"
        job = self._end(job_id, JobStatus.FAILED, message=str(message))
        if job is None:
            return
        job.error = exc
        self.failed.emit(job, exc, traceback_text)
        job._run_callbacks("failed", exc, traceback_text)

    @Slot(int)
    def _on_cancelled(self, job_id: int) -> None:
        job = self._end(job_id, JobStatus.CANCELLED, message="Cancelled")
        if job is None:
            return
        self.cancelled.emit(job)
        job._run_callbacks("cancelled")

    @Slot(int)
    def _on_done(self, job_id: int) -> None:
        job = self._active.pop(job_id, None)
        if job is None:
            return
        job._callbacks = {}
        job._on_cancel = None
        if self._waiting and not self._closed:
            self._start_waiting()
        self.done.emit(job)
        self.active_count_changed.emit(len(self._active))

    def _end(self, job_id: int, status: JobStatus, *, fraction: float | None = None, message: str | None = None) -> Job | None:
        job = self._active.get(job_id)
        if job is None or not job.status.is_active:
            return None
        job.status = status
        job.ended_at = datetime.now()
        job._ended_mono = time.monotonic()
        changes: dict[str, Any] = {"status": status, "ended": job._ended_mono}
        if fraction is not None:
            job.fraction = fraction
            changes["fraction"] = fraction
        if message is not None:
            job.message = message
            changes["message"] = message
        self._model.update_job(job_id, **changes)
        return job
