"""Application entry point: ``python -m app`` or the ``counterbias-studio`` script."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="counterbias-studio", description="Counterbias Studio (GUI).")
    parser.add_argument("project", nargs="?", type=Path, help="project file to open (.cbproj)")
    parser.add_argument("--demo", action="store_true",
                        help="open the bundled demo project (created on first use, no network)")
    parser.add_argument("--screenshot", type=Path, metavar="PNG",
                        help="save a screenshot of the main window once it is shown, then quit")
    parser.add_argument("--stats", action="store_true",
                        help="show the bias statistics of the opened dataset (computed as a job)")
    parser.add_argument("--importance", action="store_true",
                        help="show the word-importance tab (with --row: the example to highlight)")
    parser.add_argument("--review", action="store_true",
                        help="show the Counterbias tab (with --row: the example to review)")
    parser.add_argument("--report", action="store_true",
                        help="show the Report tab (the before/after report of the opened dataset, built as a job)")
    parser.add_argument("--dataset", metavar="NAME", help="dataset (name or id) to open instead of the first one")
    parser.add_argument("--row", type=int, default=0, help="row of the dataset table to select (default 0)")
    parser.add_argument("--exit-after", type=int, metavar="MS", help="quit after MS milliseconds")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Start the GUI and return its exit code."""
    args = build_parser().parse_args(argv)
    from app.display_check import display_problem
    from engine.errors import EXIT_USER_ERROR

    problem = display_problem()
    if problem is not None:
        print(problem, file=sys.stderr)
        return EXIT_USER_ERROR
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Counterbias Studio")
    app.setOrganizationName("Counterbias Studio")
    window = MainWindow()
    window.show()
    path = args.project
    if args.demo and path is None:
        from engine.demo import ensure_demo_project

        path = ensure_demo_project()
    if path is not None:
        window.open_project(path)
    if args.dataset is not None and window.session.project is not None:
        from engine.errors import CounterbiasError

        try:
            found = window.session.project.dataset(int(args.dataset) if args.dataset.isdigit() else args.dataset)
        except CounterbiasError as exc:
            print(f"error: {exc}", file=sys.stderr)
            window.close()
            return EXIT_USER_ERROR
        window.select_dataset(found.id)
    if args.stats:
        window.show_stats_tab()
        window.stats.compute()
    if args.importance:
        window.examples.table.selectRow(args.row)
        window.show_importance_tab()
    if args.review:
        window.examples.table.selectRow(args.row)
        window.show_review_tab()
    if args.report:
        window.show_report_tab()
    if args.screenshot is not None:
        def grab() -> None:
            if window.jobs.is_busy:  # wait for the jobs started above
                QTimer.singleShot(200, grab)
                return
            from engine.errors import CounterbiasError
            from engine.io.output import output_path

            project = window.session.project
            try:
                with output_path(args.screenshot, project=project.path if project else None,
                                 what="the screenshot") as part:
                    if not window.grab().save(str(part), "PNG"):
                        raise OSError(f"Qt could not write {args.screenshot}")
            except (CounterbiasError, OSError) as exc:
                print(f"error: {exc}", file=sys.stderr)
            window.close()
        QTimer.singleShot(1500, grab)
    if args.exit_after is not None:
        QTimer.singleShot(args.exit_after, window.close)
    code = app.exec()
    return int(code)
