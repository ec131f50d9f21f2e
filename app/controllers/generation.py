"""Counterbias generation for the Counterbias tab: generate (CoBA, CORE, LLM-only), verify, triples, augment.

Generation, verification and the augmented dataset run as jobs; a triple edit is a quick single
write on the GUI thread, after which the example is generated again. The candidates list belongs
to the decisions controller: this one asks for it to be read again with :attr:`candidatesChanged`
and says when a generation ended with :attr:`generationEnded`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal

from app.controllers.base import PanelController
from app.jobs import Job, JobRunner
from app.session import Session
from engine.counterbias.augment import build_augmented_dataset
from engine.counterbias.verify import judge_members
from engine.errors import CounterbiasError
from engine.store import DatasetInfo
from widgets.llm_dialog import FIELDS, config_from_values, settings_from_values, usage_text
from widgets.review_panel import ReviewPanel
from widgets.triples_view import SentenceRow
from widgets.wording import count_of

if TYPE_CHECKING:
    from engine.llm.config import LLMConfig

__all__ = ["GenerationController"]


class GenerationController(PanelController):
    """Runs generation, verification and augmentation, and shows and stores the example's triples."""

    panel: ReviewPanel

    candidatesChanged = Signal(bool)
    """``candidatesChanged(discarded)``: list the candidates again; ``discarded``: some were deleted (an undo
    history naming them is stale)."""

    generationEnded = Signal(object)
    """``generationEnded(usage)``: a generation job ended (the :class:`~engine.llm.base.Usage` of a finished CoBA
    run, else ``None``): show the candidates, the example and the tokens again."""

    def __init__(self, session: Session, jobs: JobRunner, panel: ReviewPanel) -> None:
        super().__init__(session, jobs, panel)
        #: Slots per batch of a generate job (each batch is stored, then listed while the job runs);
        #: ``None``: the engine's default (twice the LLM's concurrency, at least 4).
        self.chunk_size: int | None = None
        #: Least seconds between two reloads of the candidates list while a generate job runs.
        self.live_interval_s = 1.0
        self._live_job: Any = None
        self._last_live = 0.0
        #: Re-run rewrite, reconstruction and judge for an example when its triples are edited.
        self.regenerate_on_edit = True
        jobs.progressed.connect(self._live_progress)
        panel.generateRequested.connect(self.generate)
        panel.augmentRequested.connect(self.build_augmented)
        panel.verification.verifyRequested.connect(self.verify)
        panel.triples.triplesEdited.connect(self.save_triples)

    def _llm(self) -> tuple[dict[str, Any], LLMConfig]:
        """The stored LLM settings and their config (raises ``LLMConfigError``)."""
        values = {key: self.session.settings.get(f"llm_{key}") for key in FIELDS}
        return values, config_from_values(values)

    # ------------------------------------------------------------------ triples
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

    def save_triples(self, field: str, sentence_index: int, triples: list) -> None:
        """Store an edited sentence's triples; drops the example's undecided candidates."""
        from engine.counterbias.triple_store import replace_triples

        example_id = self.session.example_id
        if example_id is None:
            return
        try:
            edit = replace_triples(self.session.project, example_id, field, sentence_index, triples)
        except CounterbiasError as exc:
            self.show_error(exc)
            self.refresh_example()
            return
        self.candidatesChanged.emit(bool(edit.discarded))
        self.refresh_example()
        dropped = f"; {len(edit.discarded)} undecided candidate(s) replaced" if edit.discarded else ""
        self.panel.set_message(f"Saved {edit.stored} triple(s) of sentence {sentence_index + 1} ({field}){dropped}.")
        if self.regenerate_on_edit and edit.stored:
            # editing re-runs what follows: rewrite, reconstruction and judge for this example
            self.generate(scope="example")

    # ------------------------------------------------------------------ generation
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
        try:
            values, config = self._llm()
            settings = settings_from_values(values)
        except CounterbiasError as exc:
            self.show_error(exc)
            return None
        count = len(ids) if ids is not None else dataset.row_count
        method = self.panel.generation_method()
        if method in ("core", "llm"):
            return self._generate_guided(method, project, dataset, ids, count, config)
        self.panel.set_message(f"Generating for {count:,} example(s) with {config.backend}:{config.model}…")

        def done(result: Any) -> None:
            self._ended(result.usage)
            failed = f", {len(result.failed)} failed (select one to see why)" if result.failed else ""
            skipped = f", {result.skipped} already made" if result.skipped else ""
            training = (f" Judged by {', '.join(result.judges) or 'no member'}: {', '.join(result.judges_training)} "
                        "was still training — press Run checks again once it is trained to add its verdict."
                        if result.judges_training else "")
            self.panel.set_message(f"{len(result.created)} candidate(s) made{failed}{skipped} in "
                                   f"{result.seconds:.1f} s; {usage_text(result.usage)}.{training}")
            self.panel.table.setFocus()

        return self._live(self.run_job(
            generate_counterbias, project, dataset.id, ids, config, settings=settings, chunk_size=self.chunk_size,
            kind="generate", title=f"Counterbias for {count_of(count, 'example')} of {dataset.name}", done=done,
            failed=self._generation_failed,
            cancelled=self._generation_cancelled("Cancelled; finished candidates are kept and Generate resumes.")))

    def _generate_guided(self, method: str, project: Any, dataset: DatasetInfo, ids: list[int] | None, count: int,
                         config: LLMConfig) -> Job | None:
        """CORE (retrieval for each example's sentences, then the guided edit) or the LLM-only edit, as a job."""
        from engine.counterbias.retrieve_edit import RetrievalSettings, core_edit
        from engine.counterbias.guided import GuidedSettings, generate_guided
        from engine.retrieval.errors import RetrievalError

        judge = self._judge_members()

        def done(result: Any) -> None:
            self._ended(None)
            summary = result.summary()
            extra = (f"; {summary['guided']} guided by retrieved excerpts, {summary['unguided']} without"
                     if method == "core" else "")
            self.panel.set_message(f"{summary['created']} candidate(s) made, {summary['failed']} failed, "
                                   f"{summary['skipped']} already made{extra}.")

        ends: dict[str, Any] = dict(done=done, failed=self._generation_failed, cancelled=self._generation_cancelled(
            "Cancelled; retrieved excerpts and finished candidates are kept, and Generate resumes."))
        if method == "core":
            corpus, member = self.panel.core_choice()
            if not corpus or not member:
                self.show_error(RetrievalError(
                    "CORE needs a corpus labelled by a member and indexed.",
                    "Press Corpus… beside the corpus box: it adds a text collection, labels it with a member and "
                    "indexes it (the CLI: 'counterbias corpus PROJECT NAME FILE --label-with MEMBER', then "
                    "'counterbias index PROJECT NAME')."))
                return None
            job = self.run_job(core_edit, project, dataset.id, ids, config, RetrievalSettings(corpus=corpus, model=member),
                               judge=judge, kind="generate", **ends,
                               title=f"CORE for {count_of(count, 'example')} of {dataset.name} ({corpus})")
        else:
            job = self.run_job(generate_guided, project, dataset.id, ids, config, settings=GuidedSettings(method="llm"),
                               judge=judge, kind="generate", **ends,
                               title=f"LLM-only edits for {count_of(count, 'example')} of {dataset.name}")
        self.panel.set_message(f"{'CORE' if method == 'core' else 'LLM-only'} edits for {count:,} example(s) with "
                               f"{config.backend}:{config.model}…")
        return self._live(job)

    def _live(self, job: Job) -> Job:
        """List the candidates ``job`` stores while it runs (see :meth:`_live_progress`)."""
        self._live_job, self._last_live = job, time.monotonic()
        return job

    def _ended(self, usage: Any) -> None:
        self._live_job = None
        self.generationEnded.emit(usage)

    def _generation_failed(self, exc: BaseException, tb: str) -> None:
        self._ended(None)
        self.panel.set_message(f"Generation failed: {exc}")

    def _generation_cancelled(self, message: str) -> Any:
        return lambda: (self._ended(None), self.panel.set_message(message))

    def _live_progress(self, job: Any, fraction: float, message: str) -> None:
        """While a generate job runs, list the candidates its finished batches stored."""
        if job is not self._live_job or time.monotonic() - self._last_live < self.live_interval_s:
            return
        self._last_live = time.monotonic()
        self.candidatesChanged.emit(False)

    # ------------------------------------------------------------------ verification
    def verify(self, kind: str = "checks") -> Job | None:
        """Run the checks again (``"checks"``) or ask the LLM judge (``"llm"``) on the listed candidates, as a job."""
        from engine.counterbias.verify import judge_candidates
        from engine.verification.llm_judge import llm_judge_candidates

        project = self.session.project
        ids = [int(c["id"]) for c in self.panel.visible_candidates() if c["status"] != "failed"]
        if project is None or not ids:
            self.status("No candidates listed to verify.")
            return None

        def done(result: Any) -> None:
            self.candidatesChanged.emit(False)
            if kind == "llm":
                self.panel.set_message(f"LLM judge: {result.agree} of {result.judged} candidates read as their target"
                                       + (f"; {len(result.unparsed)} answers unusable" if result.unparsed else "")
                                       + (f"; {len(result.failed)} requests failed" if result.failed else "") + ".")

        ends: dict[str, Any] = dict(
            busy=self.panel.verification.set_busy, done=done, cancelled=lambda: self.candidatesChanged.emit(False),
            failed=lambda exc, tb: (self.candidatesChanged.emit(False), self.panel.set_message(f"Verification failed: {exc}")))
        if kind == "llm":
            try:
                _, config = self._llm()
            except CounterbiasError as exc:
                self.show_error(exc)
                return None
            return self.run_job(llm_judge_candidates, project, ids, config, **ends,
                                title=f"LLM judge on {len(ids):,} candidates")
        return self.run_job(judge_candidates, project, ids, self._judge_members(), **ends,
                            title=f"Verify {len(ids):,} candidates")

    def _judge_members(self) -> list[str]:
        """The members that judge the listed candidates again (:func:`engine.counterbias.verify.judge_members`)."""
        dataset = self.session.dataset
        return judge_members(self.session.project, dataset.id if dataset else None, self.panel.visible_candidates())

    # ------------------------------------------------------------------ augmentation
    def build_augmented(self) -> Job | None:
        """Build the augmented dataset (originals + accepted candidates) as a job; refresh the datasets."""
        dataset = self.session.dataset
        if dataset is None:
            return None

        def done(result: Any) -> None:
            text = (f"Created dataset {result.dataset.name!r}: {result.original:,} originals + "
                    f"{result.added:,} accepted candidates.")
            self.panel.set_message(text)
            self.status(text, 8000)
            # the new version is listed, the reviewed one stays shown
            self.session.refresh_datasets()

        return self.run_job(build_augmented_dataset, self.session.project, dataset.id, done=done,
                            title=f"Build augmented dataset of {dataset.name}", kind="augment")
