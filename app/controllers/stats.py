"""Runs the bias-statistics steps for the :class:`~widgets.stats_panel.StatsPanel` as jobs."""

from __future__ import annotations

from app.controllers.base import PanelController
from app.jobs import Job, JobRunner
from app.session import Session
from engine.stats import StatsConfig, zfilter_project
from engine.stats.analysis import DatasetStats, analyse_pair
from engine.stats.presets_io import zfilter_preset_project
from engine.store import DatasetInfo
from widgets.stats_panel import StatsPanel
from widgets.zfilter_dialog import ZFilterDialog, ZFilterRequest
from widgets.wording import count_of

__all__ = ["StatsController"]


class StatsController(PanelController):
    """Computes statistics and z-filters the session's dataset; publishes results to the session."""

    panel: StatsPanel

    def __init__(self, session: Session, jobs: JobRunner, panel: StatsPanel) -> None:
        super().__init__(session, jobs, panel)
        #: The newest statistics shown (and of the compared version).
        self.current: DatasetStats | None = None
        self.compared: DatasetStats | None = None
        panel.computeRequested.connect(self.compute)
        panel.zfilterRequested.connect(self.zfilter_dialog)
        panel.featureActivated.connect(self.show_feature_examples)
        session.datasetChanged.connect(self.dataset_changed)
        session.datasetsChanged.connect(lambda _: self.dataset_changed(session.dataset))

    def dataset_changed(self, dataset: DatasetInfo | None) -> None:
        """Show the settings of ``dataset`` (the versions it can be compared with)."""
        self.panel.set_dataset(dataset, self.session.datasets)

    def compute(self, config: StatsConfig | None = None, compare_id: int | None = None) -> Job | None:
        """Compute the statistics of the session's dataset (and of ``compare_id``) as a job.

        A new request supersedes one still running (its job is cancelled).
        """
        dataset, project = self.session.dataset, self.session.project
        if dataset is None or project is None:
            return None
        config = config or self.panel.config()

        def done(result: tuple[DatasetStats, DatasetStats | None]) -> None:
            self.current, self.compared = result
            self.session.set_stats(self.current)
            if self.session.dataset is not None and self.session.dataset.id == dataset.id:
                self.panel.show_stats(self.current.result, self.compared.result if self.compared else None,
                                      dataset_id=dataset.id)

        return self.run_job(analyse_pair, project, dataset.id, compare_id, config, done=done,
                            title=f"Statistics of {dataset.name}", kind="stats", when_busy="cancel")

    def show_feature_examples(self, feature: str, label: str) -> None:
        """Ask for the examples holding ``feature`` to be listed."""
        if self.current is None:
            return
        ids = self.current.examples_with(feature)
        self.showExamples.emit(ids, f"examples holding {feature!r}")
        self.status(f"{count_of(len(ids), 'example')} hold {feature!r}", 8000)

    def zfilter_dialog(self) -> ZFilterDialog | None:
        """Open the z-filter dialog on the session's dataset (non-blocking); returns it (for tests)."""
        dataset = self.session.dataset
        if dataset is None:
            return None
        dialog = ZFilterDialog(dataset, self.session.datasets, self.panel)
        dialog.accepted.connect(lambda: self.run_zfilter(dialog.request()))
        dialog.open()
        return dialog

    def run_zfilter(self, request: ZFilterRequest) -> Job:
        """Run z-filtering as a job; the new dataset version becomes current."""
        project = self.session.project
        features = self.panel.config().features
        if request.mode in ("plain", "conditional"):
            job = self.jobs.start(
                zfilter_project, project, request.dataset_id, request.config, features=features,
                seed_dataset_id=request.seed_id, name=request.name, title="z-filtering", kind="zfilter",
            )
            new_id = lambda r: r.dataset.id  # noqa: E731
        else:
            job = self.jobs.start(
                zfilter_preset_project, project, request.mode, request.seed_id, request.dataset_id,
                request.config, features=features, name=request.name, title=f"z-filtering ({request.mode})",
                kind="zfilter",
            )
            new_id = lambda r: r[0].id  # noqa: E731
        job.on_finished(lambda result: self.session.refresh_datasets(select=new_id(result)))
        return job
