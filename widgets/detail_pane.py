"""The detail pane: everything about the selected example, text in full.

All values are shown as plain text (labels use ``Qt.PlainText``, texts live in read-only
``QPlainTextEdit``\\ s), so markup in the data is displayed, never interpreted — except the line-break tags
of IMDb-style data (``<br />``), drawn as the line breaks they mean (as the review tab does).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from widgets.labels import contrast_text_color, label_color_for

__all__ = ["DetailPane", "LabelChip", "shown_text"]


class LabelChip(QLabel):
    """A label name on a rounded background of the label's colour."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)

    def set_label(self, label: str | None, labels: Sequence[str]) -> None:
        """Show ``label`` coloured by its index in ``labels`` (nothing for ``None``)."""
        if label is None:
            self.clear()
            self.setStyleSheet("")
            return
        color = label_color_for(label, labels)
        text_color = contrast_text_color(color)
        self.setText(label)
        self.setToolTip(label if label in labels else f"{label} (not in the dataset's label set)")
        self.setStyleSheet(
            f"QLabel {{ background-color: {color.name()}; color: {text_color.name()}; "
            "border-radius: 7px; padding: 1px 8px; }"
        )


def _value_label(parent: QWidget) -> QLabel:
    label = QLabel(parent)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setWordWrap(True)
    return label


_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def shown_text(text: str | None) -> str:
    """A text as the pane shows it: ``<br />`` tags as line breaks, everything else as stored.

    Examples
    --------
    >>> shown_text("Fine.<br /><br />Dull.<BR>End <b>x</b>")
    'Fine.\\n\\nDull.\\nEnd <b>x</b>'
    """
    return _BREAK.sub("\n", text or "")


def _text_view(parent: QWidget, name: str) -> QPlainTextEdit:
    edit = QPlainTextEdit(parent)
    edit.setObjectName(name)
    edit.setReadOnly(True)
    edit.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
    edit.setTextInteractionFlags(
        Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
    )
    return edit


class DetailPane(QWidget):
    """Shows one example: ids, label chip, split, provenance, and its full text.

    Parameters
    ----------
    parent
        Parent widget.

    Attributes
    ----------
    fields
        Value label per field (``"id"``, ``"ext_id"``, ``"split"``, ``"source"``,
        ``"method"``, ``"parent_id"``); rows without a value are hidden.
    label_chip, target_chip
        The label and (for augmented rows) target-label chips.
    text_edit, premise_edit, hypothesis_edit
        Read-only text views; the first is used by single-text tasks, the others by pairs.
    """

    FIELD_TITLES = {
        "id": "Id",
        "ext_id": "Id in file",
        "split": "Split",
        "source": "Source",
        "method": "Method",
        "parent_id": "Made from",
    }

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._example: dict[str, Any] | None = None

        self._form = QFormLayout()
        self._form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.fields: dict[str, QLabel] = {}
        self.label_chip = LabelChip(self)
        self.target_chip = LabelChip(self)
        for key in ("id", "ext_id"):
            self.fields[key] = _value_label(self)
            self._form.addRow(self.FIELD_TITLES[key], self.fields[key])
        self._form.addRow("Label", self.label_chip)
        for key in ("split", "source", "method", "parent_id"):
            self.fields[key] = _value_label(self)
            self._form.addRow(self.FIELD_TITLES[key], self.fields[key])
        self._form.addRow("Target label", self.target_chip)

        self.placeholder = QLabel("No example selected", self)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setEnabled(False)

        self.text_edit = _text_view(self, "text")
        self.premise_edit = _text_view(self, "premise")
        self.hypothesis_edit = _text_view(self, "hypothesis")
        pair = QSplitter(Qt.Orientation.Vertical, self)
        for title, edit in (("Premise", self.premise_edit), ("Hypothesis", self.hypothesis_edit)):
            box = QWidget(pair)
            box_layout = QVBoxLayout(box)
            box_layout.setContentsMargins(0, 0, 0, 0)
            box_layout.addWidget(QLabel(title, box))
            box_layout.addWidget(edit)
            pair.addWidget(box)

        self._stack = QStackedWidget(self)
        self._stack.addWidget(self.placeholder)  # 0
        self._stack.addWidget(self.text_edit)  # 1
        self._stack.addWidget(pair)  # 2

        self._form_widget = QWidget(self)
        self._form_widget.setLayout(self._form)
        layout = QVBoxLayout(self)
        layout.addWidget(self._form_widget)
        layout.addWidget(self._stack, 1)
        self.show_example(None, [])

    @property
    def example(self) -> dict[str, Any] | None:
        """The example shown, or ``None``."""
        return self._example

    def show_example(self, row: dict[str, Any] | None, labels: Sequence[str]) -> None:
        """Show ``row`` (an ``examples`` row as a dict), or the placeholder for ``None``.

        Parameters
        ----------
        row
            The example (e.g. from ``ExamplesTableModel.example_at``).
        labels
            The dataset's label set, for the label colours.
        """
        self._example = dict(row) if row is not None else None
        if row is None:
            self._form_widget.setVisible(False)
            for edit in (self.text_edit, self.premise_edit, self.hypothesis_edit):
                edit.clear()
            self._stack.setCurrentIndex(0)
            return
        self._form_widget.setVisible(True)
        for key, widget in self.fields.items():
            value = row.get(key)
            present = value is not None and value != ""
            widget.setText(str(value) if present else "")
            self._form.setRowVisible(widget, present)
        self.label_chip.set_label(row.get("label"), labels)
        self._form.setRowVisible(self.label_chip, row.get("label") is not None)
        target = row.get("target_label")
        self.target_chip.set_label(target, labels)
        self._form.setRowVisible(self.target_chip, bool(target))

        is_pair = row.get("premise") is not None or row.get("hypothesis") is not None
        if is_pair and row.get("text") is None:
            self.text_edit.clear()
            self.premise_edit.setPlainText(shown_text(row.get("premise")))
            self.hypothesis_edit.setPlainText(shown_text(row.get("hypothesis")))
            self._stack.setCurrentIndex(2)
        else:
            self.premise_edit.clear()
            self.hypothesis_edit.clear()
            self.text_edit.setPlainText(shown_text(row.get("text")))
            self._stack.setCurrentIndex(1)
