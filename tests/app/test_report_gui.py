"""The Report tab in the real window: refresh builds the report as a job, the sections show, exports write."""

from __future__ import annotations

import pytest

from app.main_window import MainWindow
from app.settings import Settings
from engine.evaluation.report import SECTIONS
from tests.engine.evaluation.report_project import build_report_project


@pytest.fixture
def window(qtbot, tmp_path):
    path = build_report_project(tmp_path / "report.cbproj", evaluate=False)
    win = MainWindow(Settings())
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    assert win.open_project(path)
    yield win
    win.jobs.wait_for_done(30_000)
    win.close()


def _select(win, name):
    win.select_dataset(win.session.project.dataset(name).id)


def test_report_tab_refreshes_as_a_job_and_exports(window, qtbot, tmp_path):
    _select(window, "reviews")
    panel = window.report_panel
    assert not panel.has_report and not panel.html_button.isEnabled()
    with qtbot.waitSignal(window.jobs.finished, timeout=60_000):
        window.show_report_tab()  # shown for a dataset without a report: built as a job
    qtbot.waitUntil(lambda: panel.has_report, timeout=10_000)
    text = panel.browser.toPlainText()
    for _, title in SECTIONS:
        assert title in text
    assert "spielberg" in text and "originals + 4 accepted candidates" in text
    assert "No downstream evaluation is stored" in text
    assert panel.html_button.isEnabled() and panel.pdf_button.isEnabled()
    assert window.report.report.n_added == 4

    # the sections list scrolls the browser to its anchor
    panel.contents.itemClicked.emit(panel.contents.item(len(SECTIONS) - 1))

    html = tmp_path / "out.html"
    with qtbot.waitSignal(window.jobs.finished, timeout=60_000):
        window.report.export("html", html)  # full-resolution plots, not the panel's fitted ones
    written = html.read_text(encoding="utf-8")
    assert all(f'id="{key}"' in written for key, _ in SECTIONS) and written.count("data:image/png;base64,") == 2
    pdf = tmp_path / "out.pdf"
    with qtbot.waitSignal(window.jobs.finished, timeout=60_000):
        window.report.export("pdf", pdf)
    assert pdf.read_bytes().startswith(b"%PDF")

    # Refresh builds it again (a new report object) through the job runner
    first = window.report.report
    with qtbot.waitSignal(window.jobs.finished, timeout=60_000):
        panel.refresh_button.click()
    qtbot.waitUntil(lambda: window.report.report is not first and panel.has_report, timeout=10_000)


def test_report_tab_shows_why_there_is_nothing_to_report(window, qtbot, tmp_path):
    csv = tmp_path / "plain.csv"
    csv.write_text("text,label\na good film,pos\na bad film,neg\n", encoding="utf-8")
    from engine.io import ImportOptions, import_file

    import_file(window.session.project, csv, options=ImportOptions(name="plain"))
    window.session.refresh_datasets()
    _select(window, "plain")
    panel = window.report_panel
    jobs_before = window.jobs.model.rowCount()
    window.show_report_tab()
    qtbot.waitUntil(lambda: "No candidates yet" in panel.browser.toPlainText(), timeout=10_000)
    assert "Counterbias tab" in panel.browser.toPlainText()  # what to do next
    assert window.jobs.model.rowCount() == jobs_before  # an empty state, not a failed job in the Jobs panel
    assert not panel.has_report and not panel.pdf_button.isEnabled() and panel.refresh_button.isEnabled()
