"""The Counterbias tab: an example's triples, its candidates, and keyboard review.

Left: the selected example and its sentences → triples (:class:`~widgets.triples_view.TriplesView`,
editable). Right: the candidates (this example's, or the whole dataset's, filtered by status),
and the current candidate's word diff against the original, the ensemble judge's scores, the
spurious words it had to keep, the steps that made it, or — for a failed one — the error and
what to do. Keys on the candidates table: ``A`` accept, ``X`` reject, ``E`` edit, Up/Down move.

The panel computes nothing and stores nothing: it emits requests and shows what it is given.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QCheckBox,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from widgets.candidate_view import candidate_html, default_required, show_breaks
from widgets.diff_view import DiffView
from widgets.models.candidates_model import CandidatesProxy, CandidatesTableModel, edited_field
from widgets.triples_view import SentenceRow, TriplesView
from widgets.verification_view import VerificationView

__all__ = ["CandidatesTable", "EditCandidateDialog", "ReviewPanel", "STATUS_FILTERS", "candidate_html"]

#: Status filter choices: (label, statuses or None for all).
STATUS_FILTERS: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("All statuses", None),
    ("Proposed", ("proposed",)),
    ("Accepted", ("accepted",)),
    ("Rejected", ("rejected",)),
    ("Failed", ("failed",)),
    ("Undecided (proposed + failed)", ("proposed", "failed")),
)

_KEYS = {Qt.Key.Key_A: "accepted", Qt.Key.Key_X: "rejected", Qt.Key.Key_E: "edit"}


class CandidatesTable(QTableView):
    """The candidates table; ``A`` / ``X`` / ``E`` emit :attr:`keyDecision`, arrows move as usual."""

    keyDecision = Signal(str)
    """``"accepted"``, ``"rejected"`` or ``"edit"``."""

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        plain = event.modifiers() in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.KeypadModifier)
        decision = _KEYS.get(Qt.Key(event.key())) if plain else None
        if decision is not None:
            event.accept()
            self.keyDecision.emit(decision)
            return
        super().keyPressEvent(event)


class EditCandidateDialog(QDialog):
    """Edit a candidate's text; OK saves it (as accepted)."""

    def __init__(self, candidate: dict[str, Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        field = edited_field(candidate)
        self.candidate_id = int(candidate["id"])
        self.setWindowTitle(f"Edit candidate {self.candidate_id}")
        original = (candidate.get("original") or {}).get(field) or ""
        hint = QLabel(f"<b>Original {html.escape(field)}</b> ({html.escape(str(candidate.get('original_label')))}"
                      f" → target <b>{html.escape(candidate['target_label'])}</b>):<br>{html.escape(original)}")
        hint.setWordWrap(True)
        self.editor = QPlainTextEdit(candidate.get(field) or "")
        self.editor.setObjectName("candidateEditor")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(hint)
        layout.addWidget(QLabel("Your text (saved as accepted):"))
        layout.addWidget(self.editor, 1)
        layout.addWidget(buttons)
        self.resize(640, 320)

    def text(self) -> str:
        return self.editor.toPlainText().strip()


GENERATION_METHODS = (("coba", "CoBA"), ("core", "CORE (retrieve, then edit)"), ("llm", "LLM-only edit"))


class ReviewPanel(QWidget):
    """Triples of the selected example; candidates with diffs and scores; generate / augment buttons."""

    generateRequested = Signal(str)
    """``"selection"`` or ``"all"`` — make candidates for those examples."""

    augmentRequested = Signal()
    """Build the augmented dataset from the accepted candidates."""

    llmSettingsRequested = Signal()
    #: The user asked to import, label or index a corpus for CORE.
    corpusRequested = Signal()
    """Open the LLM settings dialog."""

    decisionRequested = Signal(str)
    #: "Accept all passing": every undecided candidate of the shown dataset that the accept rule passes.
    acceptPassingRequested = Signal()
    """``"accepted"``, ``"rejected"`` or ``"edit"`` for the current candidate."""

    scopeChanged = Signal()
    """The candidate scope (this example / whole dataset) changed."""

    candidateChanged = Signal(object)
    """The current candidate (a dict, or ``None``) changed."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.generate_selection = QPushButton("Generate for selection")
        self.generate_selection.setToolTip("Make counterbias candidates for the rows selected in the Examples tab")
        self.generate_all = QPushButton("Generate for all")
        self.generate_all.setToolTip("Make candidates for every example of the dataset (finished ones are skipped)")
        self.augment_button = QPushButton("Build augmented dataset")
        self.augment_button.setToolTip("A new dataset version: the originals plus every accepted candidate")
        self.llm_button = QPushButton("LLM settings…")
        self.method = QComboBox()
        self.method.setObjectName("generationMethod")
        for key, text in GENERATION_METHODS:
            self.method.addItem(text, key)
        self.method.setToolTip("CoBA: triples, then a targeted rewrite of the sentences that carry the label. CORE: "
                               "retrieve corpus sentences of the target label, then a minimal edit using their "
                               "words. LLM-only: the same minimal edit without retrieval (the baseline).")
        self.corpus = QComboBox()
        self.corpus.setObjectName("generationCorpus")
        self.corpus.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.corpus.setMinimumContentsLength(10)
        self.corpus.setToolTip("The corpus to retrieve from (Corpus… imports, labels and indexes one)")
        self.corpus_button = QPushButton("Corpus…")
        self.corpus_button.setObjectName("generationCorpusButton")
        self.corpus_button.setToolTip("Add a text collection as a corpus, label it with a member, embed and index it")
        self.corpus_button.clicked.connect(self.corpusRequested)
        self.member = QComboBox()
        self.member.setObjectName("generationMember")
        self.member.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.member.setToolTip("The member that labelled the corpus")
        self.method.currentIndexChanged.connect(self._method_changed)
        self.generate_selection.clicked.connect(lambda: self.generateRequested.emit("selection"))
        self.generate_all.clicked.connect(lambda: self.generateRequested.emit("all"))
        self.augment_button.clicked.connect(self.augmentRequested)
        self.llm_button.clicked.connect(self.llmSettingsRequested)
        self.llm_label = QLabel()
        self.llm_label.setStyleSheet("color: #555;")
        self.llm_label.setWordWrap(True)
        self.tokens_label = QLabel()
        self.tokens_label.setStyleSheet("color: #555;")
        self.tokens_label.setWordWrap(True)
        self.tokens_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        top = QHBoxLayout()
        for w in (self.method, self.corpus, self.member, self.corpus_button, self.generate_selection, self.generate_all,
                  self.augment_button, self.llm_button):
            top.addWidget(w)
        self._method_changed()
        top.addWidget(self.llm_label, 2)
        top.addWidget(self.tokens_label, 1)

        # left: the example and its triples
        self.example_label = QLabel()
        self.example_label.setWordWrap(True)
        self.example_label.setTextFormat(Qt.TextFormat.RichText)
        self.triples = TriplesView(self)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.example_label)
        ll.addWidget(self.triples, 1)

        # right: candidates and the current one's detail
        self.model = CandidatesTableModel(self)
        self.proxy = CandidatesProxy(self)
        self.proxy.setSourceModel(self.model)
        self.scope = QComboBox()
        self.scope.addItem("This example", "example")
        self.scope.addItem("Whole dataset", "dataset")
        self.status_filter = QComboBox()
        for label, statuses in STATUS_FILTERS:
            self.status_filter.addItem(label, statuses)
        self.count_label = QLabel()
        self.accept_button = QPushButton("Accept (A)")
        self.reject_button = QPushButton("Reject (X)")
        self.edit_button = QPushButton("Edit (E)")
        self.accept_button.clicked.connect(lambda: self.decisionRequested.emit("accepted"))
        self.reject_button.clicked.connect(lambda: self.decisionRequested.emit("rejected"))
        self.edit_button.clicked.connect(lambda: self.decisionRequested.emit("edit"))
        self.advance = QCheckBox("Next after a decision")
        self.advance.setChecked(True)
        self.advance.setToolTip("After accept or reject, move to the next candidate (a candidate that leaves the "
                                "status filter always gives its place to the next)")
        self.accept_passing_button = QPushButton("Accept all passing")
        self.accept_passing_button.setToolTip("Accept every undecided candidate of this dataset that the accept rule "
                                              "passes (one step of Edit ▸ Undo takes them all back). Read before you "
                                              "trust it: with a small model the rule is a ranking, not a verdict.")
        self.accept_passing_button.clicked.connect(self.acceptPassingRequested)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Candidates of"))
        controls.addWidget(self.scope)
        controls.addWidget(self.status_filter)
        controls.addWidget(self.count_label, 1)
        controls.addWidget(self.advance)
        self.table = CandidatesTable()
        self.table.setObjectName("candidatesTable")
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(CandidatesTableModel.ID, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(CandidatesTableModel.TEXT, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(30)
        samples = {CandidatesTableModel.ID: "9999", CandidatesTableModel.EXAMPLE: "99999",
                   CandidatesTableModel.TARGET: "Negative", CandidatesTableModel.STATUS: "proposed",
                   CandidatesTableModel.FLIPPED: "yes", CandidatesTableModel.PROB: "0.00",
                   CandidatesTableModel.KEPT: "yes", CandidatesTableModel.EDIT: "0.00"}
        for column, sample in samples.items():
            wide = max(self.fontMetrics().horizontalAdvance(sample),
                       header.fontMetrics().horizontalAdvance(CandidatesTableModel.HEADERS[column]))
            self.table.setColumnWidth(column, wide + 24)
        self.table.setColumnHidden(CandidatesTableModel.EXAMPLE, True)  # one example shown at first
        self.table.keyDecision.connect(self.decisionRequested)
        self.table.selectionModel().currentRowChanged.connect(self._current_changed)
        self.detail = DiffView(self)
        keys = QLabel("<b>A</b> accept · <b>X</b> reject · <b>E</b> edit · <b>↑/↓</b> move · "
                      "<b>Ctrl+Z</b> undo · "
                      "<span style='color:#1a6b1a; background-color:#dcf5dc'>inserted</span> "
                      "<span style='color:#a40000; background-color:#fde0e0; text-decoration:line-through'>"
                      "deleted</span>")
        keys.setWordWrap(True)
        keys.setStyleSheet("color: #555;")
        upper = QWidget()
        ul = QVBoxLayout(upper)
        ul.setContentsMargins(0, 0, 0, 0)
        ul.addLayout(controls)
        ul.addWidget(self.table, 1)
        decide = QHBoxLayout()
        decide.addWidget(keys, 1)
        for b in (self.accept_button, self.reject_button, self.edit_button, self.accept_passing_button):
            decide.addWidget(b)
        ul.addLayout(decide)
        self.verification = VerificationView(self)
        #: Checks the accept rule requires (bold in the verification panel).
        self.required_checks: list[str] = default_required()
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(upper)
        right.addWidget(self.detail)
        right.addWidget(self.verification)
        right.setSizes([240, 260, 220])

        split = QSplitter()
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([450, 750])
        self.splitter = split
        self.message = QLabel()
        self.message.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.message)
        layout.addWidget(split, 1)

        self.scope.currentIndexChanged.connect(self._scope_changed)
        self.status_filter.currentIndexChanged.connect(self._filter_changed)
        self.proxy.rowsInserted.connect(self._update_count)
        self.proxy.rowsRemoved.connect(self._update_count)
        self.proxy.modelReset.connect(self._update_count)
        self.proxy.layoutChanged.connect(self._update_count)
        self._example_id: int | None = None
        self.edit_dialog: EditCandidateDialog | None = None
        self.show_example(None, [])
        self._update_count()

    # ------------------------------------------------------------------ state
    @property
    def shown_example_id(self) -> int | None:
        """The id of the example whose triples are shown on the left (``None``: none)."""
        return self._example_id

    @property
    def dataset_scope(self) -> bool:
        """Whether the whole dataset's candidates are listed (else the selected example's)."""
        return self.scope.currentData() == "dataset"

    def set_busy(self, busy: bool) -> None:
        for b in (self.generate_selection, self.generate_all, self.augment_button, self.corpus_button):
            b.setEnabled(not busy)

    def generation_method(self) -> str:
        """``"coba"``, ``"core"`` or ``"llm"``."""
        return str(self.method.currentData())

    def set_core_sources(self, corpora: list[str], members: list[str]) -> None:
        """The corpora and members CORE can retrieve with (the current choices are kept when still there)."""
        for combo, names, empty in ((self.corpus, corpora, "(no corpus)"), (self.member, members, "(no member)")):
            keep = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(names or [empty])
            combo.setEnabled(bool(names))
            if keep in names:
                combo.setCurrentText(keep)
            combo.blockSignals(False)

    def select_corpus(self, name: str, member: str) -> None:
        """Choose ``name`` and ``member`` for CORE (after they were prepared)."""
        for combo, text in ((self.corpus, name), (self.member, member)):
            if combo.findText(text) >= 0:
                combo.setCurrentText(text)

    def core_choice(self) -> tuple[str | None, str | None]:
        """The chosen corpus and labelling member (``None`` when there is none)."""
        return (self.corpus.currentText() if self.corpus.isEnabled() else None,
                self.member.currentText() if self.member.isEnabled() else None)

    def _method_changed(self, *_args: object) -> None:
        core = self.generation_method() == "core"
        self.corpus.setVisible(core)
        self.member.setVisible(core)
        self.corpus_button.setVisible(core)

    def set_llm_summary(self, text: str) -> None:
        self.llm_label.setText(text)

    def set_tokens(self, text: str) -> None:
        self.tokens_label.setText(text)

    def set_message(self, text: str) -> None:
        self.message.setText(text)

    # ------------------------------------------------------------------ the example
    def show_example(self, example: dict[str, Any] | None, sentences: Sequence[SentenceRow], *,
                     multi_field: bool = False, message: str = "") -> None:
        """The selected example (``None``: none) and its sentences with triples."""
        self._example_id = None if example is None else int(example["id"])
        if example is None:
            self.example_label.setText("<i>Select an example in the Examples tab.</i>")
            self.triples.clear_sentences(message)
        else:
            fields = [f for f in ("premise", "hypothesis", "text") if example.get(f)]
            body = "<br>".join(f"<b>{html.escape(f)}</b>: {show_breaks(html.escape(str(example[f])))}" for f in fields
                               if f != "text" or len(fields) == 1)
            self.example_label.setText(f"<p><b>Example {int(example['id'])}</b> · label "
                                       f"<b>{html.escape(str(example.get('label')))}</b></p><p>{body}</p>")
            if sentences:
                self.triples.show_sentences(sentences, multi_field=multi_field)
                self.triples.message.setText(message)
            else:
                self.triples.clear_sentences(message or "No triples yet: Generate extracts them first.")
        self.proxy.set_example(None if self.dataset_scope else self._example_id)
        self._select_first_if_none()

    # ------------------------------------------------------------------ candidates
    def set_candidates(self, rows: Sequence[dict[str, Any]]) -> None:
        """List ``rows`` (candidate dicts with ``original``), keeping the current candidate if still there."""
        current = self.current_candidate_id()
        self.model.set_rows(rows)
        if current is None or not self.select_candidate(current):
            self._select_first_if_none()
        self._current_changed(self.table.currentIndex(), QModelIndex())

    def update_candidate(self, candidate: dict[str, Any]) -> None:
        """Show a changed candidate; if it left the filter, the row that took its place becomes current."""
        row = self.table.currentIndex().row()
        self.model.update_row(candidate)
        if not self.select_candidate(int(candidate["id"])) and self.proxy.rowCount():
            self._select_proxy_row(min(max(row, 0), self.proxy.rowCount() - 1))
        self._current_changed(self.table.currentIndex(), QModelIndex())

    def current_candidate(self) -> dict[str, Any] | None:
        index = self.table.currentIndex()
        return index.data(CandidatesTableModel.CandidateRole) if index.isValid() else None

    def current_candidate_id(self) -> int | None:
        cand = self.current_candidate()
        return None if cand is None else int(cand["id"])

    def select_candidate(self, candidate_id: int) -> bool:
        """Make ``candidate_id`` current if it is listed; return whether it is."""
        row = self.model.row_of(candidate_id)
        if row is None:
            return False
        index = self.proxy.mapFromSource(self.model.index(row, 0))
        if not index.isValid():
            return False
        self._select_proxy_row(index.row())
        return True

    def visible_candidates(self) -> list[dict[str, Any]]:
        """The listed candidates, in view order."""
        return [self.proxy.index(r, 0).data(CandidatesTableModel.CandidateRole) for r in range(self.proxy.rowCount())]

    def advance_from(self, candidate_id: int) -> None:
        """Make the candidate after ``candidate_id`` current, if it is still current and one follows."""
        row = self.table.currentIndex().row()
        if self.current_candidate_id() == candidate_id and 0 <= row < self.proxy.rowCount() - 1:
            self._select_proxy_row(row + 1)

    def _select_proxy_row(self, row: int) -> None:
        index = self.proxy.index(row, 0)
        self.table.selectionModel().setCurrentIndex(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
        self.table.scrollTo(index)

    def _select_first_if_none(self) -> None:
        if not self.table.currentIndex().isValid() and self.proxy.rowCount():
            self._select_proxy_row(0)
        elif not self.proxy.rowCount():
            self._current_changed(QModelIndex(), QModelIndex())

    def _current_changed(self, current: QModelIndex, previous: QModelIndex) -> None:
        cand = current.data(CandidatesTableModel.CandidateRole) if current.isValid() else None
        decidable = cand is not None and cand["status"] != "failed"
        for b in (self.accept_button, self.reject_button, self.edit_button):
            b.setEnabled(decidable)
        if cand is None:
            self.detail.clear_text("No candidate selected." if self.model.rowCount() else
                                   "No candidates yet: choose the LLM (LLM settings…) and press Generate.")
        else:
            self.detail.show_html(candidate_html(cand))
        self.verification.show_verdicts(cand, self.required_checks)
        self.candidateChanged.emit(cand)

    def _scope_changed(self) -> None:
        self.proxy.set_example(None if self.dataset_scope else self._example_id)
        self.table.setColumnHidden(CandidatesTableModel.EXAMPLE, not self.dataset_scope)
        self._select_first_if_none()
        self._current_changed(self.table.currentIndex(), QModelIndex())
        self.scopeChanged.emit()

    def _filter_changed(self) -> None:
        self.proxy.set_statuses(self.status_filter.currentData())
        self._select_first_if_none()
        self._current_changed(self.table.currentIndex(), QModelIndex())

    def _update_count(self) -> None:
        total = self.model.rowCount()
        counts: dict[str, int] = {}
        for cand in self.model.rows():
            counts[cand["status"]] = counts.get(cand["status"], 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        self.count_label.setText(f"{self.proxy.rowCount()} of {total}")
        self.count_label.setToolTip(f"{self.proxy.rowCount()} shown of {total} candidates of the dataset"
                                    + (f": {summary}" if summary else ""))

    # ------------------------------------------------------------------ editing
    def open_editor(self, candidate: dict[str, Any]) -> EditCandidateDialog:
        """Open the text editor for ``candidate`` (window-modal; the caller connects ``accepted``)."""
        dialog = EditCandidateDialog(candidate, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.finished.connect(lambda _: setattr(self, "edit_dialog", None))
        self.edit_dialog = dialog
        dialog.open()
        return dialog
