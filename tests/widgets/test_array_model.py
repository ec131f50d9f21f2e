"""The numpy-backed table model: qtmodeltester, numpy sorting and masks."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from widgets.models.array_model import ArrayTableModel, Column, fmt_float, fmt_int


def _model(n: int = 50) -> ArrayTableModel:
    rng = np.random.default_rng(0)
    model = ArrayTableModel()
    z = rng.normal(size=n)
    z[3] = np.nan
    model.set_columns(
        [
            Column("Feature", np.asarray([f"w{i}" for i in range(n)], dtype=object)),
            Column("n", rng.integers(1, 100, n), fmt_int, numeric=True),
            Column("z", z, fmt_float(2), numeric=True),
        ],
        bold=z > 1,
    )
    return model


def test_model_tester(qtmodeltester):
    model = _model()
    qtmodeltester.check(model)
    model.sort(2, Qt.SortOrder.DescendingOrder)
    qtmodeltester.check(model)
    model.set_mask(np.arange(50) % 2 == 0)
    qtmodeltester.check(model)


def test_sort_and_mask():
    model = _model()
    model.sort(2, Qt.SortOrder.DescendingOrder)
    values = [model.index(r, 2).data(ArrayTableModel.SortRole) for r in range(model.rowCount())]
    finite = [v for v in values if not np.isnan(v)]
    assert finite == sorted(finite, reverse=True)
    assert np.isnan(values[-1]), "NaN sorts last"
    assert model.index(model.rowCount() - 1, 2).data() == "–"
    model.set_mask(np.arange(50) < 10)
    assert model.rowCount() == 10
    assert {model.base_row(r) for r in range(10)} == set(range(10))
    assert model.view_row(20) is None


def test_large_table_is_cheap():
    n = 500_000
    model = ArrayTableModel()
    model.set_columns([Column("v", np.arange(n)[::-1].copy(), fmt_int, numeric=True)])
    model.sort(0)
    assert model.index(0, 0).data() == "0" and model.rowCount() == n
