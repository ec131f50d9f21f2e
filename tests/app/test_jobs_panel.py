"""JobsTableModel columns and the JobsPanel's Cancel wiring (no threads involved)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from widgets.jobs_panel import JobsPanel, ProgressBarDelegate
from app.jobs import JobRow, JobsTableModel, JobStatus, format_duration
from app.jobs.model import UNKNOWN


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_columns_eta_and_elapsed():
    clock = FakeClock()
    model = JobsTableModel(clock=clock, tick_ms=0)
    model.add_job(JobRow(job_id=7, title="Import", status=JobStatus.RUNNING, started=clock.now))
    clock.now += 30
    model.update_job(7, fraction=0.25, message="Reading rows\nmore detail")
    cells = [model.index(0, c).data() for c in range(model.columnCount())]
    assert cells == ["Import", "Running", "25 %", "Reading rows", "1 min 30 s", "30 s"]
    assert model.index(0, JobsTableModel.PROGRESS).data(JobsTableModel.ProgressRole) == 0.25
    assert model.index(0, 0).data(JobsTableModel.JobIdRole) == 7
    assert model.index(0, 0).data(JobsTableModel.StatusRole) == JobStatus.RUNNING
    assert model.index(0, JobsTableModel.MESSAGE).data(Qt.ItemDataRole.ToolTipRole) == "Reading rows\nmore detail"

    model.update_job(7, status=JobStatus.DONE, fraction=1.0, ended=clock.now)
    clock.now += 100
    assert model.index(0, JobsTableModel.ETA).data() == UNKNOWN
    assert model.index(0, JobsTableModel.ELAPSED).data() == "30 s"  # frozen once ended


def test_eta_unknown_without_enough_progress():
    clock = FakeClock()
    model = JobsTableModel(clock=clock, tick_ms=0)
    model.add_job(JobRow(job_id=1, title="Queued"))
    model.add_job(JobRow(job_id=2, title="Just started", status=JobStatus.RUNNING, started=clock.now))
    clock.now += 10
    assert model.index(0, JobsTableModel.ETA).data() == UNKNOWN
    assert model.index(0, JobsTableModel.ELAPSED).data() == UNKNOWN
    assert model.index(1, JobsTableModel.ETA).data() == UNKNOWN  # fraction 0


def test_update_emits_data_changed_for_that_row_only(qtbot):
    model = JobsTableModel(tick_ms=0)
    for i in range(3):
        model.add_job(JobRow(job_id=i, title=f"job {i}"))
    with qtbot.waitSignal(model.dataChanged) as blocker:
        model.update_job(1, message="hello")
    top_left, bottom_right = blocker.args[:2]
    assert top_left.row() == bottom_right.row() == 1
    model.update_job(99, message="unknown ids are ignored")


def test_format_duration():
    assert format_duration(0.2) == "0 s"
    assert format_duration(3600) == "1 h 00 min"
    assert format_duration(float("nan")) == UNKNOWN


def test_tick_refreshes_running_rows(qtbot):
    model = JobsTableModel(tick_ms=20)
    model.add_job(JobRow(job_id=1, title="done", status=JobStatus.DONE))
    model.add_job(JobRow(job_id=2, title="run", status=JobStatus.RUNNING, started=0.0))
    with qtbot.waitSignal(model.dataChanged, timeout=2000) as blocker:
        pass
    assert blocker.args[0].row() == 1
    assert blocker.args[0].column() == JobsTableModel.ETA
    model.update_job(2, status=JobStatus.CANCELLED, ended=1.0)
    assert not model._timer.isActive()


def test_panel_cancel_button_and_callback(qtbot):
    model = JobsTableModel(tick_ms=0)
    model.add_job(JobRow(job_id=1, title="running", status=JobStatus.RUNNING, started=0.0))
    model.add_job(JobRow(job_id=2, title="done", status=JobStatus.DONE))
    asked: list[int] = []
    panel = JobsPanel(model, cancel=lambda job_id: (asked.append(job_id), model.update_job(job_id, cancel_requested=True)))
    qtbot.addWidget(panel)
    assert isinstance(panel.view.itemDelegateForColumn(JobsTableModel.PROGRESS), ProgressBarDelegate)
    # nothing selected: Cancel acts on the running job and names it
    assert panel.cancel_button.isEnabled() and panel.cancel_button.text() == "Cancel “running”"
    assert panel.cancel_target().job_id == 1

    panel.select_job(2)
    assert panel.selected_job().job_id == 2  # a finished job cannot be cancelled: Cancel still names the running one
    assert panel.cancel_target().job_id == 1 and "running" in panel.cancel_button.text()

    panel.select_job(1)
    assert panel.cancel_button.isEnabled() and panel.cancel_button.text() == "Cancel"
    with qtbot.waitSignal(panel.cancel_requested) as blocker:
        qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [1] and asked == [1]
    assert model.index(0, JobsTableModel.STATUS).data() == "Cancelling"
    assert not panel.cancel_button.isEnabled()  # already asked, and no other job to cancel

    assert panel.clear_button.isEnabled()
    qtbot.mouseClick(panel.clear_button, Qt.MouseButton.LeftButton)
    assert model.rowCount() == 1 and model.job_at(0).job_id == 1
    assert panel.summary.text() == "1 running"


def test_panel_scrolls_to_a_new_job(qtbot):
    model = JobsTableModel(tick_ms=0)
    panel = JobsPanel(model)
    qtbot.addWidget(panel)
    panel.resize(600, 120)  # three rows visible, as in the main window
    panel.show()
    for i in range(12):
        model.add_job(JobRow(job_id=i, title=f"job {i}", status=JobStatus.QUEUED))
    qtbot.waitUntil(lambda: panel.view.rowAt(panel.view.viewport().height() - 2) in (11, -1), timeout=2000)
    last = panel.view.visualRect(model.index(11, 0))
    assert panel.view.viewport().rect().intersects(last)  # the newest job is on screen


def test_panel_paints_progress_bars(qtbot):
    model = JobsTableModel(tick_ms=0)
    for i in range(5):
        model.add_job(JobRow(job_id=i, title=f"job {i}", status=JobStatus.RUNNING, started=0.0, fraction=i / 4))
    panel = JobsPanel(model)
    qtbot.addWidget(panel)
    panel.resize(800, 300)
    image = panel.grab()  # runs the delegate's paint()
    assert not image.isNull()
