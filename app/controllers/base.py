"""The shape every controller copies: ``(session, jobs, panel)``, navigation as signals."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtWidgets import QWidget

from app.jobs import JobRunner
from app.session import Session
from engine.errors import CounterbiasError
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
    visible (work for a hidden panel is skipped, and done when it is shown).
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

    def show_error(self, exc: CounterbiasError, traceback_text: str | None = None) -> None:
        """Show a named error in a (non-blocking) dialog over the panel."""
        show_error(self.panel, exc, traceback_text).open()

    def status(self, text: str, timeout_ms: int = 6000) -> None:
        """Ask for ``text`` in the status bar."""
        self.statusMessage.emit(text, timeout_ms)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.panel and event.type() == QEvent.Type.Show:
            self.panel_shown()
        return False
