"""An example's sentences and their ``subject | predicate | object`` triples, editable.

Each triple's row is shaded by its category with the word-importance colours: principal
blue, spurious vermillion (:mod:`widgets.sentence_view`), normal unshaded. The analyst can
edit a part in place, add a triple to a sentence or delete one; when every triple of the
sentence has all three parts, :attr:`TriplesView.triplesEdited` carries the sentence's new
triples for the application to store. The view stores nothing itself.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from widgets.sentence_view import PRINCIPAL_RGB, SPURIOUS_RGB

__all__ = ["CATEGORY_COLORS", "EDIT_NOTE", "SentenceRow", "TriplesView"]

#: Row shading per category (normal triples are not shaded).
CATEGORY_COLORS = {
    "principal": QColor(*PRINCIPAL_RGB, 70),
    "spurious": QColor(*SPURIOUS_RGB, 70),
}

#: What an edit does, shown under the table.
EDIT_NOTE = ("Double-click a part to edit it. Saving an edit replaces this example's undecided "
             "(proposed or failed) candidates: rewrite, reconstruction and judge run again from the new "
             "triples. Accepted and rejected candidates are kept.")


@dataclass
class SentenceRow:
    """One sentence as the view holds it (a mutable copy of the engine's ``SentenceTriples``)."""

    field: str
    index: int
    sentence: str
    triples: list[list[str]]
    categories: list[str]
    edited: list[bool] = field(default_factory=list)


class TriplesView(QWidget):
    """Table of sentences × triples with category shading, plus add / delete buttons."""

    SUBJECT, PREDICATE, OBJECT, CATEGORY = range(4)
    HEADERS = ("Subject", "Predicate", "Object", "Category")
    #: Triple position of a sentence's heading row (its triples are 0, 1, …; ``None``: it has none).
    HEADING = -1

    triplesEdited = Signal(str, int, list)
    """``(field, sentence_index, [(subject, predicate, object), ...])`` — store these triples."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.table = QTableWidget(0, len(self.HEADERS))
        self.table.setObjectName("triplesTable")
        self.table.setHorizontalHeaderLabels(list(self.HEADERS))
        self.table.verticalHeader().hide()
        self.table.setWordWrap(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                   | QAbstractItemView.EditTrigger.EditKeyPressed)
        header = self.table.horizontalHeader()
        for col in (self.SUBJECT, self.PREDICATE, self.OBJECT):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(self.CATEGORY, QHeaderView.ResizeMode.ResizeToContents)
        self.table.itemChanged.connect(self._item_changed)
        self.add_button = QPushButton("Add triple")
        self.add_button.setToolTip("Add a triple to the selected sentence")
        self.delete_button = QPushButton("Delete triple")
        self.delete_button.setToolTip("Delete the selected triple")
        self.add_button.clicked.connect(self.add_triple)
        self.delete_button.clicked.connect(self.delete_triple)
        self.legend = QLabel(
            f"<span style='background-color: rgba{(*PRINCIPAL_RGB, 0.3)}'>&nbsp;principal&nbsp;</span> "
            f"<span style='background-color: rgba{(*SPURIOUS_RGB, 0.3)}'>&nbsp;spurious&nbsp;</span> "
            "normal (unshaded) · <i>italic</i> = written by you")
        self.legend.setWordWrap(True)
        self.note = QLabel(EDIT_NOTE)
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: #555;")
        self.message = QLabel()
        self.message.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addWidget(self.legend, 1)
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.delete_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.note)
        layout.addWidget(self.message)
        self._sentences: list[SentenceRow] = []
        self._rows: list[tuple[int, int | None]] = []  # table row -> (sentence position, triple position)
        self._filling = False
        self._multi_field = False
        self.set_editable(False)

    # ------------------------------------------------------------------ showing
    def show_sentences(self, sentences: Sequence[SentenceRow], *, multi_field: bool = False) -> None:
        """Show ``sentences`` (each with its triples and categories)."""
        self._sentences = [SentenceRow(s.field, s.index, s.sentence, [list(t) for t in s.triples],
                                       list(s.categories), list(s.edited) or [False] * len(s.triples))
                           for s in sentences]
        self._multi_field = multi_field
        self.message.clear()
        self._render()
        self.set_editable(bool(self._sentences))

    def clear_sentences(self, message: str = "") -> None:
        """Show no example, with ``message`` under the table."""
        self._sentences = []
        self._render()
        self.message.setText(message)
        self.set_editable(False)

    def set_editable(self, editable: bool) -> None:
        self.add_button.setEnabled(editable)
        self.delete_button.setEnabled(editable)

    def sentences(self) -> list[SentenceRow]:
        """What the view shows now (edits included)."""
        return list(self._sentences)

    def row_of(self, sentence_pos: int, triple_pos: int | None) -> int | None:
        """Table row of a sentence's triple (``None`` when not shown)."""
        try:
            return self._rows.index((sentence_pos, triple_pos))
        except ValueError:
            return None

    def _render(self) -> None:
        self._filling = True
        try:
            self.table.clearSpans()
            self.table.setRowCount(0)
            self._rows = []
            heading_brush = QBrush(QColor(236, 236, 236))
            for pos, sentence in enumerate(self._sentences):
                start = len(self._rows)
                self._rows.append((pos, self.HEADING))
                if sentence.triples:
                    self._rows.extend((pos, t) for t in range(len(sentence.triples)))
                else:
                    self._rows.append((pos, None))
                self.table.setRowCount(len(self._rows))
                title = f"{sentence.field} · " if self._multi_field else ""
                label = QTableWidgetItem(f"{title}sentence {sentence.index + 1}: {sentence.sentence}")
                label.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
                label.setToolTip(f"<p>{html.escape(sentence.sentence)}</p>")
                label.setBackground(heading_brush)
                font = QFont(label.font())
                font.setBold(True)
                label.setFont(font)
                self.table.setItem(start, 0, label)
                self.table.setSpan(start, 0, 1, len(self.HEADERS))
                if not sentence.triples:
                    empty = QTableWidgetItem("(no triples: Add triple, or Generate to extract them)")
                    empty.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
                    empty.setForeground(QBrush(QColor(130, 130, 130)))
                    self.table.setItem(start + 1, 0, empty)
                    self.table.setSpan(start + 1, 0, 1, len(self.HEADERS))
                    continue
                for t, parts in enumerate(sentence.triples):
                    category = sentence.categories[t] if t < len(sentence.categories) else "normal"
                    edited = t < len(sentence.edited) and sentence.edited[t]
                    brush = QBrush(CATEGORY_COLORS[category]) if category in CATEGORY_COLORS else None
                    for col, text in zip((self.SUBJECT, self.PREDICATE, self.OBJECT, self.CATEGORY),
                                         (*parts, category), strict=True):
                        item = QTableWidgetItem(text)
                        if col == self.CATEGORY:
                            item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
                        if brush is not None:
                            item.setBackground(brush)
                        if edited:
                            font = QFont(item.font())
                            font.setItalic(True)
                            item.setFont(font)
                            item.setToolTip("written by you")
                        self.table.setItem(start + 1 + t, col, item)
            self.table.resizeRowsToContents()
        finally:
            self._filling = False

    # ------------------------------------------------------------------ editing
    def _current(self) -> tuple[int, int | None] | None:
        row = self.table.currentRow()
        if not 0 <= row < len(self._rows):
            return None
        return self._rows[row]

    def add_triple(self) -> None:
        """Add an empty triple to the selected sentence (stored once its three parts are filled)."""
        current = self._current()
        if current is None:
            if not self._sentences:
                return
            current = (0, None)
        pos = current[0]
        sentence = self._sentences[pos]
        sentence.triples.append(["", "", ""])
        sentence.categories.append("normal")
        sentence.edited.append(True)
        self._render()
        row = self.row_of(pos, len(sentence.triples) - 1)
        if row is not None:
            self.table.setCurrentCell(row, self.SUBJECT)
            self.table.editItem(self.table.item(row, self.SUBJECT))
        self.message.setText("Fill in subject, predicate and object; the triple is saved once all three are set.")

    def delete_triple(self) -> None:
        """Delete the selected triple and emit the sentence's remaining triples."""
        current = self._current()
        if current is None or current[1] is None or current[1] == self.HEADING:
            self.message.setText("Select a triple to delete.")
            return
        pos, t = current
        sentence = self._sentences[pos]
        del sentence.triples[t]
        del sentence.categories[t:t + 1]
        del sentence.edited[t:t + 1]
        self._render()
        self._emit(pos)

    def _item_changed(self, item: QTableWidgetItem) -> None:
        if self._filling or item.column() not in (self.SUBJECT, self.PREDICATE, self.OBJECT):
            return
        row = item.row()
        if not 0 <= row < len(self._rows):
            return
        pos, t = self._rows[row]
        if t is None or t == self.HEADING:
            return
        sentence = self._sentences[pos]
        new = item.text().strip()
        if sentence.triples[t][item.column() - self.SUBJECT] == new:
            return
        sentence.triples[t][item.column() - self.SUBJECT] = new
        sentence.edited[t] = True
        self._emit(pos)

    def _emit(self, pos: int) -> None:
        sentence = self._sentences[pos]
        if any(not part.strip() for triple in sentence.triples for part in triple):
            self.message.setText("Every triple needs a subject, a predicate and an object before it is saved.")
            return
        self.message.clear()
        self.triplesEdited.emit(sentence.field, sentence.index, [tuple(t) for t in sentence.triples])
