"""ExamplesTableModel: columns, roles, SQL sorting and filtering, laziness at 500k rows."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from engine.store import ExampleQuery
from tests.widgets._data import make_dataset
from widgets.labels import label_color
from widgets.models.examples_model import NEWLINE_MARK, ExamplesTableModel, one_line

DISPLAY = Qt.ItemDataRole.DisplayRole


@pytest.fixture
def single(project):
    dataset_id = make_dataset(project, 300, labels=("negative", "positive", "neutral"))
    model = ExamplesTableModel(project, page_size=50, max_pages=3)
    model.set_query(ExampleQuery(dataset_id))
    return model


def column_values(model: ExamplesTableModel, column: int) -> list[str]:
    return [model.index(r, column).data() for r in range(model.rowCount())]


def test_single_task_columns_and_rows(single):
    model = single
    assert model.rowCount() == 300
    assert [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())] == [
        "#", "Label", "Text", "Split", "Source",
    ]
    assert model.headerData(0, Qt.Orientation.Vertical) == "1"
    assert model.headerData(299, Qt.Orientation.Vertical) == "300"
    first = model.example_at(0)
    assert model.index(0, 0).data() == str(first["id"])
    assert model.index(0, 1).data() == "negative"
    assert model.index(0, 2).data() == "text 000000 about item 0"
    assert model.index(0, 3).data() == "train"
    assert model.index(0, 4).data() == "original"


def test_roles(single):
    model = single
    index = model.index(4, 1)
    example = model.example_at(4)
    assert index.data(ExamplesTableModel.ExampleIdRole) == example["id"] == model.example_id_at(4)
    assert index.data(ExamplesTableModel.LabelRole) == "positive"
    assert index.data(ExamplesTableModel.RowDictRole) == example
    assert index.data(Qt.ItemDataRole.DecorationRole) == label_color(1)
    background = index.data(Qt.ItemDataRole.BackgroundRole)
    assert isinstance(background, QColor) and background.rgb() == label_color(1).rgb()
    assert background.alpha() < 255
    # Only the label column is coloured.
    assert model.index(4, 2).data(Qt.ItemDataRole.DecorationRole) is None
    assert model.index(4, 2).data(Qt.ItemDataRole.ToolTipRole) == example["text"]


def test_pair_columns_and_one_line_text(project):
    dataset_id = make_dataset(project, 20, task="pair", labels=("entailment", "neutral", "contradiction"))
    model = ExamplesTableModel(project)
    model.set_query(ExampleQuery(dataset_id))
    headers = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]
    assert headers == ["#", "Label", "Premise", "Hypothesis", "Split", "Source"]
    assert model.index(3, 2).data() == f"premise 000003{NEWLINE_MARK}second line"
    assert model.index(3, 2).data(Qt.ItemDataRole.ToolTipRole) == "premise 000003\nsecond line"
    assert model.index(3, 3).data() == "hypothesis 3"
    assert model.index(3, 1).data() == "entailment"


def test_long_text_is_elided(project):
    long_text = "word\n" * 2000

    def row(i, labels):
        return {"text": long_text, "label": labels[i % 2]}

    dataset_id = make_dataset(project, 2, row=row)
    model = ExamplesTableModel(project)
    model.set_query(ExampleQuery(dataset_id))
    shown = model.index(0, 2).data()
    assert "\n" not in shown and len(shown) == 301 and shown.endswith("…")
    tip = model.index(0, 2).data(Qt.ItemDataRole.ToolTipRole)
    assert len(tip) == 2001 and tip.startswith("word\nword")
    assert model.example_at(0)["text"] == long_text


def test_one_line_helper():
    assert one_line(None) == ""
    assert one_line("a\r\nb\tc") == f"a{NEWLINE_MARK}b c"
    assert one_line("x" * 10, limit=10) == "x" * 10


def test_sort_by_columns_uses_sql(single, qtbot):
    model = single
    with qtbot.waitSignals([model.modelAboutToBeReset, model.modelReset]):
        model.sort(1, Qt.SortOrder.DescendingOrder)
    assert model.query.order_by == "label" and model.query.descending
    labels = column_values(model, 1)
    assert labels == sorted(labels, reverse=True)
    assert model.sort_column() == 1

    model.sort(2, Qt.SortOrder.AscendingOrder)
    assert model.query.order_by == "text"
    texts = [model.example_at(r)["text"] for r in range(model.rowCount())]
    assert texts == sorted(texts)

    model.sort(0, Qt.SortOrder.DescendingOrder)
    assert model.query.order_by == "position"
    assert model.example_at(0)["ext_id"] == "r299"


def test_sort_pair_columns(project):
    dataset_id = make_dataset(project, 30, task="pair", labels=("a", "b"))
    model = ExamplesTableModel(project)
    model.set_query(ExampleQuery(dataset_id))
    model.sort(3, Qt.SortOrder.AscendingOrder)
    assert model.query.order_by == "hypothesis"
    values = [model.example_at(r)["hypothesis"] for r in range(model.rowCount())]
    assert values == sorted(values)
    model.sort(4, Qt.SortOrder.AscendingOrder)
    assert model.query.order_by == "split"


def test_filters(single, qtbot):
    model = single
    model.set_label_filter(["positive"])
    assert model.rowCount() == 100
    assert set(column_values(model, 1)) == {"positive"}

    model.set_search("ITEM 3")  # case-insensitive substring, combined with the label filter
    assert model.rowCount() > 0
    assert all("item 3" in model.example_at(r)["text"] for r in range(model.rowCount()))
    assert set(column_values(model, 1)) == {"positive"}

    model.set_label_filter(None)
    model.set_search("")
    model.set_split_filter(["dev"])
    assert model.rowCount() == 100
    assert set(column_values(model, 3)) == {"dev"}

    model.set_split_filter(None)
    wanted = [int(model.ids[i]) for i in (5, 17, 250)]
    with qtbot.waitSignal(model.query_changed):
        model.set_example_filter(wanted)
    assert sorted(model.ids.tolist()) == sorted(wanted)
    model.set_example_filter(None)
    assert model.rowCount() == 300


def test_row_of_example_and_example_at(single):
    model = single
    model.sort(2, Qt.SortOrder.DescendingOrder)
    for row in (0, 1, 150, 299):
        example_id = model.example_id_at(row)
        assert model.row_of_example(example_id) == row
        assert model.example_at(row)["id"] == example_id
    assert model.row_of_example(10**9) is None
    with pytest.raises(IndexError):
        model.example_at(300)


def test_ids_are_read_only(single):
    with pytest.raises(ValueError):
        single.ids[0] = 1


def test_page_cache_is_bounded(single):
    model = single  # page_size=50, max_pages=3
    for row in range(0, 300, 10):
        model.index(row, 2).data()
    assert model.cached_pages == 3


def test_empty_and_reset(project):
    model = ExamplesTableModel(project)
    assert model.rowCount() == 0 and model.columnCount() == 0
    model.sort(0, Qt.SortOrder.AscendingOrder)  # no query: nothing happens
    model.set_search("x")
    assert model.query is None
    dataset_id = make_dataset(project, 5)
    model.set_query(ExampleQuery(dataset_id))
    assert model.rowCount() == 5
    model.set_query(None)
    assert model.rowCount() == 0
    with pytest.raises(RuntimeError):
        ExamplesTableModel().set_query(ExampleQuery(dataset_id))


def test_refresh_sees_new_rows_and_deleted_rows(project):
    dataset_id = make_dataset(project, 10)
    model = ExamplesTableModel(project)
    model.set_query(ExampleQuery(dataset_id))
    last_id = model.example_id_at(9)
    model.index(9, 2).data()  # cache the page

    def drop(conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM dataset_members WHERE example_id = ?", (last_id,))
        conn.execute("DELETE FROM examples WHERE id = ?", (last_id,))

    project.writer.run(drop)
    model.invalidate_rows()
    assert model.index(9, 2).data() is None  # stale row: nothing shown, no crash
    with pytest.raises(KeyError):
        model.example_at(9)
    model.refresh()
    assert model.rowCount() == 9


def test_precomputed_ids(project):
    dataset_id = make_dataset(project, 50)
    query = ExampleQuery(dataset_id, labels=("positive",))
    ids = project.example_ids(query)
    model = ExamplesTableModel(project)
    model.set_query(query, ids=ids)
    assert model.rowCount() == 25
    assert np.array_equal(model.ids, ids)


def test_500k_rows_are_lazy(project):
    n = 500_000

    def row(i, labels):
        return {"text": f"t{i}", "label": labels[i & 1]}

    dataset_id = make_dataset(project, n, row=row)
    model = ExamplesTableModel(project, page_size=200)
    model.set_query(ExampleQuery(dataset_id))
    assert model.rowCount() == n
    assert model.cached_pages == 0
    last = model.index(n - 1, 2)
    assert last.data() == f"t{n - 1}"
    assert model.cached_pages == 1
    assert model.headerData(n - 1, Qt.Orientation.Vertical) == str(n)
    assert model.row_of_example(model.example_id_at(n - 1)) == n - 1

    model.set_label_filter(["positive"])
    assert model.rowCount() == n // 2
    assert model.index(n // 2 - 1, 1).data() == "positive"
