"""Runs ensemble training and explanation for the :class:`~widgets.importance_panel.ImportancePanel`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject

from engine.store import DatasetInfo
from widgets.importance_panel import ImportancePanel

if TYPE_CHECKING:
    from app.main_window import MainWindow


class ImportanceController(QObject):
    """Connects the importance panel to training, attribution and the vote."""

    def __init__(self, window: MainWindow, panel: ImportancePanel) -> None:
        super().__init__(window)
        self.window = window
        self.panel = panel
        self.example: dict | None = None
        self.vote_set_id: int | None = None
        #: Method -> settings of the shown vote (its cached scores are read and reused).
        self.method_settings: dict[str, Any] = {}
        panel.trainRequested.connect(self.train)
        panel.explainRequested.connect(self.explain)
        panel.voteSettingsChanged.connect(self.refresh_example)
        panel.wordActivated.connect(self.show_word_examples)

    # ------------------------------------------------------------------ state
    def members(self) -> list:
        """Trained members of the shown dataset version (or of its parent)."""
        from engine.models.store import list_models

        project, dataset = self.window.session.project, self.window.current_dataset
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
        self.vote_set_id = None
        self.method_settings = {}
        self.example = None
        if dataset is None:
            self.panel.show_members([], {})
            return
        members = self.members()
        self.panel.show_members([m.name for m in members],
                                {m.name: float(m.metrics.get("dev_accuracy", float("nan"))) for m in members})
        self.panel.show_summary([], [])
        self._show_latest_vote(dataset)
        self.refresh_example()

    def _show_latest_vote(self, dataset: DatasetInfo) -> None:
        """Reopening a project shows the dataset-level tables of its newest vote."""
        from engine.attribution.vote_store import vote_sets, vote_summary

        project = self.window.session.project
        stored = vote_sets(project, dataset.id)
        if stored:
            self.vote_set_id = int(stored[0]["id"])
            params = stored[0]["params"]
            self.method_settings = dict(params.get("methods") or {})
            vote = params.get("vote") or {}
            self.panel.set_vote_settings(list(params.get("methods") or ["ig"]), int(vote.get("k", 5)),
                                         str(vote.get("combine", "majority")), "gender" in (params.get("wordlists") or ()))
            summary = vote_summary(project, self.vote_set_id)
            self.panel.show_summary(summary.principal, summary.spurious, self._max_z())

    def example_selected(self, row: dict | None) -> None:
        self.example = row
        if self.window.tabs.currentWidget() is self.panel:
            self.refresh_example()

    # ------------------------------------------------------------------ actions
    def train(self, backbones: list[str], preset: str) -> Any:
        """Train (or reuse) one member per backbone on the shown dataset, as a job."""
        from engine.models.config import default_ensemble
        from engine.models.train import train_ensemble

        dataset = self.window.current_dataset
        if dataset is None:
            return None
        config = default_ensemble(f"{dataset.name}:", backbones=backbones, preset=preset)
        self.panel.set_busy(True)
        job = self.window.jobs.start(train_ensemble, self.window.session.project, dataset.id, config,
                                     title=f"Train {len(backbones)} members on {dataset.name}")
        job.on_finished(lambda result: (self.panel.set_busy(False), self.dataset_changed(self.window.current_dataset)))
        job.on_failed(lambda exc, tb: self.panel.set_busy(False))
        job.on_cancelled(lambda: self.panel.set_busy(False))
        return job

    def explain(self, scope: str = "selection") -> Any:
        """Attribute (cached) and vote on the selected rows or the whole dataset, as a job."""
        from engine.attribution.vote import VoteSettings
        from engine.attribution.vote_store import find_principal_words

        dataset = self.window.current_dataset
        members = self.enabled_members()
        if dataset is None or not members:
            self.window.statusBar().showMessage("Train an ensemble first.", 6000)
            return None
        ids = None
        if scope == "selection":
            view = self.window.examples
            rows = sorted({i.row() for i in view.table.selectionModel().selectedRows()})
            ids = [view.model.example_id_at(r) for r in rows] or (
                [int(self.example["id"])] if self.example else [])
            if not ids:
                self.window.statusBar().showMessage("Select rows in the Examples tab first.", 6000)
                return None
        settings = VoteSettings(k=self.panel.k.value(), combine=self.panel.combine.currentText())
        # a method of the shown vote keeps its settings (its cached scores are reused)
        methods = {m: self.method_settings.get(m) for m in self.panel.methods()}
        self.panel.set_busy(True)
        job = self.window.jobs.start(
            find_principal_words, self.window.session.project, dataset.id, [m.name for m in members],
            methods=methods, vote=settings, wordlists=("gender",) if self.panel.gender.isChecked() else (),
            user_words=self.panel.user_word_list(), example_ids=ids,
            title=f"Explain {len(ids) if ids else dataset.row_count:,} examples",
        )

        def done(run: Any) -> None:
            self.panel.set_busy(False)
            self.vote_set_id = run.vote_set_id
            self.method_settings = {m: self.method_settings.get(m) for m in methods}
            self.panel.show_summary(run.summary.principal, run.summary.spurious, self._max_z())
            self.refresh_example()

        job.on_finished(done)
        job.on_failed(lambda exc, tb: self.panel.set_busy(False))
        job.on_cancelled(lambda: self.panel.set_busy(False))
        return job

    def refresh_example(self) -> None:
        """Re-vote the shown example from stored attributions with the current toggles."""
        from engine.attribution.explain import explain_example
        from engine.attribution.vote import VoteSettings
        from engine.attribution.wordlists import combine_wordlists

        project, example = self.window.session.project, self.example
        members = self.enabled_members()
        if project is None or example is None or not members:
            self.panel.show_example([], {}, [], [], "No example selected." if members else
                                    "Train an ensemble first (Train ensemble).")
            return
        _, methods = self.panel.grid.enabled()
        methods = [m for m in self.panel.methods() if not methods or m in methods]
        users = combine_wordlists(("gender",) if self.panel.gender.isChecked() else (), self.panel.user_word_list())
        settings = VoteSettings(k=self.panel.k.value(), combine=self.panel.combine.currentText(),
                                threshold=None if len(members) % 2 else (len(members) + 2) // 2)
        explained = explain_example(project, example, members, methods, settings, user_words=users,
                                    method_settings=self.method_settings)
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
        votes = load_votes(self.window.session.project, self.vote_set_id)
        ids = sorted({ex for (ex, _), v in votes.items() if word in getattr(v, category)})
        self.window.examples.set_example_filter(ids, f"examples where {word!r} is {category}")
        self.window.show_examples_tab()
        self.window.statusBar().showMessage(f"{len(ids):,} examples where {word!r} is {category}", 8000)

    def _max_z(self) -> dict[str, float]:
        stats = self.window.stats.current
        if stats is None or self.window.current_dataset is None or stats.dataset.id != self.window.current_dataset.id:
            return {}
        r = stats.result
        best = r.z.max(axis=1)
        return {name: float(best[i]) for i, name in enumerate(r.feature_names) if r.tested[i]}
