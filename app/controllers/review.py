"""The Counterbias tab (:class:`~widgets.review_panel.ReviewPanel`): four controllers on one panel, composed here.

* :class:`~app.controllers.llm_settings.LLMSettingsController` — the LLM settings, their dialog,
  the connection test and the tokens used;
* :class:`~app.controllers.corpus.CorpusController` — the CORE corpora and Corpus…;
* :class:`~app.controllers.generation.GenerationController` — generate, verify, triple edits and
  the augmented dataset;
* :class:`~app.controllers.decisions.DecisionsController` — the candidates list and the
  (undoable) review decisions.

:class:`ReviewController` creates them with the tab's session, runner and panel, connects what one
says to what another does, follows the session's dataset and example, and refreshes the tab when
it is shown. The names the window and the tests use (``undo_stack``, ``generate``,
``open_llm_dialog``, ``last_usage`` …) stay on it and lead to the part that owns them.
"""

from __future__ import annotations

from typing import Any

from app.controllers.base import PanelController
from app.controllers.corpus import CorpusController
from app.controllers.decisions import DecisionCommand, DecisionsController
from app.controllers.generation import GenerationController
from app.controllers.llm_settings import LLMSettingsController
from app.jobs import JobRunner
from app.session import Session
from engine.store import DatasetInfo
from widgets.review_panel import ReviewPanel

__all__ = ["DecisionCommand", "ReviewController"]


def _to(part: str, name: str) -> property:
    """The attribute ``name`` of the part ``part``, read and written through the composer."""
    return property(lambda self: getattr(getattr(self, part), name),
                    lambda self, value: setattr(getattr(self, part), name, value),
                    doc=f"``{part}.{name}``")


class ReviewController(PanelController):
    """Composes the Counterbias tab's controllers and keeps the tab in step with the session."""

    panel: ReviewPanel

    def __init__(self, session: Session, jobs: JobRunner, panel: ReviewPanel) -> None:
        super().__init__(session, jobs, panel)
        self.llm = LLMSettingsController(session, jobs, panel)
        self.corpus = CorpusController(session, jobs, panel)
        self.generation = GenerationController(session, jobs, panel)
        self.decisions = DecisionsController(session, jobs, panel)
        for part in (self.llm, self.corpus, self.generation, self.decisions):
            part.statusMessage.connect(self.statusMessage)
            part.showExamples.connect(self.showExamples)
        self.generation.candidatesChanged.connect(self._candidates_changed)
        self.generation.generationEnded.connect(self._generation_ended)
        panel.candidateChanged.connect(self.show_candidates_example)
        session.datasetChanged.connect(self.dataset_changed)
        session.exampleChanged.connect(self.example_selected)

    # the parts' names, kept here for the window, the tests and the scripts
    llm_values = _to("llm", "llm_values")
    set_llm_values = _to("llm", "set_llm_values")
    llm_config = _to("llm", "llm_config")
    open_llm_dialog = _to("llm", "open_llm_dialog")
    test_connection = _to("llm", "test_connection")
    update_tokens = _to("llm", "update_tokens")
    last_usage = _to("llm", "last_usage")
    last_test = _to("llm", "last_test")
    llm_dialog = _to("llm", "llm_dialog")
    refresh_core_sources = _to("corpus", "refresh_core_sources")
    open_corpus_dialog = _to("corpus", "open_corpus_dialog")
    prepare_corpus = _to("corpus", "prepare_corpus")
    generate = _to("generation", "generate")
    verify = _to("generation", "verify")
    build_augmented = _to("generation", "build_augmented")
    save_triples = _to("generation", "save_triples")
    refresh_example = _to("generation", "refresh_example")
    _judge_members = _to("generation", "_judge_members")
    chunk_size = _to("generation", "chunk_size")
    live_interval_s = _to("generation", "live_interval_s")
    regenerate_on_edit = _to("generation", "regenerate_on_edit")
    undo_stack = _to("decisions", "undo_stack")
    reload_candidates = _to("decisions", "reload_candidates")
    candidate_changed = _to("decisions", "candidate_changed")
    decide = _to("decisions", "decide")
    apply_decision = _to("decisions", "apply_decision")
    edit_current = _to("decisions", "edit_current")
    rejudge = _to("decisions", "rejudge")
    run_write = _to("decisions", "run_write")
    _judging = _to("decisions", "_judging")

    # ------------------------------------------------------------------ session
    def dataset_changed(self, dataset: DatasetInfo | None) -> None:
        """A new dataset: its candidates, no undo history from the last one."""
        self.decisions.undo_stack.clear()
        self.refresh()
        self.corpus.refresh_core_sources()

    def example_selected(self, row: dict | None = None) -> None:
        """The session's example changed: show its triples if the panel is visible."""
        if self.is_shown():
            self.generation.refresh_example()

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
        """Re-read the candidates, the shown example's triples and the tokens (the tab became visible)."""
        self.decisions.reload_candidates()
        self.generation.refresh_example()
        self.llm.update_tokens()

    # ------------------------------------------------------------------ between the parts
    def _candidates_changed(self, discarded: bool) -> None:
        if discarded:
            self.decisions.undo_stack.clear()  # the undo history may name deleted candidates
        self.decisions.reload_candidates()

    def _generation_ended(self, usage: Any) -> None:
        if usage is not None:
            self.llm.last_usage = usage
        self.refresh()
