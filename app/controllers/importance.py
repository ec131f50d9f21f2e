"""Runs ensemble training and explanation for the :class:`~widgets.importance_panel.ImportancePanel`."""

from __future__ import annotations

import time
from typing import Any

from app.controllers.base import PanelController
from app.jobs import Job, JobRunner
import numpy as np

from app.session import Session
from engine.store import DatasetInfo
from widgets.importance_panel import ImportancePanel
from widgets.stats_panel import take_names

__all__ = ["ImportanceController"]


class ImportanceController(PanelController):
    """Connects the importance panel to training, attribution and the vote.

    The shown example is always the session's current example: the panel follows
    :attr:`Session.exampleChanged` and re-votes it when it is (or becomes) visible.
    """

    panel: ImportancePanel

    def __init__(self, session: Session, jobs: JobRunner, panel: ImportancePanel) -> None:
        super().__init__(session, jobs, panel)
        self.vote_set_id: int | None = None
        #: Method -> settings of the shown vote (its cached scores are read and reused).
        self.method_settings: dict[str, Any] = {}
        #: The running training job, and the names of the members shown while it runs.
        self._train_job: Job | None = None
        self._train_job_names: list[str] = []
        self._train_dataset_id: int | None = None
        self._shown_members: set[str] = set()
        self._checked_at = 0.0
        jobs.progressed.connect(self._training_progressed)
        panel.trainRequested.connect(self.train)
        panel.explainRequested.connect(self.explain)
        panel.voteSettingsChanged.connect(self.refresh_example)
        panel.wordActivated.connect(self.show_word_examples)
        session.datasetChanged.connect(self.dataset_changed)
        session.exampleChanged.connect(self.example_selected)
        session.statsChanged.connect(self._stats_changed)
        from engine.models.device import default_preset

        # sample-cpu without a GPU (no torch import here: a cheap guess until torch is loaded)
        panel.set_default_preset(default_preset(import_torch=False))

    # ------------------------------------------------------------------ state
    def members(self) -> list:
        """Trained members of the shown dataset version (or of its parent)."""
        from engine.models.store import list_models

        project, dataset = self.session.project, self.session.dataset
        if project is None or dataset is None:
            return []
        ids = {dataset.id, dataset.parent_id}
        return [m for m in list_models(project) if m.dataset_id in ids]

    def enabled_members(self) -> list:
        members = self.members()
        names, _ = self.panel.grid.enabled()
        enabled = [m for m in members if m.name in names] if names else members
        return enabled

    def dataset_changed(self, dataset: DatasetInfo | None) -> None:
        """Show the members and the newest vote of ``dataset``."""
        self.vote_set_id = None
        self.method_settings = {}
        if dataset is None:
            self._shown_members = set()
            self.panel.show_members([], {})
            return
        self._show_members()
        self.panel.show_summary([], [])
        self._show_latest_vote(dataset)
        self.refresh_example()

    def _show_members(self) -> list:
        """Show the stored members, the default explainers ticked; returns those explainers."""
        from engine.attribution.explainers import default_explainers

        members = self.members()
        self._shown_members = {m.name for m in members}
        explainers = default_explainers(members)
        training = [n for n in self._train_job_names if n not in self._shown_members] if self._training_shown() else []
        self.panel.show_members([m.name for m in members],
                                {m.name: float(m.metrics.get("dev_accuracy", float("nan"))) for m in members},
                                {m.name: m.training_summary for m in members},
                                explainers=[m.name for m in explainers], training=training)
        return explainers

    def _training_shown(self) -> bool:
        """Whether a training job runs on the shown dataset."""
        dataset = self.session.dataset
        return self._train_job is not None and dataset is not None and dataset.id == self._train_dataset_id

    def _training_progressed(self, job: Job, fraction: float, message: str) -> None:
        """While members train, show each one as soon as it is stored: rows can be explained with the
        members there (the explainers are trained first, the members that only judge last)."""
        if job is not self._train_job or not self._training_shown() or time.monotonic() - self._checked_at < 1.0:
            return
        self._checked_at = time.monotonic()
        if {m.name for m in self.members()} == self._shown_members:
            return
        explainers = self._show_members()
        self.refresh_example()
        waiting = sorted(set(self._train_job_names) - self._shown_members)
        if explainers and waiting:
            self.status(f"Explain works now with {', '.join(m.name for m in explainers)} while "
                        f"the others train ({', '.join(waiting)}).", 15000)

    def _show_latest_vote(self, dataset: DatasetInfo) -> None:
        """Reopening a project shows the dataset-level tables of its newest vote."""
        from engine.attribution.vote_store import vote_sets, vote_summary

        project = self.session.project
        stored = vote_sets(project, dataset.id)
        if stored:
            self.vote_set_id = int(stored[0]["id"])
            params = stored[0]["params"]
            self.method_settings = dict(params.get("methods") or {})
            vote = params.get("vote") or {}
            self.panel.set_vote_settings(list(params.get("methods") or ["ig"]), int(vote.get("k", 5)),
                                         str(vote.get("combine", "majority")), "gender" in (params.get("wordlists") or ()),
                                         str(vote.get("rule", "majority")))
            if params.get("models"):  # the members that explained it
                self.panel.grid.tick_members(list(params["models"]))
            summary = vote_summary(project, self.vote_set_id)
            self.panel.show_summary(summary.principal, summary.spurious, self._max_z())

    def example_selected(self, row: dict | None = None) -> None:
        """The session's example changed: re-vote it if the panel is visible."""
        if self.is_shown():
            self.refresh_example()

    def panel_shown(self) -> None:
        self.refresh_example()

    def _stats_changed(self, stats: Any) -> None:
        if self.vote_set_id is not None and self.session.dataset is not None \
                and stats.dataset.id == self.session.dataset.id:
            from engine.attribution.vote_store import vote_summary

            summary = vote_summary(self.session.project, self.vote_set_id)
            self.panel.show_summary(summary.principal, summary.spurious, self._max_z())

    # ------------------------------------------------------------------ actions
    def train(self, backbones: list[str], preset: str) -> Job | None:
        """Train (or reuse) one member per backbone on the shown dataset, as a job."""
        from engine.models.config import default_ensemble
        from engine.models.train import train_ensemble

        dataset = self.session.dataset
        if dataset is None:
            return None
        config = default_ensemble(f"{dataset.name}:", backbones=backbones, preset=preset)

        def ended(*_: Any) -> None:
            # members finished before a cancel or a failure are stored: show what exists
            if self._train_job is job:
                self._train_job = None
            self.dataset_changed(self.session.dataset)

        # Train with another preset = replace those members (a member with the same settings is reused;
        # a replaced member's attributions are deleted with it).
        job = self.run_job(train_ensemble, self.session.project, dataset.id, config, overwrite=True,
                           title=f"Train {len(backbones)} members on {dataset.name}", kind="train",
                           busy=self.panel.set_training, done=ended, failed=ended, cancelled=ended)
        self._train_job, self._train_job_names, self._train_dataset_id = job, config.names, dataset.id
        self._show_members()
        return job

    def explain(self, scope: str = "selection") -> Job | None:
        """Attribute (cached) and vote on the selected rows or the whole dataset, as a job."""
        from engine.attribution.vote_store import find_principal_words

        dataset = self.session.dataset
        members = self.enabled_members()
        if dataset is None or not members:
            self.status("Train an ensemble first.")
            return None
        ids = None
        if scope == "selection":
            ids = self.session.selected_or_current()
            if not ids:
                self.status("Select rows in the Examples tab first.")
                return None
        settings = self.panel.vote_settings()
        methods = self._method_settings(self.panel.methods())

        def done(run: Any) -> None:
            self.vote_set_id = run.vote_set_id
            self.method_settings = dict(methods)
            self.panel.show_summary(run.summary.principal, run.summary.spurious, self._max_z())
            self.refresh_example()

        return self.run_job(
            find_principal_words, self.session.project, dataset.id, [m.name for m in members],
            methods=methods, vote=settings, wordlists=("gender",) if self.panel.gender.isChecked() else (),
            user_words=self.panel.user_word_list(), example_ids=ids,
            title=f"Explain {len(ids) if ids else dataset.row_count:,} examples", kind="explain",
            busy=self.panel.set_explaining, done=done,
        )

    def _method_settings(self, methods: list[str]) -> dict[str, Any]:
        """Settings per method: the shown vote's (its cached scores are reused), else the device's default budget —
        decided here without importing torch on the GUI thread, and passed to the job, so both read the same keys."""
        from engine.attribution.method import default_budget

        budget = default_budget(import_torch=False)
        return {m: self.method_settings.get(m) or {"budget": budget} for m in methods}

    def refresh_example(self) -> None:
        """Re-vote the shown example from stored attributions with the current toggles."""
        from engine.attribution.explain import explain_example
        from engine.attribution.wordlists import combine_wordlists

        project, example = self.session.project, self.session.example
        members = self.enabled_members()
        if project is None or example is None or not members:
            self.panel.show_example([], {}, [], [], "No example selected." if members else
                                    "Train an ensemble first (Train ensemble).")
            return
        _, methods = self.panel.grid.enabled()
        methods = [m for m in self.panel.methods() if not methods or m in methods]
        users = combine_wordlists(("gender",) if self.panel.gender.isChecked() else (), self.panel.user_word_list())
        settings = self.panel.vote_settings()
        explained = explain_example(project, example, members, methods, settings, user_words=users,
                                    method_settings=self._method_settings(methods))
        fields = [(f.field if len(explained.fields) > 1 else "", f.text, f.spans, f.strength, f.user_spans)
                  for f in explained.fields]
        principal = [w for f in explained.fields for w in f.vote.principal]
        spurious = [w for f in explained.fields for w in f.vote.spurious]
        message = ""
        if explained.missing:
            message = "Not explained yet for: " + ", ".join(f"{m}·{meth}" for m, meth in explained.missing[:6])
        elif fields:
            message = f"principal: {', '.join(principal) or '—'}   |   spurious: {', '.join(spurious) or '—'}"
        self.panel.show_example(fields, explained.tops, principal, spurious, message)

    def show_word_examples(self, word: str, category: str) -> None:
        """Filter the examples table to those where ``word`` is principal / spurious."""
        from engine.attribution.vote_store import load_votes

        if self.vote_set_id is None:
            return
        votes = load_votes(self.session.project, self.vote_set_id)
        ids = sorted({ex for (ex, _), v in votes.items() if word in getattr(v, category)})
        self.showExamples.emit(ids, f"examples where {word!r} is {category}")
        self.status(f"{len(ids):,} examples where {word!r} is {category}", 8000)

    def _max_z(self) -> dict[str, float]:
        """The largest z of each word in the session's newest statistics of the dataset."""
        dataset = self.session.dataset
        stats = self.session.stats_for(dataset.id if dataset else None)
        if stats is None:
            return {}
        r = stats.result
        tested = np.flatnonzero(r.tested)
        best = r.z[tested].max(axis=1)
        return dict(zip(take_names(r.feature_names, tested), best.tolist()))
