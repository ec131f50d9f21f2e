"""The verification panel: every check's verdict and reason for one candidate, in one place.

Run standalone with sample verdicts: ``python -m widgets.verification_view``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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

from engine.verification.checks import CHECKS, TITLES, label_judged

#: How each status is shown: mark, word, colour.
STATUS_LOOK = {"pass": ("\u2714", "pass", "#1a6b1a"), "fail": ("\u2718", "fail", "#a40000"),
               "skip": ("\u2013", "skipped", "#777777")}


class VerificationView(QWidget):
    """A table of checks (mark, check, reason) with the accept rule's conclusion above it."""

    verifyRequested = Signal(str)
    """``"checks"``: run the ensemble and string checks again on the listed candidates; ``"llm"``: ask the LLM judge."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.table = QTableWidget(0, 3)
        self.table.setObjectName("verificationTable")
        self.table.setHorizontalHeaderLabels(["", "Check", "Verdict and reason"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setWordWrap(True)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.recheck_button = QPushButton("Run checks again")
        self.recheck_button.setToolTip("Judge the listed candidates with the ensemble and run every string check")
        self.llm_button = QPushButton("Ask the LLM judge")
        self.llm_button.setToolTip("Ask the LLM (LLM settings…) which label each listed candidate expresses")
        self.recheck_button.clicked.connect(lambda: self.verifyRequested.emit("checks"))
        self.llm_button.clicked.connect(lambda: self.verifyRequested.emit("llm"))
        title = QLabel("<b>Verification</b>")
        top = QHBoxLayout()
        top.addWidget(title)
        top.addStretch(1)
        top.addWidget(self.recheck_button)
        top.addWidget(self.llm_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        self.show_verdicts(None)

    def set_busy(self, busy: bool) -> None:
        self.recheck_button.setEnabled(not busy)
        self.llm_button.setEnabled(not busy)

    def rows(self) -> list[tuple[str, str, str]]:
        """``(check name, status, reason)`` of each shown row (for tests and copies)."""
        out = []
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 1)
            out.append((item.data(Qt.ItemDataRole.UserRole), self.table.item(r, 0).data(Qt.ItemDataRole.UserRole),
                        self.table.item(r, 2).text()))
        return out

    def show_verdicts(self, candidate: Mapping[str, Any] | None, required: Sequence[str] = ()) -> None:
        """Show the verdicts stored in ``candidate["scores"]`` (``None``: nothing selected)."""
        scores = (candidate or {}).get("scores") or {}
        verdicts: Mapping[str, Mapping[str, str]] = scores.get("verdicts") or {}
        self.table.setRowCount(0)
        if candidate is None:
            self.summary.setText("<span style='color:#555'>No candidate selected.</span>")
            return
        if candidate.get("status") == "failed":
            self.summary.setText("<span style='color:#555'>A failed candidate has no text to check.</span>")
            return
        if not verdicts:
            self.summary.setText("<span style='color:#555'>Not checked yet: press <i>Run checks again</i>.</span>")
            return
        names = [n for n in CHECKS.names() if n in verdicts] + [n for n in verdicts if n not in CHECKS]
        failing = [n for n in names if verdicts[n].get("status") == "fail" and n in required]
        if scores.get("passes"):
            unjudged = "" if label_judged(verdicts) else (
                " · <span style='color:#8a5a00'>label not judged: no ensemble or LLM judge read it</span>")
            self.summary.setText("<span style='color:#1a6b1a'><b>Passes the accept rule</b></span>"
                                 f" · {sum(v.get('status') == 'pass' for v in verdicts.values())} checks pass{unjudged}")
        else:
            held = ", ".join(TITLES.get(n, n) for n in failing) or "the target probability"
            self.summary.setText(f"<span style='color:#a40000'><b>Held back</b></span> by: {held}")
        bold = QFont(self.font())
        bold.setBold(True)
        for name in names:
            verdict = verdicts[name]
            status = str(verdict.get("status", "skip"))
            mark, word, colour = STATUS_LOOK.get(status, STATUS_LOOK["skip"])
            row = self.table.rowCount()
            self.table.insertRow(row)
            cells = [QTableWidgetItem(mark), QTableWidgetItem(TITLES.get(name, name)),
                     QTableWidgetItem(word + (f": {verdict.get('reason')}" if verdict.get("reason") else ""))]
            cells[0].setData(Qt.ItemDataRole.UserRole, status)
            cells[1].setData(Qt.ItemDataRole.UserRole, name)
            cells[1].setToolTip(f"{name}" + (" · required by the accept rule" if name in required else
                                              " · informative only"))
            for col, cell in enumerate(cells):
                if col != 1:
                    cell.setForeground(QBrush(QColor(colour)))
                if name in required:
                    cell.setFont(bold)
                self.table.setItem(row, col, cell)
        self.table.resizeRowsToContents()


def _demo() -> None:  # pragma: no cover - manual look
    import sys

    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv)
    view = VerificationView()
    view.show_verdicts({"status": "proposed", "scores": {"passes": False, "verdicts": {
        "label-flip": {"status": "pass", "reason": "predicts Negative (mean P(target) 0.91)"},
        "member-agreement": {"status": "fail", "reason": "P(target) below 0.85: minilm-l3 0.62"},
        "refusal": {"status": "pass", "reason": ""},
        "llm-judge": {"status": "skip", "reason": "not run"}}}}, ["label-flip", "member-agreement", "refusal"])
    view.resize(640, 360)
    view.show()
    app.exec()


if __name__ == "__main__":  # pragma: no cover
    _demo()
