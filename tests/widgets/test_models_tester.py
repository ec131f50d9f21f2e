"""Qt's model tester on every table model, plus the datasets model's proxy sorting."""

from __future__ import annotations

import time

from PySide6.QtCore import QSortFilterProxyModel, Qt

from engine.store import DatasetInfo, ExampleQuery
from tests.widgets._data import make_dataset
from widgets.models.datasets_model import DatasetsTableModel, make_proxy
from widgets.models.examples_model import ExamplesTableModel
from app.jobs import JobRow, JobsTableModel, JobStatus


def test_examples_model_single(qtmodeltester, project):
    dataset_id = make_dataset(project, 300, labels=("a", "b", "c"))
    model = ExamplesTableModel(project, page_size=64, max_pages=2)
    qtmodeltester.check(model)
    model.set_query(ExampleQuery(dataset_id))
    qtmodeltester.check(model)
    model.sort(1, Qt.SortOrder.DescendingOrder)
    model.set_search("item 2")
    qtmodeltester.check(model)


def test_examples_model_pair(qtmodeltester, project):
    dataset_id = make_dataset(project, 200, task="pair", labels=("entailment", "neutral", "contradiction"))
    model = ExamplesTableModel(project)
    model.set_query(ExampleQuery(dataset_id))
    qtmodeltester.check(model)


def test_jobs_model(qtmodeltester):
    model = JobsTableModel(tick_ms=0)
    qtmodeltester.check(model)
    model.add_job(JobRow(job_id=1, title="one"))
    model.add_job(JobRow(job_id=2, title="two", status=JobStatus.RUNNING, started=time.monotonic()))
    model.update_job(2, fraction=0.5, message="half way")
    model.update_job(1, status=JobStatus.DONE, fraction=1.0, ended=time.monotonic())
    qtmodeltester.check(model)
    assert model.remove_finished() == 1
    qtmodeltester.check(model)


def _info(i: int, name: str, rows: int, created: str) -> DatasetInfo:
    return DatasetInfo(
        id=i, name=name, kind="original", parent_id=None, task="single",
        labels=["neg", "pos"], source=f"{name}.csv", row_count=rows, created_at=created,
    )


def test_datasets_model(qtmodeltester, project):
    model = DatasetsTableModel()
    qtmodeltester.check(model)
    make_dataset(project, 12, name="reviews")
    make_dataset(project, 7, name="nli", task="pair", labels=("e", "n", "c"))
    model.set_rows(project.datasets())
    qtmodeltester.check(model)
    assert model.rowCount() == 2
    assert model.index(0, DatasetsTableModel.NAME).data() == "reviews"
    assert model.index(1, DatasetsTableModel.TASK).data() == "text pair"
    assert model.index(1, DatasetsTableModel.LABELS).data() == "e, n, c"
    assert model.index(0, DatasetsTableModel.ROWS).data() == 12
    dataset_id = model.index(1, 0).data(DatasetsTableModel.DatasetIdRole)
    assert model.row_of_dataset(dataset_id) == 1
    assert model.dataset_at(1).id == dataset_id
    assert model.index(1, 3).data(DatasetsTableModel.DatasetRole) == project.dataset(dataset_id)


def test_datasets_proxy_sorts_numbers_as_numbers(qtmodeltester):
    model = DatasetsTableModel()
    model.set_rows([
        _info(1, "alpha", 9, "2024-01-02T00:00:00+00:00"),
        _info(2, "Beta", 10_000, "2024-01-01T00:00:00+00:00"),
        _info(3, "gamma", 120, "2024-01-03T00:00:00+00:00"),
    ])
    proxy = make_proxy(model)
    qtmodeltester.check(proxy)
    proxy.sort(DatasetsTableModel.ROWS, Qt.SortOrder.AscendingOrder)
    assert [proxy.index(r, 0).data() for r in range(3)] == ["alpha", "gamma", "Beta"]
    assert proxy.index(2, DatasetsTableModel.ROWS).data() == 10_000
    proxy.sort(DatasetsTableModel.NAME, Qt.SortOrder.AscendingOrder)
    assert [proxy.index(r, 0).data() for r in range(3)] == ["alpha", "Beta", "gamma"]
    proxy.sort(DatasetsTableModel.CREATED, Qt.SortOrder.DescendingOrder)
    assert proxy.index(0, 0).data() == "gamma"
    plain = QSortFilterProxyModel()  # a default proxy also sorts rows as numbers
    plain.setSourceModel(model)
    plain.sort(DatasetsTableModel.ROWS, Qt.SortOrder.DescendingOrder)
    assert [plain.index(r, 0).data() for r in range(3)] == ["Beta", "gamma", "alpha"]
    proxy.setFilterFixedString("BET")
    assert proxy.rowCount() == 1 and proxy.index(0, 0).data() == "Beta"
