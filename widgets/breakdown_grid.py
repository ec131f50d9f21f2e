"""Member × method grid of each one's top-K words, with toggles per member and method."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from PySide6.QtCore import Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from widgets.sentence_view import PRINCIPAL_RGB, SPURIOUS_RGB


class BreakdownGrid(QWidget):
    """Rows are ensemble members (with their dev accuracy), columns attribution methods.

    Each cell lists that member's top-K words under that method; words that ended up principal
    or spurious are marked. Unticking a member or method emits :attr:`togglesChanged` so the
    caller can re-run the (cheap, pure) vote without it.
    """

    togglesChanged = Signal(list, list)
    """Emitted with (enabled members, enabled methods)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.table = QTableWidget(0, 0)
        self.table.setObjectName("breakdownGrid")
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.method_row = QHBoxLayout()
        self.member_boxes: dict[str, QCheckBox] = {}
        self.method_boxes: dict[str, QCheckBox] = {}
        self.members_row = QHBoxLayout()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(QLabel("Methods:"))
        top.addLayout(self.method_row)
        top.addSpacing(16)
        top.addWidget(QLabel("Members:"))
        top.addLayout(self.members_row)
        top.addStretch(1)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)

    def set_members(self, members: Sequence[str], methods: Sequence[str],
                    accuracy: Mapping[str, float] | None = None, presets: Mapping[str, str] | None = None,
                    ticked: Sequence[str] | None = None, tooltips: Mapping[str, str] | None = None) -> None:
        """Define the grid's rows and columns; rows show dev accuracy and preset.

        A member or method shown before keeps its toggle; a new member is ticked when it is in
        ``ticked`` (``None``: every member), and its box gets ``tooltips[member]``.
        """
        accuracy = accuracy or {}
        presets = presets or {}
        self._rebuild(self.members_row, self.member_boxes, members,
                      {m: f"{m} ({accuracy[m]:.0%})" if m in accuracy else m for m in members},
                      set(members if ticked is None else ticked), tooltips or {})
        self._rebuild(self.method_row, self.method_boxes, methods, {m: m for m in methods}, set(methods), {})
        self.table.setRowCount(len(members))
        self.table.setColumnCount(len(methods))
        self.table.setHorizontalHeaderLabels(list(methods))
        self.table.setVerticalHeaderLabels(
            [(f"{m}\nacc {accuracy[m]:.1%}" if m in accuracy else m) + (f" · {presets[m]}" if m in presets else "")
             for m in members]
        )
        self._members, self._methods = list(members), list(methods)

    def show_tops(self, tops: Mapping[str, Mapping[str, Sequence[str]]],
                  principal: Sequence[str] = (), spurious: Sequence[str] = ()) -> None:
        """Fill the cells: ``tops[member][method]`` = top-K words, best first."""
        principal_set, spurious_set = set(principal), set(spurious)
        for r, member in enumerate(getattr(self, "_members", [])):
            for c, method in enumerate(getattr(self, "_methods", [])):
                words = list(tops.get(member, {}).get(method, []))
                item = QTableWidgetItem(", ".join(words) if words else "—")
                item.setToolTip("\n".join(
                    f"{i + 1}. {w}" + (" (principal)" if w in principal_set else " (spurious)" if w in spurious_set else "")
                    for i, w in enumerate(words)))
                enabled = self.member_boxes[member].isChecked() and self.method_boxes[method].isChecked()
                if not enabled:
                    item.setForeground(QBrush(QColor(160, 160, 160)))
                elif words and words[0] in principal_set:
                    item.setBackground(QBrush(QColor(*PRINCIPAL_RGB, 40)))
                elif words and words[0] in spurious_set:
                    item.setBackground(QBrush(QColor(*SPURIOUS_RGB, 40)))
                self.table.setItem(r, c, item)

    def tick_members(self, names: Sequence[str]) -> None:
        """Tick exactly the members in ``names`` (e.g. those of a stored vote); one :attr:`togglesChanged`."""
        for member, box in self.member_boxes.items():
            box.blockSignals(True)
            box.setChecked(member in names)
            box.blockSignals(False)
        self.togglesChanged.emit(*self.enabled())

    def enabled(self) -> tuple[list[str], list[str]]:
        """(members, methods) currently ticked."""
        return ([m for m, b in self.member_boxes.items() if b.isChecked()],
                [m for m, b in self.method_boxes.items() if b.isChecked()])

    def cell_text(self, member: str, method: str) -> str:
        item = self.table.item(self._members.index(member), self._methods.index(method))
        return item.text() if item else ""

    def _rebuild(self, row: QHBoxLayout, boxes: dict[str, QCheckBox], names: Sequence[str],
                 titles: Mapping[str, str], ticked: set[str], tooltips: Mapping[str, str]) -> None:
        previous = {k: b.isChecked() for k, b in boxes.items()}
        for box in boxes.values():
            row.removeWidget(box)
            box.hide()  # until the deferred delete runs, it would still be drawn at the grid's corner
            box.deleteLater()
        boxes.clear()
        for name in names:
            box = QCheckBox(titles[name])
            box.setObjectName(f"toggle_{name}")
            box.setChecked(previous.get(name, name in ticked))
            if name in tooltips:
                box.setToolTip(tooltips[name])
            box.toggled.connect(lambda _=False: self.togglesChanged.emit(*self.enabled()))
            row.addWidget(box)
            boxes[name] = box
