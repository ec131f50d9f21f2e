"""The application context: session state and signals, window geometry, the display check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QRect, QSettings

from app.display_check import debian_package, display_problem
from app.main_window import MainWindow, fit_within
from app.session import Session
from app.settings import Settings
from engine.demo import ensure_demo_project
from engine.io import ImportOptions, import_file

ROOT = Path(__file__).resolve().parents[2]


def _csv(path: Path, n: int) -> Path:
    path.write_text("text,label\n" + "".join(f"row {i} text,{'pos' if i % 2 else 'neg'}\n" for i in range(n)))
    return path


def test_session_signals_follow_project_dataset_example_and_selection(qtbot, tmp_path):
    session = Session(Settings())
    seen: list[tuple[str, object]] = []
    session.projectChanged.connect(lambda p: seen.append(("project", p is not None)))
    session.datasetsChanged.connect(lambda ds: seen.append(("datasets", len(ds))))
    session.datasetChanged.connect(lambda d: seen.append(("dataset", d.name if d else None)))
    session.exampleChanged.connect(lambda e: seen.append(("example", e["id"] if e else None)))
    session.selectionChanged.connect(lambda ids: seen.append(("selection", ids)))

    project = session.new_project(tmp_path / "p.cbproj")
    assert seen == [("project", True), ("datasets", 0), ("dataset", None)] or seen == [("project", True),
                                                                                      ("datasets", 0)]
    first = import_file(project, _csv(tmp_path / "a.csv", 4), options=ImportOptions(name="a")).dataset
    seen.clear()
    session.refresh_datasets()
    assert seen == [("datasets", 1), ("dataset", "a")]
    assert session.dataset.id == first.id

    row = project.examples([1])[0]
    seen.clear()
    session.set_example(row)
    session.set_selection([1, 2])
    session.set_selection([1, 2])  # unchanged: no signal
    assert seen == [("example", 1), ("selection", [1, 2])]
    assert session.selected_or_current() == [1, 2]

    # a new version: listed, the current one stays current unless asked
    second = import_file(project, _csv(tmp_path / "b.csv", 2), options=ImportOptions(name="b")).dataset
    seen.clear()
    session.refresh_datasets()
    assert seen == [("datasets", 2)] and session.dataset.id == first.id and session.example_id == 1
    seen.clear()
    session.refresh_datasets(select=second.id)
    # the example and selection are cleared before the new dataset is announced
    assert seen == [("datasets", 2), ("example", None), ("selection", []), ("dataset", "b")]
    assert session.selected_or_current() == []
    session.set_dataset(second.id)  # already current: nothing
    assert seen[-1] == ("dataset", "b") and len(seen) == 4

    seen.clear()
    session.close_project()
    assert session.project is None and session.dataset is None
    assert seen == [("project", False), ("datasets", 0), ("dataset", None)]


def test_every_panel_follows_the_sessions_example(qtbot, tmp_path):
    window = MainWindow(Settings())
    qtbot.addWidget(window)
    window.show()
    window.open_project(ensure_demo_project(tmp_path / "demo.cbproj"))
    window.show_review_tab()
    window.examples.table.selectRow(2)
    example_id = window.examples.model.example_id_at(2)
    assert window.session.example_id == example_id
    assert window.detail.example["id"] == example_id
    assert window.session.selected_or_current() == [example_id]
    # the review panel shows that example (its text), without a click in its own tab
    assert window.review_panel._example_id == example_id
    assert f"Example {example_id}</b>" in window.review_panel.example_label.text()
    # switching tabs shows the same example in the Word importance tab (no ensemble yet: it says so)
    window.show_importance_tab()
    assert "Train an ensemble first" in window.importance_panel.sentence.toPlainText()
    # a controller asks for navigation through a signal; the window shows the examples tab
    window.importance.showExamples.emit([example_id], "one example")
    assert window.tabs.currentWidget() is window.examples
    assert window.examples.model.rowCount() == 1
    window.close()


def test_fit_within_keeps_the_window_on_the_screen():
    screen = QRect(0, 0, 1600, 1000)
    assert fit_within(QRect(100, 100, 1400, 850), screen) == QRect(100, 100, 1400, 850)
    r = fit_within(QRect(900, -30, 2400, 1300), screen)
    assert (r.x(), r.y(), r.width(), r.height()) == (0, 0, 1600, 1000)
    r = fit_within(QRect(700, 500, 1000, 600), screen)
    assert r.right() <= screen.right() and r.bottom() <= screen.bottom() and r.size() == QRect(0, 0, 1000, 600).size()


def test_restored_geometry_wider_than_the_screen_is_fitted(qtbot, tmp_path):
    settings = Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    first = MainWindow(settings)
    qtbot.addWidget(first)
    first.setGeometry(-40, 20, 5000, 3000)  # e.g. saved on a larger monitor
    settings.set("window_geometry", first.saveGeometry())
    first.close()
    window = MainWindow(settings)
    qtbot.addWidget(window)
    available = window.screen().availableGeometry()
    geometry = window.geometry()
    assert geometry.width() <= available.width() and geometry.height() <= available.height()
    assert available.contains(geometry.topLeft())


def test_display_check_names_the_packages_to_install():
    missing = lambda: ["libxcb-cursor.so.0", "libxkbcommon-x11.so.0"]  # noqa: E731
    env = {"DISPLAY": ":0"}
    line = display_problem(env, "linux", missing)
    assert line is not None and "\n" not in line
    assert "sudo apt-get install libxcb-cursor0 libxkbcommon-x11-0" in line
    assert "xcb-util-cursor" in line  # Fedora/Arch equivalents
    assert display_problem(env, "linux", lambda: []) is None
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux", missing) is None
    assert display_problem(env, "darwin", missing) is None
    assert "DISPLAY" in display_problem({}, "linux", missing)
    assert debian_package("libX11-xcb.so.1") == "libx11-xcb1"


def test_gui_without_a_display_prints_one_line_and_exits_3(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    env["COUNTERBIAS_HOME"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "app", "--demo"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 3
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot open a window" in lines[0] and "QT_QPA_PLATFORM=offscreen" in lines[0]


def test_a_write_waiting_for_another_process_is_shown_in_the_status_bar(qtbot, tmp_path):
    import threading

    window = MainWindow(Settings())
    qtbot.addWidget(window)
    window.show()
    project = window.session.new_project(tmp_path / "p.cbproj")
    message = "waiting for the project (another process is writing)"
    # the writer reports from its own thread; the window shows it on the GUI thread
    thread = threading.Thread(target=project.on_wait, args=(message,))
    thread.start()
    thread.join()
    qtbot.waitUntil(lambda: window.statusBar().currentMessage() == message, timeout=2000)
    window.close()


def test_the_display_check_runs_before_the_install_without_pyside(tmp_path):
    """``make run`` runs app/display_check.py with the system Python (no site packages: no PySide6)."""
    script = Path(__file__).resolve().parents[2] / "app" / "display_check.py"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    no_display = subprocess.run([sys.executable, "-S", str(script)], env=env, capture_output=True, text=True,
                                timeout=60)
    assert no_display.returncode == 1 and "no display" in no_display.stderr and "Traceback" not in no_display.stderr
    offscreen = subprocess.run([sys.executable, "-S", str(script)], env={**env, "QT_QPA_PLATFORM": "offscreen"},
                               capture_output=True, text=True, timeout=60)
    assert offscreen.returncode == 0 and offscreen.stderr == ""
