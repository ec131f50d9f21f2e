"""PanelController.run_job: the panel is busy while the job runs and un-busy once, whatever the outcome;
a failure is shown over the panel (not again by the window) unless the caller shows it in place."""

from __future__ import annotations

import time

import pytest
from PySide6.QtWidgets import QWidget

from app.controllers.base import PanelController
from app.jobs import JobRunner
from app.session import Session
from app.settings import Settings
from engine.errors import DatasetNotFoundError


class BusyPanel(QWidget):
    def __init__(self) -> None:
        super().__init__()
        self.busy: list[bool] = []

    def set_busy(self, busy: bool) -> None:
        self.busy.append(busy)


@pytest.fixture
def controller(qapp, monkeypatch):
    panel = BusyPanel()
    runner = JobRunner(max_threads=2)
    ctl = PanelController(Session(Settings()), runner, panel)
    ctl.shown: list[tuple[BaseException, str | None]] = []
    monkeypatch.setattr(ctl, "show_error", lambda exc, tb=None: ctl.shown.append((exc, tb)))
    yield ctl
    assert runner.shutdown(10_000)
    runner.wait_for_done(5_000)
    runner.deleteLater()
    panel.deleteLater()


def add(a, b, *, progress, cancel, scale=1):
    return (a + b) * scale


def missing(*, progress, cancel):
    raise DatasetNotFoundError("No dataset 7.")


def test_finished_result_and_busy_once(controller, qtbot):
    results, events = [], []
    controller.jobs.failed.connect(lambda *a: events.append("failed"))
    job = controller.run_job(add, 2, 3, scale=10, title="Add", done=results.append)
    assert controller.panel.busy == [True] and not job.report_errors
    controller.jobs.wait_for_done(5_000)
    assert results == [50] and controller.panel.busy == [True, False]
    assert controller.shown == [] and events == []


def test_failure_is_shown_after_the_callback(controller, qtbot):
    order = []
    controller.run_job(missing, title="Missing", failed=lambda exc, tb: order.append(("failed", type(exc).__name__,
                                                                                    list(controller.panel.busy))))
    controller.jobs.wait_for_done(5_000)
    assert order == [("failed", "DatasetNotFoundError", [True, False])]  # un-busy before the callback
    [(exc, tb)] = controller.shown
    assert isinstance(exc, DatasetNotFoundError) and "missing" in tb
    # shown in place by the caller: no dialog
    controller.run_job(missing, title="Missing again", busy=False, show_errors=False)
    controller.jobs.wait_for_done(5_000)
    assert len(controller.shown) == 1 and controller.panel.busy == [True, False]


def test_cancelled_before_it_starts_and_a_busy_callable(controller, qtbot):
    def wait(*, progress, cancel):
        while True:
            cancel.raise_if_cancelled()
            time.sleep(0.01)

    other: list[bool] = []
    cancelled = []
    first = controller.run_job(wait, title="Running", kind="slot", busy=other.append,
                               cancelled=lambda: cancelled.append("first"))
    second = controller.run_job(add, 1, 1, title="Waiting", kind="slot", cancelled=lambda: cancelled.append("second"))
    second.cancel()  # it never starts
    first.cancel()
    controller.jobs.wait_for_done(5_000)
    assert sorted(cancelled) == ["first", "second"]
    assert other == [True, False] and controller.panel.busy == [True, False]
    assert controller.shown == []
