"""Projects and datasets: new/open a project, import a file, export a dataset version."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox

from app.controllers.base import PanelController
from app.jobs import Job, JobRunner
from app.session import Session
from engine.errors import CounterbiasError
from engine.generation.demo_pairs import guess_pair_columns, import_pairs, pair_file_header
from engine.io import export_dataset, import_file
from engine.store import PROJECT_SUFFIX, Project
from widgets.datasets_view import DatasetsView
from widgets.demo_pairs_dialog import DemoPairsDialog
from widgets.import_wizard import ImportRequest, ImportWizard, show_import_warnings

__all__ = ["PROJECT_FILTER", "ProjectController"]

PROJECT_FILTER = f"Counterbias Studio project (*{PROJECT_SUFFIX});;All files (*)"


class ProjectController(PanelController):
    """Opens projects, imports and exports datasets; drives the datasets list.

    The list follows the session (its datasets and the current one); choosing a row makes
    that dataset current in the session.
    """

    panel: DatasetsView

    def __init__(self, session: Session, jobs: JobRunner, panel: DatasetsView) -> None:
        super().__init__(session, jobs, panel)
        self.import_wizard: ImportWizard | None = None
        #: The message listing the warnings of the last import (``None`` if it had none).
        self.warnings_box: QMessageBox | None = None
        session.datasetsChanged.connect(panel.set_datasets)
        session.datasetChanged.connect(lambda d: panel.select(d.id if d is not None else None))
        panel.datasetSelected.connect(session.set_dataset)

    # ------------------------------------------------------------------ projects
    def new_project_dialog(self) -> Project | None:
        """Ask for a file name and create a project there."""
        path, _ = QFileDialog.getSaveFileName(self.panel, "New project", self.session.settings.get("last_dir"),
                                              PROJECT_FILTER)
        if not path:
            return None
        if not path.endswith(PROJECT_SUFFIX):
            path += PROJECT_SUFFIX
        return self._guard(self.session.new_project, path)

    def open_project_dialog(self) -> Project | None:
        """Ask for a project file and open it."""
        path, _ = QFileDialog.getOpenFileName(self.panel, "Open project", self.session.settings.get("last_dir"),
                                              PROJECT_FILTER)
        return self.open_project(path) if path else None

    def open_project(self, path: str | Path) -> Project | None:
        """Open ``path`` as the current project; a named error is shown, not raised."""
        project = self._guard(self.session.open_project, path)
        if project is not None:
            self.session.settings.set("last_dir", str(Path(project.path).parent))
            self.status(f"Opened {project.path}", 5000)
        return project

    # ------------------------------------------------------------------ import / export
    def import_dialog(self, path: str | Path | None = None) -> ImportWizard | None:
        """Open the import wizard (optionally on ``path``); returns it (for tests)."""
        if self.session.project is None:
            return None
        wizard = ImportWizard(self.session.datasets, self.panel.window())
        wizard.importRequested.connect(lambda req: self.run_import(req, wizard))
        wizard.finished.connect(lambda _: setattr(self, "import_wizard", None))
        self.import_wizard = wizard
        if path:
            wizard.set_path(path)
        wizard.open()
        return wizard

    def run_import(self, request: ImportRequest, wizard: ImportWizard | None = None) -> Job:
        """Run an import as a job; on success the new dataset becomes current.

        With a ``wizard``, a failure is shown in it (in place), not in a message box.
        """
        def done(result) -> None:
            self.session.refresh_datasets(select=result.dataset.id)
            warned = f" — {len(result.warnings)} warning(s)" if result.warnings else ""
            self.status(f"Imported {result.rows:,} rows into {result.dataset.name} in {result.seconds:.1f} s"
                        f"{warned}", 8000)
            if wizard is not None:
                wizard.accept()
            if result.warnings:
                self.warnings_box = show_import_warnings(self.panel.window(), result.dataset.name,
                                                         result.warnings)

        return self.run_job(import_file, self.session.project, request.path, request.mapping, request.read_options,
                            request.options, title=f"Import {request.path.name}", kind="import",
                            busy=wizard.set_busy if wizard is not None else False, done=done,
                            failed=(lambda exc, tb: wizard.show_error(exc)) if wizard is not None else None,
                            show_errors=wizard is None)

    def import_demos_dialog(self, path: str | Path | None = None) -> DemoPairsDialog | None:
        """*File ▸ Import Demonstration Pairs…*: ask for a pair file (unless ``path``), then its columns; the import
        runs as a job into the current dataset. Returns the column dialog (for tests)."""
        project, dataset = self.session.project, self.session.dataset
        if project is None or dataset is None:
            return None
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self.panel, "Import demonstration pairs",
                                                  self.session.settings.get("last_dir"),
                                                  "Pair files (*.csv *.tsv *.jsonl *.gz);;All files (*)")
            if not path:
                return None
        header = self._guard(pair_file_header, path)
        if header is None:
            return None
        dialog = DemoPairsDialog(Path(path).name, header, guess_pair_columns(header), self.panel.window())

        def start() -> None:
            def done(result) -> None:
                self.status(f"Demonstration pairs: {result.added:,} added to {dataset.name}, {result.skipped:,} "
                            "skipped (already there, one label twice, or no pair)", 8000)

            self.run_job(import_pairs, project, dataset.id, Path(path), **dialog.columns(),
                         title=f"Import pairs {Path(path).name}", busy=False, done=done)

        dialog.accepted.connect(start)
        dialog.open()
        return dialog

    def export_dialog(self) -> Job | None:
        """Ask for a file and export the current dataset version there."""
        dataset = self.session.dataset
        if self.session.project is None or dataset is None:
            return None
        default = str(Path(self.session.settings.get("last_dir")) / f"{_safe(dataset.name)}.csv")
        raw = "CSV, raw values for programs (*.csv)"
        path, chosen = QFileDialog.getSaveFileName(
            self.panel, "Export dataset", default,
            f"CSV for spreadsheets, formulas neutralised (*.csv);;{raw};;JSON lines (*.jsonl)")
        return self.run_export(path, csv_style="raw" if chosen == raw else "spreadsheet") if path else None

    def run_export(self, path: str | Path, *, csv_style: str = "spreadsheet") -> Job | None:
        """Export the current dataset version as a job (``csv_style``: see :data:`engine.io.exporter.CSV_STYLES`)."""
        dataset = self.session.dataset
        if dataset is None:
            return None
        job = self.jobs.start(export_dataset, self.session.project, dataset.id, Path(path), csv_style=csv_style,
                              title=f"Export {dataset.name}")
        job.on_finished(lambda r: self.status(f"Exported {r.rows:,} rows to {r.path}", 8000))
        return job

    # ------------------------------------------------------------------ internals
    def _guard(self, fn, *args):
        try:
            return fn(*args)
        except CounterbiasError as exc:
            self.show_error(exc)
            return None


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_. ()" else "_" for c in name).strip() or "dataset"
