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
import re
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
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine.verification.checks import residual_of
from widgets.diff_view import DiffView, diff_html
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


def _breaks(escaped: str) -> str:
    """Escaped text with the data's ``<br />`` tags (IMDb) drawn as line breaks."""
    return re.sub(r"&lt;br\s*/?&gt;", "<br>", escaped, flags=re.IGNORECASE)


def _default_required() -> list[str]:
    from engine.counterbias.verify import CandidateFilter

    return CandidateFilter().required()


def _yes_no(value: Any) -> str:
    return "—" if value is None else ("yes" if value else "no")


def _edit_notes(edit: dict[str, Any]) -> str:
    """What an edit-mode sentence record says beyond its answer: the opinion words the LLM marked, the spurious
    words it released, the phrase swap that made the edit (escaped HTML, empty when none)."""
    esc = html.escape
    notes = []
    if edit.get("opinion"):
        notes.append("opinion words: " + ", ".join(f"“{esc(o)}”" for o in edit["opinion"]))
    if edit.get("held") and edit.get("hold") == "kept":
        notes.append("spurious opinion words kept, opinion turned around them: " + esc(", ".join(edit["held"])))
    if edit.get("released"):
        why = f" (a try keeping them: {edit['hold']})" if edit.get("held") and edit.get("hold") else ""
        notes.append("released spurious words: " + esc(", ".join(edit["released"]) + why))
    if edit.get("swapped"):
        notes.append("phrase swap: " + "; ".join(f"“{esc(a)}” → “{esc(b)}”" for a, b in edit["swapped"].items()))
    return f"<br><span style='color:#555'>{' · '.join(notes)}</span>" if notes else ""


def candidate_html(candidate: dict[str, Any]) -> str:
    """The detail of one candidate: diff, judge scores, kept words, steps, or its error (escaped)."""
    esc = html.escape
    meta = candidate.get("meta") or {}
    scores = candidate.get("scores") or {}
    original = candidate.get("original") or {}
    status = candidate["status"]
    parts = [f"<p><b>Candidate {int(candidate['id'])}</b> of example {int(candidate['example_id'])}: "
             f"{esc(str(meta.get('original_label') or candidate.get('original_label') or '?'))} → "
             f"<b>{esc(candidate['target_label'])}</b> · <i>{esc(status)}</i>"
             f"{' · sample ' + str(meta.get('sample')) if meta.get('sample') else ''}</p>"]
    if status == "failed":
        error = meta.get("error") or {}
        parts.append(
            "<table cellpadding='4' style='background-color:#fde0e0; border:1px solid #a40000'><tr><td>"
            f"<b>Failed at step “{esc(str(error.get('step', '?')))}”</b><br>{esc(str(error.get('message', '')))}"
            + (f"<br><b>What to do:</b> {esc(str(error['hint']))}" if error.get("hint") else "")
            + f"<br>{'This may pass on a retry: Generate again.' if error.get('retriable') else 'A retry will not help.'}"
            "</td></tr></table>")
    generated = meta.get("generated") or {}
    for field in generated or {edited_field(candidate): None}:
        new = candidate.get(field)
        if new is None:
            continue
        left = (residual_of(meta, scores) or []) if field == "text" else []
        label = str(meta.get("original_label") or "the original label")
        parts.append(f"<p style='color:#555; margin-bottom:0'><b>{esc(field)}</b></p>"
                     f"<p style='font-size:12pt; line-height:140%; margin-top:2px'>"
                     f"{diff_html(original.get(field) or '', new, left, f'the LLM still reads this as {label}')}</p>")
        if left:  # listed too: an edited sentence spans several runs of the diff and is not underlined
            quoted = "<br>".join(f"• “{esc(s)}”" for s in left[:4]) + ("<br>…" if len(left) > 4 else "")
            parts.append(f"<p style='color:#8a4b00'>Still read as {esc(label)} by the LLM (each sentence alone; "
                         f"underlined where unchanged):<br>{quoted}</p>")
        if generated.get(field) not in (None, new):
            parts.append(f"<p style='color:#555'>Edited by you; generated text was: {esc(generated[field])}</p>")
    judge = scores.get("judge") or {}
    if judge:
        rows = "".join(
            f"<tr><td>{esc(name)}</td><td>{esc(str(m.get('label')))}</td>"
            f"<td align='right'>{float(m.get('target_prob', 0)):.2f}</td></tr>"
            for name, m in (judge.get("members") or {}).items())
        parts.append(
            "<p><b>Ensemble judge</b>: predicts <b>" + esc(str(judge.get("predicted"))) + "</b> · flipped to target: "
            f"<b>{_yes_no(judge.get('flipped'))}</b> · left original label: {_yes_no(judge.get('left_original'))}"
            f" · mean P(target) {float(judge.get('target_prob', 0)):.2f}</p>"
            "<table cellspacing='0' cellpadding='3' border='1' style='border-color:#bbb'>"
            "<tr><th align='left'>member</th><th align='left'>label</th><th>P(target)</th></tr>" + rows + "</table>")
    elif status != "failed":
        parts.append("<p style='color:#555'>Not judged (no ensemble members, or judging was skipped).</p>")
    keep = meta.get("keep_words") or []
    if "spurious_kept" in scores:
        missing = scores.get("missing_spurious") or []
        released = scores.get("released_spurious") or []
        kept = (("all kept" if not released else "the others kept; released as opinion words: "
                 + esc(", ".join(released))) if scores["spurious_kept"]
                else "<span style='color:#a40000'>missing: " + esc(", ".join(missing)) + "</span>")
        parts.append(f"<p><b>Spurious words</b> ({esc(', '.join(keep)) or 'none'}): {kept}</p>")
    elif keep:
        parts.append(f"<p><b>Spurious words to keep</b>: {esc(', '.join(keep))}</p>")
    if "passes" in scores:
        parts.append(f"<p><b>Passes the filter</b>: {_yes_no(scores['passes'])}</p>")
    distance = candidate.get("edit_distance")
    if distance is None and status != "failed":
        distance = (meta.get("edit_distance") or {}).get(edited_field(candidate))
    if distance is not None:
        parts.append(f"<p><b>Edit distance</b> to the original: {float(distance):.2f} "
                     "<span style='color:#555'>(share of words changed; human revisions ≈ 0.2)</span></p>")
    guide = meta.get("guide") or {}
    if guide.get("keywords") or guide.get("excerpts"):
        parts.append("<p style='margin-bottom:0'><b>Retrieved (CORE)</b> · keywords offered: "
                     + esc(", ".join(guide.get("keywords") or [])) + "</p><ul style='margin-top:2px'>"
                     + "".join(f"<li><i>{esc(e)}</i></li>" for e in guide.get("excerpts") or []) + "</ul>")
    elif meta.get("mode") == "llm":
        parts.append("<p style='color:#555'>LLM-only edit: no retrieval, no triples (the baseline).</p>")
    repairs = meta.get("repairs") or {}
    if repairs:
        named = {"edit": "sentence repaired", "fresh": "sentence tried afresh", "flip": "half flip repaired",
                 "strong": "stronger prompt", "swap": "opinion phrases swapped",
                 "release": "spurious opinion words released", "remove": "sentence removed", "rewrite": "rewrite repaired",
                 "reconstruct": "reconstruction repaired"}
        parts.append("<p><b>Repairs</b>: " + esc(", ".join(f"{named.get(k, k)} ×{n}" for k, n in repairs.items()))
                     + "</p>")
    steps = []
    for plan in meta.get("fields") or []:
        triples = plan.get("triples") or []
        cats = plan.get("categories") or []
        rewritten = iter(plan.get("rewritten") or [])
        for triple, cat in zip(triples, cats, strict=False):
            if cat == "principal":
                new = next(rewritten, None)
                arrow = f" → {esc(' | '.join(new))}" if new else ""
                steps.append(f"<li>{esc(' | '.join(triple))}{arrow}</li>")
        for e in plan.get("edits") or []:
            new = e.get("new")
            problems = ", ".join(e.get("problems") or [])
            if new:  # used; problems are what its repair fixed ("unmoved": still read as the original label)
                shown = f" → {esc(new)}" + (f" <span style='color:#777'>(after: {esc(problems)})</span>"
                                            if problems else "")
            elif e.get("removed"):
                shown = (" (removed: it still read as the original label after every try, and held no word to "
                         "keep)")
            elif "unmoved, dropped" in (e.get("problems") or []):
                shown = " (edit dropped: it still read as the original label after every try)"
            else:
                shown = f" (not usable: {esc(problems)})"
            steps.append(f"<li>sentence {int(e.get('index', 0)) + 1}: {esc(str(e.get('sentence', '')))}{shown}"
                         f"{_edit_notes(e)}</li>")
        if plan.get("plain"):
            steps.append("<li>left as written: sentence " + ", ".join(str(int(i) + 1) for i in plan["plain"])
                         + " <span style='color:#555'>(a principal word, but read as no label and no opinion word "
                         "marked)</span></li>")
        for a, b in plan.get("gender_swaps") or []:
            steps.append(f"<li>gender swap: {esc(a)} → {esc(b)}</li>")
        if plan.get("fallback"):
            steps.append("<li><i>no principal triple: every non-spurious triple was rewritten</i></li>")
    if steps:
        parts.append("<p style='margin-bottom:0'><b>Rewritten facts</b></p><ul style='margin-top:2px'>"
                     + "".join(steps) + "</ul>")
    return "".join(parts)


#: Generation methods offered: (key, label).
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
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Candidates of"))
        controls.addWidget(self.scope)
        controls.addWidget(self.status_filter)
        controls.addWidget(self.count_label, 1)
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
        for b in (self.accept_button, self.reject_button, self.edit_button):
            decide.addWidget(b)
        ul.addLayout(decide)
        self.verification = VerificationView(self)
        #: Checks the accept rule requires (bold in the verification panel).
        self.required_checks: list[str] = _default_required()
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
            body = "<br>".join(f"<b>{html.escape(f)}</b>: {_breaks(html.escape(str(example[f])))}" for f in fields
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
