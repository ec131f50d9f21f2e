"""The main window: a thin composition root.

It lays out the views (datasets, examples, detail, jobs), owns the menus, and routes user
actions to engine functions run as jobs. It computes nothing itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QFileDialog,
    QMainWindow,
    QMenu,
    QTableView,
    QTabWidget,
    QWidget,
)

from app.jobs import JobRunner
from app.session import Session
from app.settings import Settings
from app.importance_controller import ImportanceController
from app.review_controller import ReviewController
from app.stats_controller import StatsController
from engine.errors import CounterbiasError
from engine.io import export_dataset, import_file
from engine.store import PROJECT_SUFFIX, DatasetInfo
from widgets.detail_pane import DetailPane
from widgets.error_dialog import show_error
from widgets.examples_view import ExamplesView
from widgets.import_wizard import ImportRequest, ImportWizard
from widgets.importance_panel import ImportancePanel
from widgets.jobs_panel import JobsPanel
from widgets.review_panel import ReviewPanel
from widgets.models.datasets_model import DatasetsTableModel
from widgets.stats_panel import StatsPanel

DatasetIdRole = DatasetsTableModel.DatasetIdRole

PROJECT_FILTER = f"Counterbias Studio project (*{PROJECT_SUFFIX});;All files (*)"


class MainWindow(QMainWindow):
    """Counterbias Studio's main window."""

    def __init__(self, settings: Settings | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings or Settings()
        self.session = Session(self.settings, self)
        self.jobs = JobRunner(parent=self)
        self.current_dataset: DatasetInfo | None = None
        self.import_wizard: ImportWizard | None = None
        self.setWindowTitle("Counterbias Studio")
        self.resize(1400, 860)

        self.examples = ExamplesView(self, debounce_ms=self.settings.get("search_debounce_ms"))
        self.stats_panel = StatsPanel(self)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.examples, "Examples")
        self.tabs.addTab(self.stats_panel, "Bias statistics")
        self.importance_panel = ImportancePanel(self)
        self.tabs.addTab(self.importance_panel, "Word importance")
        self.review_panel = ReviewPanel(self)
        self.tabs.addTab(self.review_panel, "Counterbias")
        self.setCentralWidget(self.tabs)
        self.stats = StatsController(self, self.stats_panel)
        self.importance = ImportanceController(self, self.importance_panel)
        self.review = ReviewController(self, self.review_panel)
        self.tabs.currentChanged.connect(self._tab_changed)
        self.detail = DetailPane(self)
        self.jobs_panel = JobsPanel(self.jobs.model, cancel=self.jobs.cancel, parent=self)
        self.datasets_model = DatasetsTableModel(self)
        self.datasets_proxy = QSortFilterProxyModel(self)
        self.datasets_proxy.setSourceModel(self.datasets_model)
        self.datasets_view = QTableView()
        self.datasets_view.setObjectName("datasetsTable")
        self.datasets_view.setModel(self.datasets_proxy)
        self.datasets_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.datasets_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.datasets_view.setSortingEnabled(True)
        self.datasets_view.verticalHeader().hide()
        self.datasets_view.horizontalHeader().setStretchLastSection(True)

        left = self._dock("Datasets", self.datasets_view, Qt.DockWidgetArea.LeftDockWidgetArea)
        right = self._dock("Example", self.detail, Qt.DockWidgetArea.RightDockWidgetArea)
        bottom = self._dock("Jobs", self.jobs_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.resizeDocks([left, right], [330, 360], Qt.Orientation.Horizontal)
        self.resizeDocks([bottom], [150], Qt.Orientation.Vertical)
        self._build_menus()

        self.session.projectChanged.connect(self._project_changed)
        self.session.datasetsChanged.connect(self._datasets_changed)
        self.datasets_view.selectionModel().currentRowChanged.connect(self._dataset_selected)
        self.examples.exampleSelected.connect(self._example_selected)
        self.jobs.failed.connect(self._job_failed)
        self._restore_layout()
        self._update_actions()
        self.statusBar().showMessage("Open or create a project to begin.")

    # ------------------------------------------------------------------ layout
    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{title.lower()}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _action(self, text: str, slot: Any, shortcut: QKeySequence | str | None = None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        return action

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self.new_action = self._action("&New Project…", self.new_project_dialog, QKeySequence.StandardKey.New)
        self.open_action = self._action("&Open Project…", self.open_project_dialog, QKeySequence.StandardKey.Open)
        self.recent_menu = QMenu("Open &Recent", self)
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self.import_action = self._action("&Import Dataset…", self.import_dialog, "Ctrl+I")
        self.export_action = self._action("&Export Dataset…", self.export_dialog, "Ctrl+E")
        self.quit_action = self._action("&Quit", self.close, QKeySequence.StandardKey.Quit)
        file_menu.addActions([self.new_action, self.open_action])
        file_menu.addMenu(self.recent_menu)
        file_menu.addSeparator()
        file_menu.addActions([self.import_action, self.export_action])
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        edit_menu = self.menuBar().addMenu("&Edit")
        self.undo_action = self.review.undo_stack.createUndoAction(self, "&Undo")
        self.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
        self.redo_action = self.review.undo_stack.createRedoAction(self, "&Redo")
        self.redo_action.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence.StandardKey.Redo])
        edit_menu.addActions([self.undo_action, self.redo_action])
        find = self._action("Find", lambda: self.examples.search.setFocus(), QKeySequence.StandardKey.Find)
        self.addAction(find)
        view_menu = self.menuBar().addMenu("&View")
        for dock in self.findChildren(QDockWidget):
            view_menu.addAction(dock.toggleViewAction())

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        recent = self.settings.recent_projects()
        if not recent:
            self.recent_menu.addAction("No recent projects").setEnabled(False)
        for path in recent:
            self.recent_menu.addAction(path, lambda p=path: self.open_project(p))

    def _update_actions(self) -> None:
        has_project = self.session.project is not None
        self.import_action.setEnabled(has_project)
        self.export_action.setEnabled(has_project and self.current_dataset is not None)

    # ------------------------------------------------------------------ projects
    def new_project_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "New project", self.settings.get("last_dir"), PROJECT_FILTER)
        if path:
            if not path.endswith(PROJECT_SUFFIX):
                path += PROJECT_SUFFIX
            self._guard(self.session.new_project, path)

    def open_project_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open project", self.settings.get("last_dir"), PROJECT_FILTER)
        if path:
            self.open_project(path)

    def open_project(self, path: str | Path) -> bool:
        """Open ``path`` as the current project; errors are shown, not raised."""
        return self._guard(self.session.open_project, path) is not None

    def _project_changed(self, project: Any) -> None:
        if project is None:
            self.setWindowTitle("Counterbias Studio")
            return
        self.settings.set("last_dir", str(Path(project.path).parent))
        self.setWindowTitle(f"{Path(project.path).name} — Counterbias Studio")
        self.statusBar().showMessage(f"Opened {project.path}", 5000)

    def _datasets_changed(self, datasets: list[DatasetInfo]) -> None:
        keep = self.current_dataset.id if self.current_dataset else None
        self.datasets_model.set_rows(datasets)
        target = next((d for d in datasets if d.id == keep), datasets[-1] if datasets else None)
        if target is None:
            self.show_dataset(None)
        else:
            self.select_dataset(target.id)
        self._update_actions()

    def select_dataset(self, dataset_id: int) -> None:
        """Select a dataset in the list (which shows it in the table)."""
        for row in range(self.datasets_proxy.rowCount()):
            index = self.datasets_proxy.index(row, 0)
            if index.data(DatasetIdRole) == dataset_id:
                self.datasets_view.setCurrentIndex(index)
                self.datasets_view.selectRow(row)
                if self.current_dataset is None or self.current_dataset.id != dataset_id:
                    self._dataset_selected(index, QModelIndex())
                return

    def _dataset_selected(self, current: QModelIndex, previous: QModelIndex) -> None:
        dataset_id = current.data(DatasetIdRole) if current.isValid() else None
        project = self.session.project
        dataset = next((d for d in self.session.datasets if d.id == dataset_id), None)
        if dataset is not None and self.current_dataset is not None and dataset == self.current_dataset:
            return
        self.show_dataset(dataset if project else None)

    def show_dataset(self, dataset: DatasetInfo | None) -> None:
        self.current_dataset = dataset
        self.examples.show_dataset(self.session.project, dataset)
        self.detail.show_example(None, dataset.labels if dataset else [])
        if dataset is not None and self.examples.model.rowCount():
            self.examples.table.selectRow(0)
        self.stats.dataset_changed(dataset)
        self.importance.dataset_changed(dataset)
        self.review.dataset_changed(dataset)
        self._update_actions()

    def show_examples_tab(self) -> None:
        self.tabs.setCurrentWidget(self.examples)

    def show_stats_tab(self) -> None:
        self.tabs.setCurrentWidget(self.stats_panel)

    def _example_selected(self, row: dict | None) -> None:
        self.detail.show_example(row, self.current_dataset.labels if self.current_dataset else [])
        self.importance.example_selected(row)
        self.review.example_selected(row)

    def _tab_changed(self, index: int) -> None:
        if self.tabs.widget(index) is self.importance_panel:
            self.importance.refresh_example()
        elif self.tabs.widget(index) is self.review_panel:
            self.review.refresh()

    def show_importance_tab(self) -> None:
        self.tabs.setCurrentWidget(self.importance_panel)

    def show_review_tab(self) -> None:
        self.tabs.setCurrentWidget(self.review_panel)

    # ------------------------------------------------------------------ import / export
    def import_dialog(self, path: str | Path | None = None) -> ImportWizard | None:
        """Open the import wizard (optionally on ``path``); returns it (for tests)."""
        if self.session.project is None:
            return None
        wizard = ImportWizard(self.session.datasets, self)
        wizard.importRequested.connect(lambda req: self.run_import(req, wizard))
        wizard.finished.connect(lambda _: setattr(self, "import_wizard", None))
        self.import_wizard = wizard
        if path:
            wizard.set_path(path)
        wizard.open()
        return wizard

    def run_import(self, request: ImportRequest, wizard: ImportWizard | None = None) -> Any:
        """Run an import as a job; on success refresh and show the new dataset."""
        project = self.session.project
        job = self.jobs.start(
            import_file,
            project,
            request.path,
            request.mapping,
            request.read_options,
            request.options,
            title=f"Import {request.path.name}",
        )

        def done(result: Any) -> None:
            self.session.refresh_datasets()
            self.select_dataset(result.dataset.id)
            self.statusBar().showMessage(
                f"Imported {result.rows:,} rows into {result.dataset.name} in {result.seconds:.1f} s", 8000
            )
            if wizard is not None:
                wizard.accept()

        job.on_finished(done)
        if wizard is not None:
            job.on_failed(lambda exc, tb: wizard.show_error(exc))
            job.on_cancelled(lambda: wizard.set_busy(False))
            job.silent_failure = True
        return job

    def export_dialog(self) -> None:
        if self.session.project is None or self.current_dataset is None:
            return
        default = str(Path(self.settings.get("last_dir")) / f"{_safe(self.current_dataset.name)}.csv")
        path, _ = QFileDialog.getSaveFileName(
            self, "Export dataset", default, "CSV (*.csv);;JSON lines (*.jsonl)"
        )
        if path:
            self.run_export(path)

    def run_export(self, path: str | Path) -> Any:
        """Export the shown dataset version as a job."""
        dataset = self.current_dataset
        job = self.jobs.start(export_dataset, self.session.project, dataset.id, Path(path),
                              title=f"Export {dataset.name}")
        job.on_finished(
            lambda r: self.statusBar().showMessage(f"Exported {r.rows:,} rows to {r.path}", 8000)
        )
        return job

    # ------------------------------------------------------------------ errors and shutdown
    def _guard(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except CounterbiasError as exc:
            show_error(self, exc).open()
            return None

    def _job_failed(self, job: Any, exc: BaseException, traceback_text: str) -> None:
        if getattr(job, "silent_failure", False):
            return
        show_error(self, exc, traceback_text).open()

    def _restore_layout(self) -> None:
        geometry = self.settings.get("window_geometry")
        if not geometry.isEmpty():
            self.restoreGeometry(geometry)
        state = self.settings.get("window_state")
        if not state.isEmpty():
            self.restoreState(state)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        self.jobs.shutdown()
        self.settings.set("window_geometry", self.saveGeometry())
        self.settings.set("window_state", self.saveState())
        self.settings.sync()
        self.session.close_project()
        super().closeEvent(event)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_. ()" else "_" for c in name).strip() or "dataset"
