"""Error messages: named errors show title, message, hint and code; bugs show the traceback."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from engine.errors import Cancelled, EmptyTextError, Location, ProjectNotFoundError
from widgets.error_dialog import UNEXPECTED_TITLE, format_error, make_error_dialog, show_error


def test_format_counterbias_error():
    exc = EmptyTextError("the text is empty", "Fill it in or drop the row.", location=Location("a.csv", row=3))
    title, text, details = format_error(exc)
    assert title == "Empty text"
    assert text.startswith("file 'a.csv', data row 3: the text is empty")
    assert "What to do: Fill it in or drop the row." in text
    assert "CB209" in text
    assert details == ""


def test_format_counterbias_error_with_cause():
    try:
        try:
            raise OSError("disk on fire")
        except OSError as inner:
            raise ProjectNotFoundError("No project file at x.", "") from inner
    except ProjectNotFoundError as exc:
        title, text, details = format_error(exc)
    assert title == "Project not found"
    assert "What to do" not in text  # no hint, no empty line for it
    assert details == "Caused by OSError: disk on fire"


def test_format_unexpected_error_uses_given_traceback():
    title, text, details = format_error(KeyError("x"), "Traceback (most recent call last):\n  boom\n")
    assert title == UNEXPECTED_TITLE
    assert text.startswith("KeyError: 'x'")
    assert details == "Traceback (most recent call last):\n  boom"


def test_format_unexpected_error_own_traceback():
    try:
        raise RuntimeError("kaput")
    except RuntimeError as exc:
        _, _, details = format_error(exc)
    assert "Traceback" in details and "kaput" in details and "test_format_unexpected_error_own_traceback" in details


def test_format_cancelled():
    assert format_error(Cancelled("cancelled by the user"))[0] == "Cancelled"


def test_dialog_is_plain_text_and_not_shown(qtbot):
    exc = ProjectNotFoundError("No project at <b>x</b>.", "Check the path.")
    box = make_error_dialog(None, exc)
    qtbot.addWidget(box)
    assert not box.isVisible()
    assert box.windowTitle() == "Project not found"
    assert box.textFormat() == Qt.TextFormat.PlainText
    assert "<b>x</b>" in box.text() and "What to do: Check the path." in box.text()
    assert box.icon() == QMessageBox.Icon.Warning
    assert box.detailedText() == ""


def test_unexpected_dialog_has_details(qtbot):
    box = make_error_dialog(None, ValueError("bad"), "Traceback: here")
    qtbot.addWidget(box)
    assert box.icon() == QMessageBox.Icon.Critical
    assert box.detailedText() == "Traceback: here"


def test_show_error_opens_without_blocking(qtbot):
    box = show_error(None, ValueError("bad"), "tb")
    assert not box.isVisible()
    assert box.testAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    with qtbot.waitSignal(box.destroyed, timeout=2000):
        box.open()  # returns at once
        qtbot.waitExposed(box)
        assert box.isVisible()
        box.close()
