"""Runs the bias-statistics steps for the :class:`~widgets.stats_panel.StatsPanel` as jobs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject

from engine.stats import StatsConfig, zfilter_project
from engine.stats.analysis import DatasetStats, analyse_pair
from engine.stats.presets_io import zfilter_preset_project
from engine.store import DatasetInfo
from widgets.stats_panel import StatsPanel
from widgets.zfilter_dialog import ZFilterDialog, ZFilterRequest

if TYPE_CHECKING:
    from app.main_window import MainWindow


class StatsController(QObject):
    """Connects the statistics panel to the engine and the rest of the window."""

    def __init__(self, window: MainWindow, panel: StatsPanel) -> None:
        super().__init__(window)
        self.window = window
        self.panel = panel
        self.current: DatasetStats | None = None
        self.compared: DatasetStats | None = None
        panel.computeRequested.connect(self.compute)
        panel.zfilterRequested.connect(self.zfilter_dialog)
        panel.featureActivated.connect(self.show_feature_examples)

    def dataset_changed(self, dataset: DatasetInfo | None) -> None:
        self.panel.set_dataset(dataset, self.window.session.datasets)

    def compute(self, config: StatsConfig | None = None, compare_id: int | None = None) -> Any:
        """Compute the statistics of the shown dataset (and of ``compare_id``) as a job."""
        dataset = self.window.current_dataset
        if dataset is None:
            return None
        config = config or self.panel.config()
        self.panel.set_busy(True)
        job = self.window.jobs.start(
            analyse_pair, self.window.session.project, dataset.id, compare_id, config,
            title=f"Statistics of {dataset.name}",
        )

        def done(result: tuple[DatasetStats, DatasetStats | None]) -> None:
            self.current, self.compared = result
            if self.window.current_dataset is not None and self.window.current_dataset.id == dataset.id:
                self.panel.show_stats(self.current.result, self.compared.result if self.compared else None,
                                      dataset_id=dataset.id)

        job.on_finished(done)
        job.on_failed(lambda exc, tb: self.panel.set_busy(False))
        job.on_cancelled(lambda: self.panel.set_busy(False))
        return job

    def show_feature_examples(self, feature: str, label: str) -> None:
        """Filter the examples table to the examples holding ``feature``."""
        if self.current is None:
            return
        ids = self.current.examples_with(feature)
        self.window.examples.set_example_filter(ids, f"examples holding {feature!r}")
        self.window.examples.model.set_label_filter(None)
        self.window.show_examples_tab()
        self.window.statusBar().showMessage(f"{len(ids):,} examples hold {feature!r}", 8000)

    def zfilter_dialog(self) -> ZFilterDialog | None:
        dataset = self.window.current_dataset
        if dataset is None:
            return None
        dialog = ZFilterDialog(dataset, self.window.session.datasets, self.window)
        dialog.accepted.connect(lambda: self.run_zfilter(dialog.request()))
        dialog.open()
        return dialog

    def run_zfilter(self, request: ZFilterRequest) -> Any:
        """Run z-filtering as a job; the new dataset version appears in the list."""
        project = self.window.session.project
        features = self.panel.config().features
        if request.mode in ("plain", "conditional"):
            job = self.window.jobs.start(
                zfilter_project, project, request.dataset_id, request.config, features=features,
                seed_dataset_id=request.seed_id, name=request.name, title="z-filtering",
            )
            new_id = lambda r: r.dataset.id  # noqa: E731
        else:
            job = self.window.jobs.start(
                zfilter_preset_project, project, request.mode, request.seed_id, request.dataset_id,
                request.config, features=features, name=request.name, title=f"z-filtering ({request.mode})",
            )
            new_id = lambda r: r[0].id  # noqa: E731

        def done(result: Any) -> None:
            self.window.session.refresh_datasets()
            self.window.select_dataset(new_id(result))

        job.on_finished(done)
        return job
