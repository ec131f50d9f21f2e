"""Word-level diffs of a counterbias candidate against its original text.

:func:`word_diff` compares the two texts word by word (:class:`difflib.SequenceMatcher`
over whitespace-separated words, punctuation attached); :func:`diff_html` renders it with
deletions in red strikethrough and insertions in green. Every piece of text is escaped:
data never becomes markup. IMDb-style ``<br />`` tags in the data are line breaks: a token of
their own in the diff (a rating right after one, "<br />10/10", is its own word) and a line
break on screen. :class:`DiffView` is a read-only browser for such HTML.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Sequence
from typing import Literal, NamedTuple

from PySide6.QtWidgets import QTextBrowser, QWidget

__all__ = ["DELETE_STYLE", "INSERT_STYLE", "MARK_STYLE", "DiffOp", "DiffView", "diff_html", "word_diff"]

#: Style of deleted words (red, struck through).
DELETE_STYLE = "color: #a40000; background-color: #fde0e0; text-decoration: line-through;"
#: Style of inserted words (green).
INSERT_STYLE = "color: #1a6b1a; background-color: #dcf5dc;"
#: Sentences marked in a candidate (still read as the original label): underlined in orange.
MARK_STYLE = "border-bottom: 2px solid #d97b00; background-color: #fff1d6;"
#: Stands for a ``<br />`` of the data while diffing (a private-use character: never in real text).
_BREAK = "\ue000"
_BREAK_TAG = re.compile(r"<br\s*/?>", re.IGNORECASE)


def _words(text: str) -> list[str]:
    return _BREAK_TAG.sub(f" {_BREAK} ", text or "").split()


class DiffOp(NamedTuple):
    """One run of the diff: ``op`` is ``"equal"``, ``"delete"`` or ``"insert"``; ``text`` its words."""

    op: Literal["equal", "delete", "insert"]
    text: str


def word_diff(original: str, new: str) -> list[DiffOp]:
    """The word-level edit from ``original`` to ``new``.

    A replaced run becomes a ``delete`` followed by an ``insert``. Words are compared
    exactly (case and punctuation count); whitespace differences are ignored; a ``<br />``
    of the data is a word of its own, written ``"\n"`` in the runs.

    Examples
    --------
    >>> word_diff("a good film", "a bad film")
    [DiffOp(op='equal', text='a'), DiffOp(op='delete', text='good'), DiffOp(op='insert', text='bad'), DiffOp(op='equal', text='film')]
    """
    a, b = _words(original), _words(new)
    out: list[DiffOp] = []

    def run(words: list[str]) -> str:
        return re.sub(f" ?{_BREAK} ?", "\n", " ".join(words))

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(DiffOp("equal", run(a[i1:i2])))
            continue
        if tag in ("delete", "replace"):
            out.append(DiffOp("delete", run(a[i1:i2])))
        if tag in ("insert", "replace"):
            out.append(DiffOp("insert", run(b[j1:j2])))
    return out


def diff_html(original: str, new: str, marked: Sequence[str] = (), mark_title: str = "") -> str:
    """HTML of :func:`word_diff` (escaped), deletions struck through in red, insertions green.

    ``marked``: sentences of ``new`` to underline (e.g. those still read as the original label), where a run of
    unchanged words holds one whole; ``mark_title`` is their tooltip.

    Examples
    --------
    >>> marked = diff_html("Dull. It bores.", "Fine. It bores.", marked=["It bores."], mark_title="still Negative")
    >>> marked.endswith('<span style="' + MARK_STYLE + '" title="still Negative">It bores.</span>')
    True
    """
    marks = [html.escape(" ".join(_words(s))) for s in marked if s and s.strip()]
    parts = []
    for op, text in word_diff(original, new):
        escaped = html.escape(text)
        if op == "delete":
            parts.append(f'<span style="{DELETE_STYLE}">{escaped}</span>')
        elif op == "insert":
            parts.append(f'<span style="{INSERT_STYLE}">{escaped}</span>')
        else:
            for mark in marks:
                escaped = escaped.replace(mark, f'<span style="{MARK_STYLE}" title="{html.escape(mark_title)}">'
                                                f'{mark}</span>')
            parts.append(escaped)
    return " ".join(parts).replace("\n", "<br>")


def change_counts(original: str, new: str) -> tuple[int, int]:
    """Words deleted and words inserted by the edit from ``original`` to ``new``."""
    ops = word_diff(original, new)
    deleted = sum(len(o.text.split()) for o in ops if o.op == "delete")
    inserted = sum(len(o.text.split()) for o in ops if o.op == "insert")
    return deleted, inserted


class DiffView(QTextBrowser):
    """Read-only rich-text view of a candidate (diff, scores); keeps the HTML for tests."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setObjectName("diffView")
        self._html = ""

    def show_html(self, source: str) -> None:
        """Show ``source`` (already escaped where it holds data)."""
        self._html = source
        self.setHtml(source)

    def clear_text(self, message: str = "") -> None:
        """Show a plain ``message`` instead of a candidate."""
        self._html = ""
        self.setPlainText(message)

    @property
    def html_source(self) -> str:
        """The HTML last shown."""
        return self._html
