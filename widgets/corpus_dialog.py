"""Dialog: make a corpus ready for CORE (add a file, label it with a member, embed and index it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

__all__ = ["CorpusDialog", "CorpusRequest"]

#: Index kinds offered (registry names of engine.retrieval.index_kinds).
INDEX_KINDS = (("auto", "auto (exact up to 50,000 sentences, HNSW above)"), ("flat", "exact (flat)"),
               ("hnsw", "HNSW (approximate graph; recall 0.96 at 10x exact on 594k sentences)"),
               ("ivf", "IVF (approximate, fast on large corpora)"),
               ("ivfpq", "IVF-PQ (compressed, re-ranked exactly; millions of sentences)"))
FILE_FILTER = "Text collections (*.csv *.tsv *.jsonl *.json *.txt *.gz);;All files (*)"


@dataclass(frozen=True)
class CorpusRequest:
    """What the user asked for: add ``path`` (or nothing) to corpus ``name``, label it with ``member``."""

    name: str
    path: Path | None
    member: str
    kind: str


class CorpusDialog(QDialog):
    """Choose a file, a corpus name, the labelling member and the index kind.

    Parameters
    ----------
    corpora
        Names of the project's corpora (an existing one can be relabelled or reindexed without a file).
    members
        Names of the project's trained members.
    start_dir
        Where the file chooser opens.
    """

    def __init__(self, corpora: list[str], members: list[str], start_dir: str = "",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Corpus for CORE")
        self.corpora = list(corpora)
        self.start_dir = start_dir
        self.path = QLineEdit(placeholderText="a CSV/TSV/JSONL or plain-text file (one document per line)")
        self.path.setObjectName("corpusPath")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.path, 1)
        row.addWidget(browse)
        self.name = QComboBox()
        self.name.setObjectName("corpusName")
        self.name.setEditable(True)
        self.name.addItems(self.corpora)
        if not self.corpora:
            self.name.setEditText("corpus")
        self.member = QComboBox()
        self.member.setObjectName("corpusMember")
        self.member.addItems(members)
        self.kind = QComboBox()
        for key, text in INDEX_KINDS:
            self.kind.addItem(text, key)
        self.note = QLabel(
            "The file's texts are split into sentences (duplicates dropped), labelled by the member, embedded "
            "with MiniLM and indexed, as one job with progress and cancel. Every step resumes: start it again "
            "after a cancel, or without a file to label an existing corpus with another member.")
        self.note.setWordWrap(True)
        self.problem = QLabel()
        self.problem.setStyleSheet("color: #a40000;")
        self.problem.setWordWrap(True)
        form = QFormLayout(self)
        form.addRow("Add file", row)
        form.addRow("Corpus name", self.name)
        form.addRow("Label with member", self.member)
        form.addRow("Index", self.kind)
        form.addRow(self.note)
        form.addRow(self.problem)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Prepare")
        self.buttons.accepted.connect(self._accept_if_valid)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        self.resize(620, self.sizeHint().height())

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Add a text collection", self.start_dir, FILE_FILTER)
        if path:
            self.path.setText(path)
            if not self.name.currentText().strip() or self.name.currentText() == "corpus":
                self.name.setEditText(Path(path).name.split(".")[0])

    def problem_text(self) -> str:
        """Why the request cannot start yet ("" when it can)."""
        name = self.name.currentText().strip()
        path = self.path.text().strip()
        if not name:
            return "Name the corpus."
        if self.member.count() == 0:
            return "Train a member first (Word importance tab): CORE needs the corpus labelled by one."
        if not path and name not in self.corpora:
            return f"There is no corpus {name!r} yet: choose a file to add."
        if path and not Path(path).is_file():
            return f"There is no file at {path}."
        return ""

    def _accept_if_valid(self) -> None:
        problem = self.problem_text()
        self.problem.setText(problem)
        if not problem:
            self.accept()

    def request(self) -> CorpusRequest:
        """The request (valid after the dialog was accepted)."""
        path = self.path.text().strip()
        return CorpusRequest(self.name.currentText().strip(), Path(path) if path else None,
                             self.member.currentText(), str(self.kind.currentData()))
