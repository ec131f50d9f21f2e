"""Error reporting: what went wrong, what to do, and (for bugs) the traceback.

:func:`format_error` turns an exception into plain text (testable without a dialog);
:func:`make_error_dialog` builds the message box; :func:`show_error` builds one that
deletes itself when closed, for the caller to ``open()`` (non-blocking) or ``exec()``. All text is shown as plain text: nothing from the data is read as HTML.
"""

from __future__ import annotations

import traceback

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from engine.errors import Cancelled, CounterbiasError

__all__ = ["UNEXPECTED_TITLE", "format_error", "make_error_dialog", "show_error"]

#: Title of errors that are not :class:`~engine.errors.CounterbiasError` (bugs).
UNEXPECTED_TITLE = "Unexpected error"


def format_error(exc: BaseException, traceback_text: str | None = None) -> tuple[str, str, str]:
    """Title, text and details of an error message.

    Parameters
    ----------
    exc
        The error.
    traceback_text
        Its formatted traceback (e.g. from ``JobRunner.failed``); taken from
        ``exc.__traceback__`` when omitted and available.

    Returns
    -------
    tuple of str
        ``(title, text, details)``. For a :class:`~engine.errors.CounterbiasError`: its
        title; its message, ``"What to do: "`` hint and error code; the underlying cause
        (if any) as details. For anything else: :data:`UNEXPECTED_TITLE`; the exception
        type and text; the traceback as details.
    """
    if isinstance(exc, CounterbiasError):
        parts = [exc.message]
        if exc.hint:
            parts.append(f"What to do: {exc.hint}")
        parts.append(f"Error code: {exc.code}")
        cause = exc.__cause__
        details = f"Caused by {type(cause).__name__}: {cause}" if cause is not None else ""
        return exc.title, "\n\n".join(parts), details
    if isinstance(exc, Cancelled):
        return "Cancelled", "The operation was cancelled; nothing was changed by its unfinished part.", ""
    summary = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    text = (
        f"{summary}\n\n"
        "This is probably a bug in Counterbias Studio. "
        "The details below help to report it."
    )
    if traceback_text is None and exc.__traceback__ is not None:
        traceback_text = "".join(traceback.format_exception(exc))
    return UNEXPECTED_TITLE, text, (traceback_text or summary).rstrip()


def make_error_dialog(
    parent: QWidget | None, exc: BaseException, traceback_text: str | None = None
) -> QMessageBox:
    """A message box for ``exc``, not shown yet (call ``open()`` or ``exec()``).

    A :class:`~engine.errors.CounterbiasError` gets a warning icon (the user can fix it);
    anything else a critical icon and the traceback under "Show Details…".
    """
    title, text, details = format_error(exc, traceback_text)
    user_error = isinstance(exc, (CounterbiasError, Cancelled))
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning if user_error else QMessageBox.Icon.Critical)
    box.setWindowTitle(title)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(text)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if details:
        box.setDetailedText(details)
    box.setStandardButtons(QMessageBox.StandardButton.Ok)
    box.setDefaultButton(QMessageBox.StandardButton.Ok)
    return box


def show_error(parent: QWidget | None, exc: BaseException, traceback_text: str | None = None) -> QMessageBox:
    """The error message box for ``exc``, ready to show; it deletes itself once closed.

    Nothing is shown until the caller opens it, so tests can inspect it without blocking::

        show_error(self, exc, traceback_text).open()   # window-modal, returns at once
        show_error(self, exc).exec()                   # blocks until dismissed

    Typical use::

        runner.failed.connect(lambda job, exc, tb: show_error(self, exc, tb).open())
    """
    box = make_error_dialog(parent, exc, traceback_text)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    return box
