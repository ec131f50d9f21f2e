"""``recorded_run``: a job's ``runs`` row on a real project file, finished as done, failed or cancelled."""

from __future__ import annotations

import json

import pytest

from engine.errors import Cancelled
from engine.io import import_file
from engine.store import Project
from engine.store.runs import recorded_run


@pytest.fixture
def dataset_id(project, tmp_path):
    src = tmp_path / "reviews.csv"
    src.write_text("text,label\nGreat film.,pos\nDull plot.,neg\n", encoding="utf-8")
    return import_file(project, src).dataset.id


def _row(path, run_id):
    # read back through a fresh connection: the row is in the file, not only in the writer's session
    with Project.open(path) as again:
        row = again.db.execute("SELECT kind, dataset_id, params, status, message, result, started_at, finished_at "
                               "FROM runs WHERE id = ?", [run_id]).fetchone()
    return dict(zip(("kind", "dataset_id", "params", "status", "message", "result", "started_at", "finished_at"), row))


def test_a_finished_body_is_done_with_its_result_and_message(project, dataset_id):
    with recorded_run(project, "train", dataset_id, {"ensemble": {"members": 3}, "path": project.path}) as run:
        during = project.db.execute("SELECT status, finished_at FROM runs WHERE id = ?", [run.id]).fetchone()
        run.result = {"accuracy": 0.9, "members": ["a", "b"]}
        run.message = "3 members trained"
    assert tuple(during) == ("running", None)
    row = _row(project.path, run.id)
    assert row["kind"] == "train" and row["dataset_id"] == dataset_id and row["status"] == "done"
    assert json.loads(row["params"]) == {"ensemble": {"members": 3}, "path": str(project.path)}  # str() for non-JSON
    assert json.loads(row["result"]) == {"accuracy": 0.9, "members": ["a", "b"]}
    assert row["message"] == "3 members trained"
    assert row["finished_at"] >= row["started_at"]


def test_an_error_marks_the_run_failed_with_the_error_and_is_raised(project, dataset_id):
    with pytest.raises(ValueError, match="the model is out of memory"):
        with recorded_run(project, "attribute", dataset_id, {}) as run:
            run.result = {"examples": 4}
            raise ValueError("the model is out of memory")
    row = _row(project.path, run.id)
    assert row["status"] == "failed"
    assert row["message"] == "the model is out of memory"
    assert json.loads(row["result"]) == {"examples": 4}  # what the body recorded before it failed
    assert row["finished_at"] is not None


def test_a_failure_message_keeps_the_body_summary_and_names_an_empty_error(project):
    with pytest.raises(KeyError):
        with recorded_run(project, "triples", None, {}) as run:
            run.message = "2 done, 1 failed"
            raise KeyError()
    row = _row(project.path, run.id)
    assert row["status"] == "failed" and row["message"] == "KeyError (2 done, 1 failed)"
    assert row["dataset_id"] is None and row["result"] is None


def test_cancel_marks_the_run_cancelled_and_is_raised(project, dataset_id):
    with pytest.raises(Cancelled):
        with recorded_run(project, "generate", dataset_id, {"examples": 2}) as run:
            run.result = {"created": 1}
            run.message = "1 candidates, 0 failed"
            raise Cancelled("cancelled")
    row = _row(project.path, run.id)
    assert row["status"] == "cancelled"
    assert row["message"] == "cancelled by the user (1 candidates, 0 failed)"
    assert json.loads(row["result"]) == {"created": 1}


def test_each_run_gets_its_own_row(project, dataset_id):
    ids = []
    for kind in ("train", "attribute"):
        with recorded_run(project, kind, dataset_id, {}) as run:
            ids.append(run.id)
    assert len(set(ids)) == 2
    rows = project.db.execute("SELECT kind, status FROM runs ORDER BY id").fetchall()
    assert [tuple(r) for r in rows] == [("train", "done"), ("attribute", "done")]


def test_the_members_of_a_live_training_run_not_stored_yet_are_judges_in_training(project, dataset_id):
    """While an ensemble trains, the Counterbias tab and the CLI can say which judges are still missing; a run of a
    process that is gone (killed before ``mark_interrupted`` ran) names nothing."""
    from engine.attribution.explainers import judges_in_training
    from engine.models.config import default_ensemble

    config = default_ensemble("r:")
    assert judges_in_training(project, dataset_id) == []
    with recorded_run(project, "train", dataset_id, {"ensemble": config.to_dict()}):
        assert judges_in_training(project, dataset_id) == config.names
        with recorded_run(project, "attribute", dataset_id, {"ensemble": config.to_dict()}):
            assert judges_in_training(project, dataset_id) == config.names  # only training runs count
    assert judges_in_training(project, dataset_id) == []
    project.writer.run(lambda conn: conn.execute(
        "INSERT INTO runs (kind, dataset_id, params, status, started_at, pid, pid_started, host) "
        "VALUES ('train', ?, ?, 'running', '2026-01-01T00:00:00+00:00', 999999999, 'x', NULL)",
        (dataset_id, json.dumps({"ensemble": config.to_dict()}))))
    assert judges_in_training(project, dataset_id) == []
