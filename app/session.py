"""The application context: the open project, the current dataset, example and selection.

Every controller and view reads this state from one :class:`Session` and follows its
signals; none keeps its own copy (a stale copy is how a panel ends up saying "No example
selected" while an example is shown). Results that several panels use (the newest bias
statistics of a dataset) are published here too, so controllers never reach into each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from app.settings import Settings
from engine.store import DatasetInfo, Project

__all__ = ["Session"]


class Session(QObject):
    """Holds the current :class:`~engine.store.Project` and what is selected in it.

    Parameters
    ----------
    settings
        The application settings (LLM settings, recent projects, window state).
    parent
        Owning QObject.

    Notes
    -----
    The order of signals on a change is fixed: ``projectChanged`` → ``datasetsChanged`` →
    (``exampleChanged(None)``, ``selectionChanged([])`` when there was one) → ``datasetChanged``;
    views that pick a first example on ``datasetChanged`` then emit the new current example. A signal is emitted only
    when its value really changed (by id), so re-selecting the same dataset reloads nothing.
    """

    projectChanged = Signal(object)
    """Emitted with the new :class:`Project` (or ``None`` when closed)."""

    datasetsChanged = Signal(list)
    """Emitted with the list of :class:`DatasetInfo` whenever datasets were added or removed."""

    datasetChanged = Signal(object)
    """Emitted with the current :class:`DatasetInfo` (or ``None``)."""

    exampleChanged = Signal(object)
    """Emitted with the current example's row dict (or ``None``)."""

    selectionChanged = Signal(list)
    """Emitted with the example ids selected in the examples table."""

    waiting = Signal(str)
    """Emitted (from the project's writer thread; delivered on the GUI thread) while a write waits for
    another process that holds the project, e.g. ``waiting for the project (another process is writing)``."""

    statsChanged = Signal(object)
    """Emitted with the newest statistics (:class:`engine.stats.analysis.DatasetStats`) of a dataset."""

    def __init__(self, settings: Settings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self._project: Project | None = None
        self._datasets: list[DatasetInfo] = []
        self._dataset: DatasetInfo | None = None
        self._example: dict[str, Any] | None = None
        self._selection: list[int] = []
        self._stats: dict[int, Any] = {}

    # ------------------------------------------------------------------ state
    @property
    def project(self) -> Project | None:
        """The open project, or ``None``."""
        return self._project

    @property
    def datasets(self) -> list[DatasetInfo]:
        """The project's dataset versions (a copy)."""
        return list(self._datasets)

    @property
    def dataset(self) -> DatasetInfo | None:
        """The dataset version shown, or ``None``."""
        return self._dataset

    @property
    def example(self) -> dict[str, Any] | None:
        """The current example (the row shown in the detail pane), or ``None``."""
        return self._example

    @property
    def example_id(self) -> int | None:
        """The id of :attr:`example`, or ``None``."""
        return int(self._example["id"]) if self._example is not None else None

    @property
    def selection(self) -> list[int]:
        """Example ids selected in the examples table (a copy; may be empty)."""
        return list(self._selection)

    def selected_or_current(self) -> list[int]:
        """The selected example ids, or the current example's id, or nothing."""
        if self._selection:
            return list(self._selection)
        return [self.example_id] if self.example_id is not None else []

    def stats_for(self, dataset_id: int | None) -> Any:
        """The newest statistics computed for ``dataset_id`` in this session, or ``None``."""
        return self._stats.get(dataset_id) if dataset_id is not None else None

    # ------------------------------------------------------------------ projects
    def new_project(self, path: str | Path) -> Project:
        """Create a project file at ``path`` and make it current."""
        return self._set(Project.create(path, exist_ok=False))

    def open_project(self, path: str | Path) -> Project:
        """Open an existing project (running its migrations) and make it current."""
        return self._set(Project.open(path))

    def close_project(self) -> None:
        """Close the current project (if any); every view is told."""
        self._close_current()
        self._project = None
        self._datasets = []
        self._stats = {}
        self.projectChanged.emit(None)
        self.datasetsChanged.emit([])
        self.set_dataset(None)

    def refresh_datasets(self, select: int | None = None) -> list[DatasetInfo]:
        """Re-read the dataset list from the store and notify the views.

        Parameters
        ----------
        select
            A dataset id to make current afterwards (e.g. a version just created). Without it
            the current dataset stays current if it still exists, else the newest one is shown.
        """
        self._datasets = self._project.datasets() if self._project else []
        self.datasetsChanged.emit(list(self._datasets))
        keep = select if select is not None else (self._dataset.id if self._dataset else None)
        target = next((d for d in self._datasets if d.id == keep), None)
        if target is None and self._datasets:
            target = self._datasets[-1]
        self.set_dataset(target, force=select is not None or (
            target is not None and self._dataset is not None and target != self._dataset))
        return self._datasets

    # ------------------------------------------------------------------ selection
    def set_dataset(self, dataset: DatasetInfo | int | None, *, force: bool = False) -> None:
        """Make ``dataset`` (an info, an id of a listed dataset, or ``None``) current.

        Clears the current example and selection; nothing is emitted when it is already
        current, unless ``force`` (its contents changed).
        """
        if isinstance(dataset, int):
            dataset = next((d for d in self._datasets if d.id == dataset), None)
        same = (dataset is None and self._dataset is None) or (
            dataset is not None and self._dataset is not None and dataset.id == self._dataset.id)
        if same and not force:
            return
        had_example, had_selection = self._example is not None, bool(self._selection)
        self._dataset = dataset
        self._example = None
        self._selection = []
        # cleared first, so that a view reacting to datasetChanged may pick the new current example
        if had_example:
            self.exampleChanged.emit(None)
        if had_selection:
            self.selectionChanged.emit([])
        self.datasetChanged.emit(dataset)

    def set_example(self, row: dict[str, Any] | None) -> None:
        """Make ``row`` (an examples-table row dict) the current example."""
        if row is None and self._example is None:
            return
        self._example = dict(row) if row is not None else None
        self.exampleChanged.emit(self._example)

    def set_selection(self, example_ids: list[int]) -> None:
        """Record the example ids selected in the examples table."""
        ids = [int(i) for i in example_ids]
        if ids == self._selection:
            return
        self._selection = ids
        self.selectionChanged.emit(list(ids))

    def set_stats(self, stats: Any) -> None:
        """Publish the newest statistics of ``stats.dataset`` (a :class:`DatasetStats`)."""
        self._stats[stats.dataset.id] = stats
        self.statsChanged.emit(stats)

    # ------------------------------------------------------------------ internals
    def _close_current(self) -> None:
        """Close the open project and forget the members loaded from it (their memory is freed)."""
        if self._project is None:
            return
        from engine.models.loading import clear_cache

        self._project.close()
        clear_cache()

    def _set(self, project: Project) -> Project:
        self._close_current()
        self._project = project
        project.on_wait = self.waiting.emit  # thread-safe: a queued signal to the GUI thread
        self._dataset = None
        self._stats = {}
        self.settings.add_recent_project(project.path)
        self.projectChanged.emit(project)
        self.refresh_datasets()
        return project
