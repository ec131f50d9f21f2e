"""The CORE corpus of the Counterbias tab: which corpora and members CORE can retrieve with, and Corpus….

Preparing a corpus (import a text collection, label it with a member, index it) is one job of
:func:`engine.retrieval.prepare.prepare_corpus`; a cancelled one keeps what it did, and
preparing again resumes it.
"""

from __future__ import annotations

from typing import Any

from app.controllers.base import PanelController
from app.jobs import Job, JobRunner
from app.session import Session
from widgets.review_panel import ReviewPanel

__all__ = ["CorpusController"]


class CorpusController(PanelController):
    """Offers the project's corpora and members for CORE generation and prepares new corpora."""

    panel: ReviewPanel

    def __init__(self, session: Session, jobs: JobRunner, panel: ReviewPanel) -> None:
        super().__init__(session, jobs, panel)
        panel.corpusRequested.connect(self.open_corpus_dialog)

    def _sources(self) -> tuple[list[str], list[str]]:
        from engine.models.store import list_models
        from engine.retrieval.corpus import list_corpora

        project = self.session.project
        return [c.name for c in list_corpora(project)], [m.name for m in list_models(project)]

    def refresh_core_sources(self) -> None:
        """Offer the project's corpora and members for CORE generation."""
        if self.session.project is None:
            self.panel.set_core_sources([], [])
            return
        self.panel.set_core_sources(*self._sources())

    def open_corpus_dialog(self) -> Job | None:
        """Ask for a file, corpus name and labelling member, then prepare the corpus as one job."""
        from widgets.corpus_dialog import CorpusDialog

        if self.session.project is None:
            return None
        corpora, members = self._sources()
        dialog = CorpusDialog(corpora, members, str(self.session.settings.get("last_dir") or ""), self.panel)
        if dialog.exec() != CorpusDialog.DialogCode.Accepted:
            return None
        return self.prepare_corpus(dialog.request())

    def prepare_corpus(self, request: Any) -> Job | None:
        """Run :func:`engine.retrieval.prepare.prepare_corpus` for a :class:`~widgets.corpus_dialog.CorpusRequest`."""
        from engine.retrieval.prepare import prepare_corpus

        project = self.session.project
        if project is None:
            return None

        def done(result: Any) -> None:
            self.refresh_core_sources()
            self.panel.select_corpus(request.name, request.member)
            self.panel.set_message(f"Ready for CORE: {result.summary()}.")

        def cancelled() -> None:
            self.refresh_core_sources()
            self.panel.set_message("Cancelled; what was imported, labelled and embedded is kept, and Corpus… resumes it.")

        job = self.run_job(prepare_corpus, project, request.name, path=request.path, member=request.member,
                           index_kind=request.kind, kind="corpus",
                           title=f"Corpus {request.name!r}: "
                                 f"{'import, ' if request.path else ''}label with {request.member}, index",
                           done=done, failed=lambda exc, tb: self.panel.set_message(f"Corpus preparation failed: {exc}"),
                           cancelled=cancelled)
        self.panel.set_message(f"Preparing corpus {request.name!r}…")
        return job
