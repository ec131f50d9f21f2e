"""Runs counterbias generation, review decisions (undoable), triple edits and augmentation for the
:class:`~widgets.review_panel.ReviewPanel`.

Generation, the augmented dataset and the LLM connection test run as jobs; review decisions
and triple edits are quick single writes done on the GUI thread (a streamed import yields the
project's writer between its chunks, so they never wait behind it). Every decision is a
:class:`DecisionCommand` on :attr:`ReviewController.undo_stack` (Edit ▸ Undo / Redo), whose
undo calls :func:`engine.counterbias.review.restore`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QUndoCommand, QUndoStack

from app.controllers.base import PanelController
from app.jobs import Job, JobRunner
from app.session import Session
from engine.counterbias.augment import build_augmented_dataset
from engine.errors import CounterbiasError
from engine.llm.connection import send_test_chat
from engine.llm.base import Usage
from engine.store import DatasetInfo
from widgets.llm_dialog import FIELDS, LLMDialog, config_from_values, settings_from_values, usage_text
from widgets.review_panel import ReviewPanel
from widgets.triples_view import SentenceRow

if TYPE_CHECKING:
    from engine.counterbias.review import CandidateState
    from engine.llm.config import LLMConfig

class DecisionCommand(QUndoCommand):
    """One review decision, already applied when pushed; undo restores the state before it.

    Parameters
    ----------
    controller
        The review controller (it applies decisions and refreshes the view).
    candidate_id, status, text
        The decision (``text``: an edit).
    before
        The candidate's state before the decision (from ``set_decision``).
    """

    def __init__(self, controller: ReviewController, candidate_id: int, status: str, text: str | None,
                 before: CandidateState) -> None:
        verb = "Edit" if text is not None else {"accepted": "Accept", "rejected": "Reject"}.get(status, "Decide")
        super().__init__(f"{verb} candidate {candidate_id}")
        self.controller = controller
        self.candidate_id = candidate_id
        self.status = status
        self.text = text
        self.before = before
        self._applied = True  # pushed after the first application

    def redo(self) -> None:
        if self._applied:
            return
        from engine.counterbias.review import set_decision

        self.controller.run_write(set_decision, self.candidate_id, self.status, self.text)
        self._applied = True
        self.controller.candidate_changed(self.candidate_id)
        if self.text is not None:
            self.controller.rejudge(self.candidate_id)

    def undo(self) -> None:
        from engine.counterbias.review import restore

        self.controller.run_write(restore, self.candidate_id, self.before)
        self._applied = False
        self.controller.candidate_changed(self.candidate_id)
        if self.text is not None:
            self.controller.rejudge(self.candidate_id)


class ReviewController(PanelController):
    """Connects the review panel to generation, review, triple edits and augmentation."""

    panel: ReviewPanel

    def __init__(self, session: Session, jobs: JobRunner, panel: ReviewPanel) -> None:
        super().__init__(session, jobs, panel)
        self.last_usage: Usage | None = None
        self.undo_stack = QUndoStack(self)
        self.llm_dialog: LLMDialog | None = None
        self.last_test: Any = None
        #: Slots per batch of a generate job (each batch is stored, then listed while the job runs);
        #: ``None``: the engine's default (twice the LLM's concurrency, at least 4).
        self.chunk_size: int | None = None
        #: Least seconds between two reloads of the candidates list while a generate job runs.
        self.live_interval_s = 1.0
        self._live_job: Any = None
        self._last_live = 0.0
        jobs.progressed.connect(self._live_progress)
        #: Candidate id -> judge again when the running judge job ends (see :meth:`rejudge`).
        self._judging: dict[int, bool] = {}
        #: Re-run rewrite, reconstruction and judge for an example when its triples are edited.
        self.regenerate_on_edit = True
        panel.generateRequested.connect(self.generate)
        panel.augmentRequested.connect(self.build_augmented)
        panel.llmSettingsRequested.connect(self.open_llm_dialog)
        panel.corpusRequested.connect(self.open_corpus_dialog)
        panel.decisionRequested.connect(self.decide)
        panel.verification.verifyRequested.connect(self.verify)
        panel.triples.triplesEdited.connect(self.save_triples)
        panel.candidateChanged.connect(self.show_candidates_example)
        session.datasetChanged.connect(self.dataset_changed)
        session.exampleChanged.connect(self.example_selected)
        self._show_llm_summary()

    # ------------------------------------------------------------------ LLM settings
    def llm_values(self) -> dict[str, Any]:
        """The stored LLM settings (keys of :data:`widgets.llm_dialog.FIELDS`)."""
        return {key: self.session.settings.get(f"llm_{key}") for key in FIELDS}

    def set_llm_values(self, values: dict[str, Any]) -> None:
        """Store LLM settings (never a key: ``api_key_env`` is a variable *name*)."""
        for key in FIELDS:
            if key in values:
                self.session.settings.set(f"llm_{key}", values[key])
        self._show_llm_summary()

    def llm_config(self) -> LLMConfig:
        """The :class:`LLMConfig` of the stored settings (raises ``LLMConfigError``)."""
        return config_from_values(self.llm_values())

    def _show_llm_summary(self) -> None:
        values = self.llm_values()
        where = f" @ {values['base_url']}" if values["backend"] == "openai" and values["base_url"] else ""
        self.panel.set_llm_summary(f"LLM: {values['backend']}:{values['model']}{where} · "
                                   f"{values['samples']} sample(s), T={values['temperature']:g}")

    def open_llm_dialog(self) -> LLMDialog:
        """Open the LLM settings dialog (non-blocking); OK stores the values. Returns it (for tests)."""
        dialog = LLMDialog(self.llm_values(), self.panel)
        dialog.testRequested.connect(lambda config: self.test_connection(config, dialog))
        dialog.accepted.connect(lambda: self.set_llm_values(dialog.values()))
        dialog.finished.connect(lambda _: setattr(self, "llm_dialog", None))
        dialog.set_usage(self.last_usage, self._total_usage())
        self.llm_dialog = dialog
        dialog.open()
        return dialog

    def test_connection(self, config: LLMConfig, dialog: LLMDialog | None = None) -> Job:
        """Send one tiny chat with ``config`` as a job; the answer or named error goes to ``dialog``."""
        job = self.jobs.start(send_test_chat, config, title=f"Test LLM {config.backend}:{config.model}",
                              kind="llm-test", when_busy="cancel", report_errors=False)  # shown in the dialog

        def done(result: Any) -> None:
            self.last_test = result
            if dialog is not None:
                dialog.show_answer(result.text, result.model, result.usage)

        def failed(exc: BaseException, tb: str) -> None:
            self.last_test = exc
            if dialog is not None:
                dialog.show_failure(exc)

        job.on_finished(done)
        job.on_failed(failed)
        job.on_cancelled(lambda: dialog.set_busy(False) if dialog is not None else None)
        return job

    # ------------------------------------------------------------------ tokens
    def _total_usage(self) -> Usage:
        from engine.counterbias.review import token_usage

        project = self.session.project
        return token_usage(project) if project is not None else Usage()

    def update_tokens(self) -> None:
        total = self._total_usage()
        last = f"last run {usage_text(self.last_usage)} · " if self.last_usage is not None else ""
        self.panel.set_tokens(f"Tokens: {last}project total {total.total_tokens:,}")
        self.panel.tokens_label.setToolTip(f"Project total (generate + triples runs): {usage_text(total)}")
        if self.llm_dialog is not None:
            self.llm_dialog.set_usage(self.last_usage, total)

    # ------------------------------------------------------------------ dataset / example
    def dataset_changed(self, dataset: DatasetInfo | None) -> None:
        """A new dataset: its candidates, no undo history from the last one."""
        self.undo_stack.clear()
        self.reload_candidates()
        self.refresh_example()
        self.update_tokens()
        self.refresh_core_sources()

    def refresh_core_sources(self) -> None:
        """Offer the project's corpora and members for CORE generation."""
        from engine.models.store import list_models
        from engine.retrieval.corpus import list_corpora

        project = self.session.project
        if project is None:
            self.panel.set_core_sources([], [])
            return
        self.panel.set_core_sources([c.name for c in list_corpora(project)], [m.name for m in list_models(project)])

    def open_corpus_dialog(self) -> Job | None:
        """Ask for a file, corpus name and labelling member, then prepare the corpus as one job."""
        from engine.models.store import list_models
        from engine.retrieval.corpus import list_corpora
        from widgets.corpus_dialog import CorpusDialog

        project = self.session.project
        if project is None:
            return None
        dialog = CorpusDialog([c.name for c in list_corpora(project)], [m.name for m in list_models(project)],
                              str(self.session.settings.get("last_dir") or ""), self.panel)
        if dialog.exec() != CorpusDialog.DialogCode.Accepted:
            return None
        return self.prepare_corpus(dialog.request())

    def prepare_corpus(self, request: Any) -> Job | None:
        """Run :func:`engine.retrieval.prepare.prepare_corpus` for a :class:`~widgets.corpus_dialog.CorpusRequest`."""
        from engine.retrieval.prepare import prepare_corpus

        project = self.session.project
        if project is None:
            return None
        job = self.jobs.start(prepare_corpus, project, request.name, path=request.path, member=request.member,
                              index_kind=request.kind, kind="corpus",
                              title=f"Corpus {request.name!r}: "
                                    f"{'import, ' if request.path else ''}label with {request.member}, index")
        self.panel.set_busy(True)
        self.panel.set_message(f"Preparing corpus {request.name!r}…")

        def done(result: Any) -> None:
            self.panel.set_busy(False)
            self.refresh_core_sources()
            self.panel.select_corpus(request.name, request.member)
            self.panel.set_message(f"Ready for CORE: {result.summary()}.")

        job.on_finished(done)
        job.on_failed(lambda exc, tb: (self.panel.set_busy(False),
                                       self.panel.set_message(f"Corpus preparation failed: {exc}")))
        job.on_cancelled(lambda: (self.panel.set_busy(False), self.refresh_core_sources(), self.panel.set_message(
            "Cancelled; what was imported, labelled and embedded is kept, and Corpus… resumes it.")))
        return job

    def example_selected(self, row: dict | None = None) -> None:
        """The session's example changed: show its triples if the panel is visible."""
        if self.is_shown():
            self.refresh_example()

    def show_candidates_example(self, cand: dict | None) -> None:
        """In whole-dataset scope, a candidate of another example makes that example the current one, so that
        its triples (left) and its original (the detail dock) are the ones beside the candidate."""
        project = self.session.project
        if cand is None or project is None or not self.panel.dataset_scope:
            return
        example = self.session.example
        if example is not None and int(example["id"]) == int(cand["example_id"]):
            return
        rows = project.examples([int(cand["example_id"])])
        if rows:
            self.session.set_example(rows[0])

    def panel_shown(self) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Re-read the shown example's triples and the candidates (the tab became visible)."""
        self.reload_candidates()
        self.refresh_example()
        self.update_tokens()

    def refresh_example(self) -> None:
        """Show the selected example's sentences, triples and categories."""
        from engine.counterbias.review import example_triples

        project, dataset, example = self.session.project, self.session.dataset, self.session.example
        if project is None or dataset is None or example is None:
            self.panel.show_example(None, [])
            return
        try:
            shown = example_triples(project, dataset.id, int(example["id"]))
        except CounterbiasError as exc:
            self.panel.show_example(None, [], message=exc.message)
            return
        rows = [SentenceRow(s.field, s.index, s.sentence, [list(t) for t in s.triples], list(s.categories),
                            list(s.edited)) for s in shown.sentences]
        message = ""
        if not shown.principal and not shown.spurious:
            message = "No principal/spurious words for this example yet: explain it in the Word importance tab."
        elif not shown.has_triples and self.session.settings.get("llm_mode") == "edit" \
                and not self.session.settings.get("llm_edit_triples"):
            message = ("No triples: the edit mode chooses the sentences to edit by their principal words. LLM "
                       "settings… › Also edit sentences holding a principal triple (or the Reconstruct mode) "
                       "extracts them when you generate.")
        elif not shown.has_triples:
            message = "No triples yet: Generate extracts them first."
        self.panel.show_example(example, rows if shown.has_triples else [], multi_field=len(dataset.text_fields) > 1,
                                message=message)

    def reload_candidates(self) -> None:
        """List the shown dataset's candidates (with their originals, for the diffs)."""
        from engine.counterbias.review import candidate_rows

        project, dataset = self.session.project, self.session.dataset
        if project is None or dataset is None:
            self.panel.set_candidates([])
            return
        rows = candidate_rows(project, dataset_id=dataset.id)
        self.panel.set_candidates(self._with_originals(rows))

    def _with_originals(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows with their example's fields (``original``), its label and the candidate's edit distance."""
        from engine.counterbias.review import edit_distance

        project = self.session.project
        examples = {int(e["id"]): e for e in project.examples(sorted({int(r["example_id"]) for r in rows}))}
        out = []
        for r in rows:
            ex = examples.get(int(r["example_id"]), {})
            original = {f: ex.get(f) for f in ("text", "premise", "hypothesis")}
            out.append({**r, "original": original, "original_label": ex.get("label"),
                        "edit_distance": edit_distance(r, original)})
        return out

    def candidate_changed(self, candidate_id: int) -> None:
        """Re-read one candidate after a decision (or its undo) and show it."""
        from engine.counterbias.review import load_candidate

        try:
            cand = load_candidate(self.session.project, candidate_id)
        except CounterbiasError:
            self.reload_candidates()
            return
        self.panel.update_candidate(self._with_originals([cand])[0])

    # ------------------------------------------------------------------ decisions
    def run_write(self, fn: Any, *args: Any) -> Any:
        """Call ``fn(project, *args)``; a named error is shown, not raised (returns ``None``)."""
        try:
            return fn(self.session.project, *args)
        except CounterbiasError as exc:
            self.show_error(exc)
            return None

    def decide(self, decision: str) -> None:
        """``"accepted"`` / ``"rejected"`` the current candidate, or ``"edit"`` its text."""
        cand = self.panel.current_candidate()
        if cand is None or self.session.project is None:
            return
        if decision == "edit":
            self.edit_current()
            return
        if cand["status"] == "failed":
            self.status("A failed candidate has nothing to decide on: Generate again.")
            return
        self.apply_decision(int(cand["id"]), decision)

    def apply_decision(self, candidate_id: int, status: str, text: str | None = None) -> bool:
        """Record a decision and push it on the undo stack; return whether it was recorded."""
        from engine.counterbias.review import set_decision

        before = self.run_write(set_decision, candidate_id, status, text)
        if before is None:
            return False
        self.undo_stack.push(DecisionCommand(self, candidate_id, status, text, before))
        self.candidate_changed(candidate_id)
        self.panel.table.setFocus()
        if text is not None:
            self.rejudge(candidate_id)
        return True

    def rejudge(self, candidate_id: int) -> Job | None:
        """Judge a candidate's (edited) text again with the members that judged it, as a job.

        One judge job per candidate at a time: a request while one runs (an undo right after an
        edit) makes it run once more when it ends, so the stored scores follow the newest text.
        """
        from engine.counterbias.review import load_candidate
        from engine.counterbias.verify import judge_candidates

        if candidate_id in self._judging:
            self._judging[candidate_id] = True
            return None
        project = self.session.project
        try:
            cand = load_candidate(project, candidate_id)
        except CounterbiasError:
            return None
        # the members that judged it; none: the string checks alone run again on the new text
        members = list(((cand.get("scores") or {}).get("judge") or {}).get("members") or {})
        self._judging[candidate_id] = False
        job = self.jobs.start(judge_candidates, project, [candidate_id], members,
                              title=f"Judge edited candidate {candidate_id}")

        def ended(*_args: Any) -> None:
            again = self._judging.pop(candidate_id, False)
            self.candidate_changed(candidate_id)
            if again:
                self.rejudge(candidate_id)

        job.on_finished(ended)
        job.on_failed(ended)
        job.on_cancelled(ended)
        return job

    def verify(self, kind: str = "checks") -> Job | None:
        """Run the checks again (``"checks"``) or ask the LLM judge (``"llm"``) on the listed candidates, as a job."""
        from engine.counterbias.verify import judge_candidates
        from engine.verification.llm_judge import llm_judge_candidates

        project = self.session.project
        ids = [int(c["id"]) for c in self.panel.visible_candidates() if c["status"] != "failed"]
        if project is None or not ids:
            self.status("No candidates listed to verify.")
            return None
        if kind == "llm":
            try:
                config = self.llm_config()
            except CounterbiasError as exc:
                self.show_error(exc)
                return None
            job = self.jobs.start(llm_judge_candidates, project, ids, config,
                                  title=f"LLM judge on {len(ids):,} candidates")
        else:
            job = self.jobs.start(judge_candidates, project, ids, self._judge_members(),
                                  title=f"Verify {len(ids):,} candidates")
        self.panel.verification.set_busy(True)

        def ended(*_args: Any) -> None:
            self.panel.verification.set_busy(False)
            self.reload_candidates()

        def done(result: Any) -> None:
            ended()
            if kind == "llm":
                self.panel.set_message(f"LLM judge: {result.agree} of {result.judged} candidates read as their target"
                                       + (f"; {len(result.unparsed)} answers unusable" if result.unparsed else "")
                                       + (f"; {len(result.failed)} requests failed" if result.failed else "") + ".")

        job.on_finished(done)
        job.on_failed(lambda exc, tb: (ended(), self.panel.set_message(f"Verification failed: {exc}")))
        job.on_cancelled(ended)
        return job

    def _judge_members(self) -> list[str]:
        """The members that judged the listed candidates, then the dataset's default judges (the members of its
        newest vote and those that only judge: a member stored after the candidates were made — one still training
        then — judges them too), as long as they are stored."""
        from engine.attribution.explainers import default_judges
        from engine.models.store import list_models

        judged: list[str] = []
        for cand in self.panel.visible_candidates():
            judged = list(((cand.get("scores") or {}).get("judge") or {}).get("members") or {})
            if judged:
                break
        dataset = self.session.dataset
        defaults = default_judges(self.session.project, dataset.id) if dataset else []
        stored = {m.name for m in list_models(self.session.project)}
        return [m for m in dict.fromkeys([*judged, *defaults]) if m in stored]

    def edit_current(self) -> Any:
        """Open the editor on the current candidate; saving accepts it with the new text."""
        cand = self.panel.current_candidate()
        if cand is None:
            return None
        if cand["status"] == "failed":
            self.status("A failed candidate has no text to edit: Generate again.")
            return None
        dialog = self.panel.open_editor(cand)
        cid = int(cand["id"])
        dialog.accepted.connect(lambda: self.apply_decision(cid, "accepted", dialog.text()))
        return dialog

    # ------------------------------------------------------------------ triples
    def save_triples(self, field: str, sentence_index: int, triples: list) -> None:
        """Store an edited sentence's triples; drops the example's undecided candidates."""
        from engine.counterbias.triple_store import replace_triples

        example_id = self.session.example_id
        if example_id is None:
            return
        edit = self.run_write(replace_triples, example_id, field, sentence_index, triples)
        if edit is None:
            self.refresh_example()
            return
        if edit.discarded:
            # the undo history may name deleted candidates
            self.undo_stack.clear()
        self.reload_candidates()
        self.refresh_example()
        dropped = f"; {len(edit.discarded)} undecided candidate(s) replaced" if edit.discarded else ""
        self.panel.set_message(f"Saved {edit.stored} triple(s) of sentence {sentence_index + 1} ({field}){dropped}.")
        if self.regenerate_on_edit and edit.stored:
            # editing re-runs what follows: rewrite, reconstruction and judge for this example
            self.generate(scope="example")

    # ------------------------------------------------------------------ jobs
    def generate(self, scope: str = "selection") -> Job | None:
        """Run :func:`~engine.generation.generate_counterbias` on the selection or all, as a job."""
        from engine.generation import generate_counterbias

        dataset, project = self.session.dataset, self.session.project
        if dataset is None or project is None:
            return None
        ids = None
        if scope == "example":
            if self.session.example_id is None:
                return None
            ids = [self.session.example_id]
        elif scope == "selection":
            ids = self.session.selected_or_current()
            if not ids:
                self.status("Select rows in the Examples tab first.")
                return None
        values = self.llm_values()
        try:
            config = self.llm_config()
            settings = settings_from_values(values)
        except CounterbiasError as exc:
            self.show_error(exc)
            return None
        count = len(ids) if ids is not None else dataset.row_count
        method = self.panel.generation_method()
        if method in ("core", "llm"):
            return self._generate_guided(method, project, dataset, ids, count, config)
        self.panel.set_busy(True)
        self.panel.set_message(f"Generating for {count:,} example(s) with {config.backend}:{config.model}…")
        job = self.jobs.start(generate_counterbias, project, dataset.id, ids, config, settings=settings,
                              chunk_size=self.chunk_size, kind="generate",
                              title=f"Counterbias for {count:,} examples of {dataset.name}")
        self._live_job, self._last_live = job, time.monotonic()

        def done(result: Any) -> None:
            self.last_usage = result.usage
            self._job_ended()
            failed = f", {len(result.failed)} failed (select one to see why)" if result.failed else ""
            skipped = f", {result.skipped} already made" if result.skipped else ""
            training = (f" Judged by {', '.join(result.judges) or 'no member'}: {', '.join(result.judges_training)} "
                        "was still training — press Run checks again once it is trained to add its verdict."
                        if result.judges_training else "")
            self.panel.set_message(f"{len(result.created)} candidate(s) made{failed}{skipped} in "
                                   f"{result.seconds:.1f} s; {usage_text(result.usage)}.{training}")
            self.panel.table.setFocus()

        job.on_finished(done)
        job.on_failed(lambda exc, tb: (self._job_ended(), self.panel.set_message(f"Generation failed: {exc}")))
        job.on_cancelled(lambda: (self._job_ended(), self.panel.set_message(
            "Cancelled; finished candidates are kept and Generate resumes.")))
        return job

    def _generate_guided(self, method: str, project: Any, dataset: DatasetInfo, ids: list[int] | None, count: int,
                         config: LLMConfig) -> Job | None:
        """CORE (retrieval for each example's sentences, then the guided edit) or the LLM-only edit, as a job."""
        from engine.counterbias.core import RetrievalSettings, core_edit
        from engine.counterbias.guided import GuidedSettings, generate_guided
        from engine.retrieval.errors import RetrievalError

        judge = self._judge_members()
        if method == "core":
            corpus, member = self.panel.core_choice()
            if not corpus or not member:
                self.show_error(RetrievalError(
                    "CORE needs a corpus labelled by a member and indexed.",
                    "Press Corpus… beside the corpus box: it adds a text collection, labels it with a member and "
                    "indexes it (the CLI: 'counterbias corpus PROJECT NAME FILE --label-with MEMBER', then "
                    "'counterbias index PROJECT NAME')."))
                return None
            job = self.jobs.start(core_edit, project, dataset.id, ids, config,
                                  RetrievalSettings(corpus=corpus, model=member), judge=judge, kind="generate",
                                  title=f"CORE for {count:,} examples of {dataset.name} ({corpus})")
        else:
            job = self.jobs.start(generate_guided, project, dataset.id, ids, config,
                                  settings=GuidedSettings(method="llm"), judge=judge, kind="generate",
                                  title=f"LLM-only edits for {count:,} examples of {dataset.name}")
        self.panel.set_busy(True)
        self.panel.set_message(f"{'CORE' if method == 'core' else 'LLM-only'} edits for {count:,} example(s) with "
                               f"{config.backend}:{config.model}…")
        self._live_job, self._last_live = job, time.monotonic()

        def done(result: Any) -> None:
            self._job_ended()
            summary = result.summary()
            extra = (f"; {summary['guided']} guided by retrieved excerpts, {summary['unguided']} without"
                     if method == "core" else "")
            self.panel.set_message(f"{summary['created']} candidate(s) made, {summary['failed']} failed, "
                                   f"{summary['skipped']} already made{extra}.")

        def failed(exc: BaseException, tb: str) -> None:
            self._job_ended()
            self.panel.set_message(f"Generation failed: {exc}")

        job.on_finished(done)
        job.on_failed(failed)
        job.on_cancelled(lambda: (self._job_ended(), self.panel.set_message(
            "Cancelled; retrieved excerpts and finished candidates are kept, and Generate resumes.")))
        return job

    def _job_ended(self) -> None:
        self._live_job = None
        self.panel.set_busy(False)
        self.refresh()

    def _live_progress(self, job: Any, fraction: float, message: str) -> None:
        """While a generate job runs, list the candidates its finished batches stored."""
        if job is not self._live_job or time.monotonic() - self._last_live < self.live_interval_s:
            return
        self._last_live = time.monotonic()
        self.reload_candidates()

    def build_augmented(self) -> Job | None:
        """Build the augmented dataset (originals + accepted candidates) as a job; refresh the datasets."""
        dataset = self.session.dataset
        if dataset is None:
            return None
        self.panel.set_busy(True)
        job = self.jobs.start(build_augmented_dataset, self.session.project, dataset.id,
                              title=f"Build augmented dataset of {dataset.name}", kind="augment")

        def done(result: Any) -> None:
            self.panel.set_busy(False)
            text = (f"Created dataset {result.dataset.name!r}: {result.original:,} originals + "
                    f"{result.added:,} accepted candidates.")
            self.panel.set_message(text)
            self.status(text, 8000)
            # the new version is listed, the reviewed one stays shown
            self.session.refresh_datasets()

        job.on_finished(done)
        job.on_failed(lambda exc, tb: self.panel.set_busy(False))
        job.on_cancelled(lambda: self.panel.set_busy(False))
        return job
