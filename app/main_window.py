"""The main window: the composition root.

It creates the session, the job runner, the panels and their controllers, lays them out
and connects them; it computes nothing and holds no state of its own. Controllers never see
the window: they ask for navigation through their signals, which are connected here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QAction, QCloseEvent, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu, QMessageBox, QTabWidget, QWidget

from app.controllers import (
    AnnotationController,
    ImportanceController,
    ProjectController,
    ReportController,
    ReviewController,
    StatsController,
)
from app.jobs import Job, JobRunner
from app.session import Session
from app.settings import Settings
from engine.store import DatasetInfo, Project
from widgets.annotation_panel import AnnotationPanel
from widgets.datasets_view import DatasetsView
from widgets.detail_pane import DetailPane
from widgets.error_dialog import show_error
from widgets.examples_view import ExamplesView
from widgets.help_dialogs import HelpSheet, glossary_html, shortcuts_html
from widgets.import_wizard import ImportWizard
from widgets.importance_panel import ImportancePanel
from widgets.jobs_panel import JobsPanel
from widgets.report_panel import ReportPanel
from widgets.review_panel import ReviewPanel
from widgets.stats_panel import StatsPanel

__all__ = ["MainWindow", "fit_within"]

#: Qt platforms without a real screen (tests, screenshots): the window keeps its default size there.
HEADLESS_PLATFORMS = ("offscreen", "minimal")


class MainWindow(QMainWindow):
    """Counterbias Studio's main window.

    Parameters
    ----------
    settings
        Application settings (a new :class:`Settings` if omitted).
    parent
        Parent widget.
    """

    def __init__(self, settings: Settings | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings or Settings()
        self.session = Session(self.settings, self)
        self.jobs = JobRunner(parent=self)
        #: Whether closing with jobs running asks first (not on a headless platform: nobody would answer).
        self.ask_before_quit = QGuiApplication.platformName() not in HEADLESS_PLATFORMS
        self.setWindowTitle("Counterbias Studio")

        # views
        self.examples = ExamplesView(self, debounce_ms=self.settings.get("search_debounce_ms"))
        self.stats_panel = StatsPanel(self)
        self.importance_panel = ImportancePanel(self)
        self.review_panel = ReviewPanel(self)
        self.report_panel = ReportPanel(self)
        self.annotation_panel = AnnotationPanel(self)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.examples, "Examples")
        self.tabs.addTab(self.stats_panel, "Bias statistics")
        self.tabs.addTab(self.importance_panel, "Word importance")
        self.tabs.addTab(self.review_panel, "Counterbias")
        self.tabs.addTab(self.report_panel, "Report")
        self.tabs.addTab(self.annotation_panel, "Annotate")
        self.setCentralWidget(self.tabs)
        self.datasets_view = DatasetsView(self)
        self.detail = DetailPane(self)
        self.jobs_panel = JobsPanel(self.jobs.model, cancel=self.jobs.cancel, parent=self)
        left = self._dock("Datasets", self.datasets_view, Qt.DockWidgetArea.LeftDockWidgetArea)
        right = self._dock("Example", self.detail, Qt.DockWidgetArea.RightDockWidgetArea)
        bottom = self._dock("Jobs", self.jobs_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.resizeDocks([left, right], [330, 360], Qt.Orientation.Horizontal)
        self.resizeDocks([bottom], [150], Qt.Orientation.Vertical)

        # controllers: each knows the session, the runner and its panel
        self.projects = ProjectController(self.session, self.jobs, self.datasets_view)
        self.stats = StatsController(self.session, self.jobs, self.stats_panel)
        self.importance = ImportanceController(self.session, self.jobs, self.importance_panel)
        self.review = ReviewController(self.session, self.jobs, self.review_panel)
        self.report = ReportController(self.session, self.jobs, self.report_panel)
        self.annotation = AnnotationController(self.session, self.jobs, self.annotation_panel)
        for controller in (self.projects, self.stats, self.importance, self.review, self.report, self.annotation):
            controller.showExamples.connect(self.show_examples)
            controller.statusMessage.connect(self.statusBar().showMessage)

        # the session drives the shared views
        self.session.projectChanged.connect(self._project_changed)
        self.session.datasetChanged.connect(self._dataset_changed)
        self.session.exampleChanged.connect(self._example_changed)
        self.examples.exampleSelected.connect(self.session.set_example)
        self.examples.idsSelected.connect(self.session.set_selection)
        self.jobs.failed.connect(self._job_failed)
        self.session.waiting.connect(lambda message: self.statusBar().showMessage(message, 12_000))

        self._build_menus()
        self._restore_layout()
        self._update_actions()
        self.statusBar().showMessage("Open or create a project to begin.")

    # ------------------------------------------------------------------ composition helpers
    @property
    def current_dataset(self) -> DatasetInfo | None:
        """The session's current dataset version."""
        return self.session.dataset

    def open_project(self, path: str | Path) -> Project | None:
        """Open ``path`` (errors are shown, not raised); the project, or ``None``."""
        return self.projects.open_project(path)

    def import_dialog(self, path: str | Path | None = None) -> ImportWizard | None:
        """Open the import wizard (optionally on ``path``); returns it (for tests)."""
        return self.projects.import_dialog(path)

    def run_export(self, path: str | Path) -> Job | None:
        """Export the current dataset version to ``path`` as a job."""
        return self.projects.run_export(path)

    def select_dataset(self, dataset_id: int) -> None:
        """Make a dataset version current."""
        self.session.set_dataset(dataset_id)

    def show_examples(self, ids: list[int], caption: str) -> None:
        """List only ``ids`` in the Examples tab and show it (a controller's ``showExamples``)."""
        self.examples.set_example_filter(ids, caption)
        self.examples.model.set_label_filter(None)
        self.show_examples_tab()

    def show_examples_tab(self) -> None:
        self.tabs.setCurrentWidget(self.examples)

    def show_stats_tab(self) -> None:
        self.tabs.setCurrentWidget(self.stats_panel)

    def show_importance_tab(self) -> None:
        self.tabs.setCurrentWidget(self.importance_panel)

    def show_review_tab(self) -> None:
        self.tabs.setCurrentWidget(self.review_panel)

    def show_report_tab(self) -> None:
        self.tabs.setCurrentWidget(self.report_panel)

    def show_annotation_tab(self) -> None:
        self.tabs.setCurrentWidget(self.annotation_panel)

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
        self.new_action = self._action("&New Project…", self.projects.new_project_dialog,
                                       QKeySequence.StandardKey.New)
        self.open_action = self._action("&Open Project…", self.projects.open_project_dialog,
                                        QKeySequence.StandardKey.Open)
        self.recent_menu = QMenu("Open &Recent", self)
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self.import_action = self._action("&Import Dataset…", lambda: self.projects.import_dialog(), "Ctrl+I")
        self.export_action = self._action("&Export Dataset…", self.projects.export_dialog, "Ctrl+E")
        self.import_demos_action = self._action("Import &Demonstration Pairs…",
                                                lambda: self.projects.import_demos_dialog())
        self.quit_action = self._action("&Quit", self.close, QKeySequence.StandardKey.Quit)
        file_menu.addActions([self.new_action, self.open_action])
        file_menu.addMenu(self.recent_menu)
        file_menu.addSeparator()
        file_menu.addActions([self.import_action, self.import_demos_action, self.export_action])
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
        help_menu = self.menuBar().addMenu("&Help")
        self.shortcuts_action = self._action("&Keyboard Shortcuts", self.show_shortcuts, "F1")
        self.glossary_action = self._action("&Glossary", self.show_glossary)
        help_menu.addActions([self.shortcuts_action, self.glossary_action])

    def show_shortcuts(self) -> HelpSheet:
        """Help ▸ Keyboard Shortcuts: every menu action with a shortcut, and the review keys."""
        actions = [a for menu in self.menuBar().findChildren(QMenu) for a in menu.actions()] + self.actions()
        sheet = HelpSheet("Keyboard shortcuts", shortcuts_html(dict.fromkeys(actions)), self)
        sheet.open()
        return sheet

    def show_glossary(self) -> HelpSheet:
        """Help ▸ Glossary: the statistics and options the tabs name."""
        sheet = HelpSheet("Glossary", glossary_html(), self)
        sheet.open()
        return sheet

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        recent = self.settings.recent_projects()
        if not recent:
            self.recent_menu.addAction("No recent projects").setEnabled(False)
        for path in recent:
            self.recent_menu.addAction(path, lambda p=path: self.open_project(p))

    def _update_actions(self) -> None:
        self.import_action.setEnabled(self.session.project is not None)
        self.export_action.setEnabled(self.session.project is not None and self.session.dataset is not None)
        self.import_demos_action.setEnabled(self.session.project is not None and self.session.dataset is not None)

    # ------------------------------------------------------------------ session → shared views
    def _project_changed(self, project: Project | None) -> None:
        title = "Counterbias Studio" if project is None else f"{Path(project.path).name} — Counterbias Studio"
        self.setWindowTitle(title)
        self._update_actions()

    def _dataset_changed(self, dataset: DatasetInfo | None) -> None:
        self.examples.show_dataset(self.session.project, dataset)
        self.detail.show_example(None, dataset.labels if dataset else [])
        if dataset is not None and self.examples.model.rowCount():
            self.examples.table.selectRow(0)
        self._update_actions()

    def _example_changed(self, row: dict | None) -> None:
        dataset = self.session.dataset
        self.detail.show_example(row, dataset.labels if dataset else [])

    def _job_failed(self, job: Job, exc: BaseException, traceback_text: str) -> None:
        if job.report_errors:
            show_error(self, exc, traceback_text).open()

    # ------------------------------------------------------------------ geometry
    def _restore_layout(self) -> None:
        """Restore the saved geometry if it fits the screen; else open maximised on first run."""
        geometry = self.settings.get("window_geometry")
        restored = not geometry.isEmpty() and self.restoreGeometry(geometry)
        screen = (self.screen() or QGuiApplication.primaryScreen())
        available = screen.availableGeometry() if screen is not None else None
        if available is not None and restored:
            self.setGeometry(fit_within(self.geometry(), available))
        elif available is not None:
            self.resize(min(1400, available.width()), min(860, available.height()))
            if QGuiApplication.platformName() not in HEADLESS_PLATFORMS:
                self.setWindowState(self.windowState() | Qt.WindowState.WindowMaximized)
        state = self.settings.get("window_state")
        if not state.isEmpty():
            self.restoreState(state)

    def confirm_quit(self, running: list[Job]) -> bool:
        """Ask before quitting while jobs run (tests replace this method; it never asks without jobs)."""
        names = "\n".join(f"• {job.title} ({job.fraction:.0%})" for job in running[:6])
        more = f"\n… and {len(running) - 6} more" if len(running) > 6 else ""
        answer = QMessageBox.question(
            self, "Quit Counterbias Studio?",
            f"{len(running)} job{'s are' if len(running) != 1 else ' is'} still running:\n{names}{more}\n\n"
            "Quitting cancels them. What they finished is stored in the project, and running them again goes on "
            "from there.",
            QMessageBox.StandardButton.Cancel | QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.Cancel)
        return answer == QMessageBox.StandardButton.Yes

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        running = self.jobs.active_jobs()
        if running and self.ask_before_quit:
            if not self.confirm_quit(running):
                event.ignore()
                return
        self.jobs.shutdown()
        self.settings.set("window_geometry", self.saveGeometry())
        self.settings.set("window_state", self.saveState())
        self.settings.sync()
        self.session.close_project()
        super().closeEvent(event)


def fit_within(rect: QRect, available: QRect) -> QRect:
    """``rect`` shrunk to at most ``available``'s size and moved inside it.

    Examples
    --------
    >>> r = fit_within(QRect(-50, 10, 2400, 900), QRect(0, 0, 1600, 1000))
    >>> (r.x(), r.y(), r.width(), r.height())
    (0, 10, 1600, 900)
    """
    width, height = min(rect.width(), available.width()), min(rect.height(), available.height())
    x = min(max(rect.x(), available.x()), available.x() + available.width() - width)
    y = min(max(rect.y(), available.y()), available.y() + available.height() - height)
    return QRect(x, y, width, height)
