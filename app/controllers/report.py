"""Builds and exports the before/after report for the :class:`~widgets.report_panel.ReportPanel` as jobs.

*Refresh* runs :func:`engine.evaluation.report.build_report` and renders its HTML in one job
(progress and cancel in the jobs panel); the report is rebuilt when the tab is shown for a
different dataset. *Export HTML…* / *Export PDF…* write the shown report with
:mod:`engine.evaluation.report_render`, the PDF as a job. Named errors that only say there is
nothing to report yet (no candidates) are shown in the panel, not in a dialog.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from app.controllers.base import PanelController
from app.jobs import Job, JobRunner
from app.session import Session
from engine.errors import CounterbiasError
from engine.evaluation.report import Report, build_report, has_candidates
from engine.evaluation.report_render import check_target, render_html, write_html, write_pdf
from engine.progress import CancelToken, ProgressFn, scaled
from engine.store import DatasetInfo, Project
from widgets.error_dialog import show_error
from widgets.report_panel import ReportPanel

__all__ = ["ReportController", "build_and_render"]


#: What the Report tab says before a dataset has candidates.
NO_CANDIDATES = ("No candidates yet, so there is nothing to compare.\nNext: make candidates in the Counterbias tab "
                 "and accept or reject them; this tab then compares the original with the originals plus the accepted "
                 "candidates (or with an augmented version chosen under 'compare with').")


def build_and_render(project: Project, dataset_id: int, augmented_id: int | None, max_width_px: int | None = None,
                     *, progress: ProgressFn, cancel: CancelToken) -> tuple[Report, str]:
    """The report of a dataset and its HTML with plots at most ``max_width_px`` wide (the job *Refresh* runs)."""
    report = build_report(project, dataset_id, augmented_id=augmented_id, progress=scaled(progress, 0.0, 0.85),
                          cancel=cancel)
    cancel.raise_if_cancelled()
    progress(0.85, "drawing the plots")
    text = render_html(report, max_width_px=max_width_px)
    progress(1.0, "report ready")
    return report, text


def _write_pdf(report: Report, path: Path, project: Path | None, *, progress: ProgressFn,
               cancel: CancelToken) -> Path:
    progress(0.0, f"writing {path.name}")
    return write_pdf(report, path, project=project)


def _write_html(report: Report, path: Path, project: Path | None, *, progress: ProgressFn,
                cancel: CancelToken) -> Path:
    progress(0.0, f"writing {path.name}")
    return write_html(report, path, project=project)


class ReportController(PanelController):
    """Refreshes the report of the session's dataset and exports it."""

    panel: ReportPanel

    def __init__(self, session: Session, jobs: JobRunner, panel: ReportPanel) -> None:
        super().__init__(session, jobs, panel)
        #: The report shown, and its HTML.
        self.report: Report | None = None
        self.html: str | None = None
        self._built_for: tuple[int, int | None] | None = None
        panel.refreshRequested.connect(self.refresh)
        panel.exportRequested.connect(self.export_dialog)
        session.datasetChanged.connect(self.dataset_changed)
        session.datasetsChanged.connect(lambda _: self.dataset_changed(session.dataset))

    def dataset_changed(self, dataset: DatasetInfo | None) -> None:
        """Offer ``dataset``'s augmented versions; the shown report is dropped (it was another dataset's)."""
        same = dataset is not None and self._built_for is not None and self._built_for[0] == dataset.id
        if same:  # e.g. a version was added: offer it, keep what is shown
            self.panel.set_dataset(dataset, self.session.datasets, keep_report=True)
            return
        self.report, self.html, self._built_for = None, None, None
        self.panel.set_dataset(dataset, self.session.datasets)
        if dataset is not None and self.is_shown():
            self.refresh()

    def panel_shown(self) -> None:
        dataset = self.session.dataset
        if dataset is not None and (self._built_for is None or self._built_for[0] != dataset.id):
            self.refresh()

    def refresh(self) -> Job | None:
        """Build the report of the session's dataset as a job (a newer request cancels a running one)."""
        dataset, project = self.session.dataset, self.session.project
        if dataset is None or project is None:
            return None
        augmented = self.panel.augmented_id()
        key = (dataset.id, augmented)
        if augmented is None and not has_candidates(project, dataset.id):  # an empty state, not a failed job
            self._built_for, self.report, self.html = key, None, None
            self.panel.show_message(NO_CANDIDATES)
            return None
        self._built_for = key
        self.panel.set_busy(True)
        job = self.jobs.start(build_and_render, project, dataset.id, augmented, self.panel.content_width(), title=f"Report of {dataset.name}",
                              kind="report", when_busy="cancel", report_errors=False)

        def done(result: tuple[Report, str]) -> None:
            if self._built_for != key:
                return  # superseded
            self.report, self.html = result
            self.panel.show_report(f"{self.report.title} — built {self.report.created_at[11:19]}", self.html)
            self.status(f"report of {dataset.name} ready", 6000)

        def failed(exc: BaseException, traceback_text: str) -> None:
            if self._built_for != key:
                return
            self._built_for = None
            self.report, self.html = None, None
            if isinstance(exc, CounterbiasError):
                self.panel.show_message(str(exc))
            else:
                self.panel.show_message("The report could not be built (see the error).")
                show_error(self.panel, exc, traceback_text).open()

        def cancelled() -> None:
            if self._built_for == key:
                self._built_for = None
                self.panel.show_message("Report cancelled: press Refresh to build it.")

        job.on_finished(done)
        job.on_failed(failed)
        job.on_cancelled(cancelled)
        return job

    def export_dialog(self, kind: str) -> Path | None:
        """Ask for a file and export the shown report as ``kind`` (``"html"`` or ``"pdf"``)."""
        if self.report is None:
            return None
        name = f"report-{self.report.dataset.name}.{kind}".replace("/", "_")
        start = str(Path(self.session.settings.get("last_dir") or Path.home()) / name)
        path, _ = QFileDialog.getSaveFileName(self.panel, f"Export the report as {kind.upper()}", start,
                                              f"{kind.upper()} (*.{kind})")
        if not path:
            return None
        self.export(kind, path)
        return Path(path)

    def export(self, kind: str, path: str | Path) -> Job | None:
        """Write the shown report to ``path`` as a job (full-resolution plots, whatever the panel's width)."""
        if self.report is None:
            return None
        path = Path(path)
        project = self.session.project.path if self.session.project is not None else None
        try:
            check_target(path, project=project)  # never the project, its folder, a device or a link
        except CounterbiasError as exc:
            self.show_error(exc)
            return None
        write = _write_pdf if kind == "pdf" else _write_html
        job = self.jobs.start(write, self.report, path, project, title=f"Report {kind.upper()} {path.name}",
                              kind="report-export")
        job.on_finished(lambda written: self.status(f"wrote {written}", 8000))
        return job

