"""The shape every controller copies: ``(session, jobs, panel)``, navigation as signals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtWidgets import QWidget

from app.jobs import Job, JobRunner
from app.session import Session
from widgets.error_dialog import show_error

__all__ = ["PanelController"]


class PanelController(QObject):
    """Base of the controllers: holds the session, the job runner and one panel.

    Parameters
    ----------
    session
        The application context (project, dataset, example, selection).
    jobs
        Runs engine functions in the background.
    panel
        The widget this controller drives; it is also the parent of the dialogs it opens.

    Notes
    -----
    Subclasses override :meth:`panel_shown` to refresh what the panel shows when it becomes
    visible (work for a hidden panel is skipped, and done when it is shown), and start their jobs
    with :meth:`run_job`, which keeps the panel busy while one runs and reports its failure.
    """

    showExamples = Signal(list, str)
    """``showExamples(example_ids, caption)``: show these examples in the examples table."""

    statusMessage = Signal(str, int)
    """``statusMessage(text, timeout_ms)``: a transient message for the status bar."""

    def __init__(self, session: Session, jobs: JobRunner, panel: QWidget) -> None:
        super().__init__(panel)
        self.session = session
        self.jobs = jobs
        self.panel = panel
        panel.installEventFilter(self)

    def is_shown(self) -> bool:
        """Whether the panel is the visible page (also before the window itself is shown)."""
        window = self.panel.window()
        return self.panel.isVisibleTo(window) if window is not self.panel else self.panel.isVisible()

    def panel_shown(self) -> None:
        """Called when the panel becomes visible; refresh what depends on the session here."""

    def show_error(self, exc: BaseException, traceback_text: str | None = None) -> None:
        """Show an error in a (non-blocking) dialog over the panel: a named error
        (:class:`~engine.errors.CounterbiasError`) by its message and hint, anything else (a bug)
        with its traceback."""
        show_error(self.panel, exc, traceback_text).open()

    def run_job(
        self,
        fn: Callable[..., Any],
        *args: Any,
        busy: bool | Callable[[bool], Any] = True,
        done: Callable[[Any], Any] | None = None,
        failed: Callable[[BaseException, str], Any] | None = None,
        cancelled: Callable[[], Any] | None = None,
        show_errors: bool = True,
        **kwargs: Any,
    ) -> Job:
        """Start ``fn(*args, **kwargs)`` on the job runner; busy while it runs, its failure shown.

        In the style of Orange's ``ConcurrentWidgetMixin``: the controller says what happens with
        the result, the helper does the wiring every job needs.

        Parameters
        ----------
        fn, *args, **kwargs
            As for :meth:`JobRunner.start` (``title``, ``kind`` and ``when_busy`` go there too).
        busy
            ``True``: ``panel.set_busy(True)`` once the job is started and ``set_busy(False)`` once it
            has ended, whatever the outcome, before the callbacks below; a callable: that one instead
            (e.g. a sub-panel's ``set_busy``); ``False``: nothing.
        done, failed, cancelled
            Called on the GUI thread with the result, with ``(exception, traceback_text)``, or with
            nothing, after the panel is un-busy.
        show_errors
            Show a failure in an error dialog over the panel (after ``failed``); ``False`` when
            ``failed`` shows it in place. The main window does not report these jobs again.
        """
        set_busy: Callable[[bool], Any] | None = self.panel.set_busy if busy is True else (busy or None)
        job = self.jobs.start(fn, *args, report_errors=False, **kwargs)
        if set_busy is not None:
            set_busy(True)

        def settle() -> None:
            if set_busy is not None:
                set_busy(False)

        def on_finished(result: Any) -> None:
            settle()
            if done is not None:
                done(result)

        def on_failed(exc: BaseException, traceback_text: str) -> None:
            settle()
            if failed is not None:
                failed(exc, traceback_text)
            if show_errors:
                self.show_error(exc, traceback_text)

        def on_cancelled() -> None:
            settle()
            if cancelled is not None:
                cancelled()

        job.on_finished(on_finished)
        job.on_failed(on_failed)
        job.on_cancelled(on_cancelled)
        return job

    def status(self, text: str, timeout_ms: int = 6000) -> None:
        """Ask for ``text`` in the status bar."""
        self.statusMessage.emit(text, timeout_ms)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.panel and event.type() == QEvent.Type.Show:
            self.panel_shown()
        return False
