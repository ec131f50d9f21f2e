"""JobRunner: results, failures and cancellation arrive on the GUI thread; progress is throttled."""

from __future__ import annotations

import gc
import threading
import time

import pytest
from PySide6.QtCore import QCoreApplication, QThread

from app.jobs import Job, JobRunner, JobsTableModel, JobStatus
from engine.errors import Cancelled, DatasetNotFoundError
from engine.progress import CancelToken


@pytest.fixture
def runner(qapp):
    runner = JobRunner(max_threads=4)
    yield runner
    assert runner.shutdown(10_000)
    runner.wait_for_done(5_000)
    runner.deleteLater()


def on_gui_thread() -> bool:
    return (
        QThread.currentThread() is QCoreApplication.instance().thread()
        and threading.current_thread() is threading.main_thread()
    )


def add(a, b, *, progress, cancel, scale=1):
    for i in range(5):
        cancel.raise_if_cancelled()
        progress((i + 1) / 5, f"step {i + 1}")
    return (a + b) * scale


def test_job_finishes_with_result_on_gui_thread(runner, qtbot):
    seen: dict[str, object] = {}

    def on_finished(job, result):
        seen["job"], seen["result"], seen["gui"] = job, result, on_gui_thread()

    runner.finished.connect(on_finished)
    progressed = []
    runner.progressed.connect(lambda job, f, m: progressed.append((f, m, on_gui_thread())))
    with qtbot.waitSignals([runner.finished, runner.done], timeout=5000, order="strict"):
        job = runner.start(add, 2, 3, title="Add", scale=10)
        callback_results = []
        job.on_finished(callback_results.append)
    assert seen == {"job": job, "result": 50, "gui": True}
    assert callback_results == [50]
    assert job.status is JobStatus.DONE and job.fraction == 1.0
    assert job.elapsed is not None and job.started_at is not None and job.ended_at is not None
    assert progressed and progressed[-1] == (1.0, "step 5", True)
    assert not runner.is_busy and runner.job(job.id) is None
    row = runner.model.job(job.id)
    assert row.status is JobStatus.DONE and row.fraction == 1.0 and row.message == "step 5"


def test_failure_carries_the_exception(runner, qtbot):
    def broken(name, *, progress, cancel):
        raise DatasetNotFoundError(f"No dataset {name!r}.", "Use one of: a, b.")

    failures = []
    job = runner.start(broken, "zzz", title="Open dataset")
    job.on_failed(lambda exc, tb: failures.append((exc, tb)))
    with qtbot.waitSignal(runner.failed, timeout=5000) as blocker:
        pass
    failed_job, exc, tb_text = blocker.args
    assert failed_job is job
    assert isinstance(exc, DatasetNotFoundError) and exc.hint == "Use one of: a, b."
    assert "Traceback" in tb_text and "broken" in tb_text and "DatasetNotFoundError" in tb_text
    assert exc.__traceback__ is None  # frames freed; the text was kept
    assert failures == [(exc, tb_text)]
    assert runner.wait_for_done(5000)
    assert job.status is JobStatus.FAILED and job.error is exc
    assert runner.model.job(job.id).message == "No dataset 'zzz'."


def test_unexpected_exception_is_reported_too(runner, qtbot):
    def bug(*, progress, cancel):
        return 1 / 0

    with qtbot.waitSignal(runner.failed, timeout=5000) as blocker:
        runner.start(bug, title="Bug")
    assert isinstance(blocker.args[1], ZeroDivisionError)
    assert runner.wait_for_done(5000)


def test_cancel_midway(runner, qtbot):
    entered = threading.Event()
    tokens: list[CancelToken] = []

    def long_job(*, progress, cancel):
        tokens.append(cancel)
        entered.set()
        for i in range(10_000):
            cancel.raise_if_cancelled()
            progress(i / 10_000, "working")
            time.sleep(0.001)
        return "not cancelled"

    finished = []
    runner.finished.connect(lambda job, result: finished.append(result))
    job = runner.start(long_job, title="Long")
    assert entered.wait(5)
    qtbot.waitUntil(lambda: job.status is JobStatus.RUNNING, timeout=5000)
    with qtbot.waitSignal(runner.cancelled, timeout=5000) as blocker:
        assert runner.cancel(job.id)
        assert runner.model.job(job.id).cancel_requested
    assert blocker.args == [job]
    assert tokens == [job.token] and job.token.cancelled
    assert job.status is JobStatus.CANCELLED
    assert 0.0 <= job.fraction < 1.0
    assert finished == []
    assert runner.wait_for_done(5000)
    assert runner.model.job(job.id).status is JobStatus.CANCELLED
    assert not runner.cancel(job.id)  # already ended


def test_queued_job_cancelled_before_it_starts(qapp, qtbot):
    runner = JobRunner(max_threads=1)
    gate = threading.Event()
    calls = []

    def blocker_job(*, progress, cancel):
        gate.wait(5)

    def never(*, progress, cancel):
        calls.append(1)

    try:
        first = runner.start(blocker_job, title="Blocker")
        queued = runner.start(never, title="Queued")
        assert queued.status is JobStatus.QUEUED
        queued.cancel()
        gate.set()
        assert runner.wait_for_done(5000)
        assert first.status is JobStatus.DONE
        assert queued.status is JobStatus.CANCELLED and queued.elapsed is None
        assert calls == []
    finally:
        gate.set()
        runner.shutdown()


def test_progress_is_throttled_and_last_value_delivered(runner, qtbot):
    def chatty(*, progress, cancel):
        for i in range(1, 10_001):
            progress(i / 10_000, f"step {i}")
        return "ok"

    reports = []
    runner.progressed.connect(lambda job, f, m: reports.append((f, m)))
    with qtbot.waitSignal(runner.finished, timeout=10_000):
        runner.start(chatty, title="Chatty")
    assert 1 <= len(reports) < 200
    assert reports[-1] == (1.0, "step 10000")


def test_many_jobs(runner, qtbot):
    def square(x, *, progress, cancel):
        progress(0.5, "half")
        return x * x

    results = {}
    runner.finished.connect(lambda job, result: results.__setitem__(job.title, result))
    jobs = [runner.start(square, i, title=f"square {i}") for i in range(300)]
    assert runner.wait_for_done(20_000)
    assert results == {f"square {i}": i * i for i in range(300)}
    assert all(job.status is JobStatus.DONE for job in jobs)
    assert runner.model.rowCount() == 300
    assert runner.model.remove_finished() == 300
    del jobs
    gc.collect()


def test_cancel_all_and_shutdown(qapp):
    runner = JobRunner(max_threads=2)

    def wait_for_cancel(*, progress, cancel):
        while True:
            cancel.raise_if_cancelled()
            time.sleep(0.005)

    jobs = [runner.start(wait_for_cancel, title=f"w{i}") for i in range(5)]
    assert runner.shutdown(5000)
    assert runner.wait_for_done(5000)
    assert all(job.status is JobStatus.CANCELLED for job in jobs)
    with pytest.raises(RuntimeError):
        runner.start(wait_for_cancel, title="late")
    assert runner.shutdown()  # idempotent


def test_reserved_kwargs_rejected(runner):
    with pytest.raises(TypeError):
        runner.start(add, 1, 2, title="x", progress=print)


def test_cancelled_raised_without_token_counts_as_cancelled(runner, qtbot):
    def gives_up(*, progress, cancel):
        raise Cancelled("stopped")

    with qtbot.waitSignal(runner.cancelled, timeout=5000):
        runner.start(gives_up, title="Gives up")
    assert runner.wait_for_done(5000)


def test_runner_uses_given_model_and_counts(qapp, qtbot):
    model = JobsTableModel(tick_ms=0)
    runner = JobRunner(model=model)
    counts = []
    runner.active_count_changed.connect(counts.append)
    try:
        job = runner.start(add, 1, 1, title="Tiny")
        assert isinstance(job, Job) and "Tiny" in repr(job)
        assert runner.active_jobs() == [job]
        assert runner.wait_for_done(5000)
        assert model.rowCount() == 1 and counts == [1, 0]
    finally:
        runner.shutdown()


def test_callbacks_after_the_end_are_refused(runner):
    job = runner.start(add, 1, 2, title="Quick")
    assert runner.wait_for_done(5000)
    with pytest.raises(RuntimeError):
        job.on_finished(print)


def wait_for_event(event, *, progress, cancel, log=None, name=""):
    """Runs until ``event`` is set or the job is cancelled."""
    if log is not None:
        log.append(f"start {name}")
    while not event.wait(0.01):
        cancel.raise_if_cancelled()
    if log is not None:
        log.append(f"end {name}")
    return name


def test_same_kind_queues_behind_the_running_job(runner, qtbot):
    gate, log = threading.Event(), []
    first = runner.start(wait_for_event, gate, log=log, name="first", title="first", kind="train")
    qtbot.waitUntil(lambda: first.status is JobStatus.RUNNING, timeout=5000)
    second = runner.start(wait_for_event, threading.Event(), log=log, name="second", title="second", kind="train")
    other = runner.start(add, 1, 2, title="no slot")  # a job without a kind is not held up
    qtbot.waitUntil(lambda: other.status is JobStatus.DONE, timeout=5000)
    time.sleep(0.1)
    QCoreApplication.processEvents()
    assert second.status is JobStatus.QUEUED and log == ["start first"]
    gate.set()
    qtbot.waitUntil(lambda: first.status is JobStatus.DONE, timeout=5000)
    qtbot.waitUntil(lambda: second.status is JobStatus.RUNNING, timeout=5000)
    assert log == ["start first", "end first", "start second"]
    second.cancel()
    assert runner.wait_for_done(5000)
    assert second.status is JobStatus.CANCELLED


def test_same_kind_with_cancel_policy_supersedes(runner, qtbot):
    log: list[str] = []
    first = runner.start(wait_for_event, threading.Event(), log=log, name="first", title="1", kind="stats",
                         when_busy="cancel")
    qtbot.waitUntil(lambda: first.status is JobStatus.RUNNING, timeout=5000)
    second = runner.start(wait_for_event, threading.Event(), log=log, name="second", title="2", kind="stats",
                          when_busy="cancel")
    done = threading.Event()
    done.set()
    third = runner.start(wait_for_event, done, log=log, name="third", title="3", kind="stats", when_busy="cancel")
    results = []
    third.on_finished(results.append)
    assert runner.wait_for_done(5000)
    assert first.status is JobStatus.CANCELLED
    assert second.status is JobStatus.CANCELLED and second.elapsed is None  # never started
    assert third.status is JobStatus.DONE and results == ["third"]
    assert log == ["start first", "start third", "end third"]  # never two of a kind at once


def test_cancelling_a_waiting_job_ends_it_at_once(runner, qtbot):
    gate = threading.Event()
    first = runner.start(wait_for_event, gate, title="1", kind="k")
    second = runner.start(add, 1, 1, title="2", kind="k")
    qtbot.waitUntil(lambda: first.status is JobStatus.RUNNING, timeout=5000)
    with qtbot.waitSignal(runner.cancelled, timeout=2000):
        second.cancel()
    assert second.status is JobStatus.CANCELLED and first.status is JobStatus.RUNNING
    gate.set()
    assert runner.wait_for_done(5000)
    assert first.status is JobStatus.DONE


def test_report_errors_flag_travels_with_the_job(runner, qtbot):
    def boom(*, progress, cancel):
        raise DatasetNotFoundError("gone", "pick another")

    seen = []
    runner.failed.connect(lambda job, exc, tb: seen.append(job.report_errors))
    runner.start(boom, title="shown")
    runner.start(boom, title="in place", report_errors=False)
    assert runner.wait_for_done(5000)
    assert sorted(seen) == [False, True]
    with pytest.raises(ValueError):
        runner.start(boom, title="x", when_busy="later")
