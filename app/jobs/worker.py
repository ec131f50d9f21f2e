"""What runs on a pool thread: the worker (a ``QRunnable`` that calls the job's function and reports through queued
signals), its progress throttle, and the traceback cleanup of a failed job. It holds no reference to a job or a
widget."""

from __future__ import annotations

import math
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Signal

from engine.errors import Cancelled
from engine.progress import CancelToken

__all__ = ["GUI_SWITCH_INTERVAL_S", "ThrottledProgress", "Worker", "WorkerSignals", "drop_tracebacks"]


class WorkerSignals(QObject):
    """Signals the workers emit from pool threads, keyed by job id.

    One instance is shared by all workers of a runner; it lives on the GUI thread, so
    connections to the runner are queued and its slots run on the GUI thread.
    """

    started = Signal(int)
    """``started(job_id)``: the function is about to be called."""

    progressed = Signal(int, float, str)
    """``progressed(job_id, fraction, message)``: throttled progress report."""

    finished = Signal(int, object)
    """``finished(job_id, result)``: the function returned ``result``."""

    failed = Signal(int, object, str)
    """``failed(job_id, exception, traceback_text)``: the function raised."""

    cancelled = Signal(int)
    """``cancelled(job_id)``: the function raised ``Cancelled`` (or never started)."""

    done = Signal(int)
    """``done(job_id)``: always the last signal of a job."""


GUI_SWITCH_INTERVAL_S = 0.001


class ThrottledProgress:
    """A thread-safe ``progress(fraction, message)`` that forwards at most every ``interval`` s.

    The latest value is kept while throttled; :meth:`flush` forwards it if it was not sent.
    """

    def __init__(self, emit: Callable[[float, str], None], interval: float) -> None:
        self._emit = emit
        self._interval = interval
        self._last = -math.inf
        self._pending: tuple[float, str] | None = None
        self._lock = threading.Lock()

    def __call__(self, fraction: float, message: str = "") -> None:
        try:
            value = float(fraction)
        except (TypeError, ValueError):
            return
        if not math.isfinite(value):
            return
        item = (min(max(value, 0.0), 1.0), "" if message is None else str(message))
        now = time.monotonic()
        with self._lock:
            if now - self._last < self._interval:
                self._pending = item
                return
            self._last = now
            self._pending = None
            self._emit(*item)

    def flush(self) -> None:
        """Forward the last throttled value, if any."""
        with self._lock:
            item, self._pending = self._pending, None
            if item is not None:
                self._emit(*item)


class Worker(QRunnable):
    """Runs one engine call on a pool thread and reports through ``signals``.

    It holds no reference to the :class:`Job` or to any widget; the pool deletes it after
    :meth:`run` (``autoDelete``).
    """

    def __init__(
        self,
        job_id: int,
        signals: WorkerSignals,
        token: CancelToken,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        throttle_s: float,
    ) -> None:
        super().__init__()
        self.job_id = job_id
        self._signals = signals
        self._token = token
        self._call: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]] | None = (fn, args, kwargs)
        self._throttle_s = throttle_s

    def run(self) -> None:  # runs on a pool thread
        signals, job_id = self._signals, self.job_id
        call, self._call = self._call, None
        try:
            if call is None or self._token.cancelled:
                signals.cancelled.emit(job_id)
                return
            fn, args, kwargs = call
            del call
            progress = ThrottledProgress(
                lambda fraction, message: signals.progressed.emit(job_id, fraction, message),
                self._throttle_s,
            )
            signals.started.emit(job_id)
            try:
                result = fn(*args, progress=progress, cancel=self._token, **kwargs)
            except Cancelled:
                progress.flush()
                signals.cancelled.emit(job_id)
            except BaseException as exc:  # noqa: BLE001 - every failure is reported, never lost
                text = traceback.format_exc()
                progress.flush()
                drop_tracebacks(exc)
                signals.failed.emit(job_id, exc, text)
            else:
                progress.flush()
                signals.finished.emit(job_id, result)
                del result
            del fn, args, kwargs
        finally:
            signals.done.emit(job_id)


def drop_tracebacks(exc: BaseException) -> None:
    """Free the frames (and their locals) of ``exc`` and its chain; the text was kept."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.__traceback__ = None
        current = current.__cause__ or current.__context__
