"""The open project and what the GUI knows about it; one place that applies job results."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.settings import Settings
from engine.store import DatasetInfo, Project


class Session(QObject):
    """Holds the current :class:`~engine.store.Project` and tells views when it changes.

    Engine jobs write through the project's single writer; when a job finishes, the main
    window calls :meth:`refresh_datasets` here (on the GUI thread) so every view updates.
    """

    projectChanged = Signal(object)
    """Emitted with the new :class:`Project` (or ``None`` when closed)."""

    datasetsChanged = Signal(list)
    """Emitted with the list of :class:`DatasetInfo` whenever datasets were added or removed."""

    def __init__(self, settings: Settings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self._project: Project | None = None
        self._datasets: list[DatasetInfo] = []

    @property
    def project(self) -> Project | None:
        return self._project

    @property
    def datasets(self) -> list[DatasetInfo]:
        return list(self._datasets)

    def new_project(self, path: str | Path) -> Project:
        """Create a project file at ``path`` and make it current."""
        return self._set(Project.create(path, exist_ok=False))

    def open_project(self, path: str | Path) -> Project:
        """Open an existing project (running its migrations) and make it current."""
        return self._set(Project.open(path))

    def close_project(self) -> None:
        if self._project is not None:
            self._project.close()
        self._project = None
        self._datasets = []
        self.projectChanged.emit(None)
        self.datasetsChanged.emit([])

    def refresh_datasets(self) -> list[DatasetInfo]:
        """Re-read the dataset list from the store and notify the views."""
        self._datasets = self._project.datasets() if self._project else []
        self.datasetsChanged.emit(list(self._datasets))
        return self._datasets

    def _set(self, project: Project) -> Project:
        if self._project is not None:
            self._project.close()
        self._project = project
        self.settings.add_recent_project(project.path)
        self.projectChanged.emit(project)
        self.refresh_datasets()
        return project
