"""Issue 52, item 1 in the GUI: the report export and the competency plot export refuse the project."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from app.main_window import MainWindow
from app.settings import Settings
from engine.errors import OutputInProjectFolderError, OutputIsProjectError
from tests.engine.evaluation.report_project import build_report_project
from tests.reliability.integrity import assert_unchanged, snapshot
from widgets.competency_plot import CompetencyPlot


@pytest.fixture
def window(qtbot, tmp_path):
    path = build_report_project(tmp_path / "report.cbproj", evaluate=False)
    win = MainWindow(Settings())
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    assert win.open_project(path)
    yield win
    win.jobs.wait_for_done(30_000)
    win.close()


def test_item01_report_export_onto_the_open_project_is_refused(window, qtbot, tmp_path):
    project = window.session.project.path
    window.select_dataset(window.session.project.dataset("reviews").id)
    with qtbot.waitSignal(window.jobs.finished, timeout=60_000):
        window.show_report_tab()
    qtbot.waitUntil(lambda: window.report_panel.has_report, timeout=10_000)
    before = snapshot(project, root=tmp_path)
    for kind, target, code in (("html", project, "CB311"), ("pdf", project, "CB311"),
                               ("pdf", tmp_path / "report_files" / "r.pdf", "CB312")):
        assert window.report.export(kind, target) is None  # no job was started
        boxes = [b for b in window.report_panel.findChildren(QMessageBox) if b.isVisible()]
        assert boxes and code in boxes[-1].text(), [b.text() for b in boxes]
        for box in boxes:
            box.close()
    window.jobs.wait_for_done(30_000)
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item01_plot_export_onto_a_project_is_refused(qtbot, tmp_path):
    project = build_report_project(tmp_path / "p.cbproj", evaluate=False)
    (tmp_path / "p_files").mkdir(exist_ok=True)
    plot = CompetencyPlot()
    qtbot.addWidget(plot)
    before = snapshot(project, root=tmp_path)
    with pytest.raises(OutputIsProjectError):
        plot.export_image(project)
    with pytest.raises(OutputIsProjectError):
        plot.export_image(tmp_path / "p.cbproj-wal")
    with pytest.raises(OutputInProjectFolderError):
        plot.export_image(tmp_path / "p_files" / "plot.png")
    assert_unchanged(before, snapshot(project, root=tmp_path))
