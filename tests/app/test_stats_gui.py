"""Bias statistics in the real window: the plot renders, hover and click work, exports write images."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QImage

from app.main_window import MainWindow
from app.settings import Settings
from engine.demo import ensure_demo_project
from widgets.models.array_model import ArrayTableModel
from widgets.stats_panel import Z_COLUMN


@pytest.fixture
def window(qtbot, tmp_path):
    win = MainWindow(Settings())
    qtbot.addWidget(win)
    win.resize(1500, 950)
    win.show()
    win.open_project(ensure_demo_project(tmp_path / "demo.cbproj"))
    win.show_stats_tab()
    with qtbot.waitSignal(win.jobs.finished, timeout=60_000):
        win.stats.compute()
    qtbot.waitUntil(lambda: win.stats_panel.stats is not None)
    yield win
    win.close()


def _viewport_pos(plot, x: float, y: float):
    vb = plot.plot.getViewBox()
    scene = vb.mapViewToScene(QPointF(x, y))
    return plot.plot_widget.mapFromScene(scene)


def test_plot_renders_and_table_ranks_words(window, qtbot):
    panel = window.stats_panel
    plot = panel.plot
    assert plot.visible_points() > 1000
    stats = panel.stats
    # The biased-features table is sorted by z, strongest first, significant only.
    model = panel.features_model
    top = [model.index(r, 0).data() for r in range(10)]
    assert "great" in top and "bad" in top
    assert model.headerData(Z_COLUMN, Qt.Orientation.Horizontal) == "z"
    z_values = [model.index(r, Z_COLUMN).data(ArrayTableModel.SortRole) for r in range(model.rowCount())]
    assert z_values == sorted(z_values, reverse=True)
    assert all(z > stats.z_threshold for z in z_values)
    # Filters: one label, then a search.
    plot.label_combo.setCurrentText("Negative")
    assert {model.index(r, 1).data() for r in range(model.rowCount())} == {"Negative"}
    panel.search.setText("wors")
    qtbot.waitUntil(lambda: 0 < model.rowCount() < 30)
    assert all("wors" in model.index(r, 0).data() for r in range(model.rowCount()))


def test_hover_and_click_on_a_point(window, qtbot):
    plot = window.stats_panel.plot
    plot.label_combo.setCurrentText("Positive")
    qtbot.wait(50)
    x, y = plot.point_position("Positive", "great")
    pos = _viewport_pos(plot, x, y)
    hovered = []
    plot.pointHovered.connect(hovered.append)
    qtbot.mouseMove(plot.plot_widget.viewport(), pos)
    qtbot.waitUntil(lambda: any(p.feature == "great" for p in hovered), timeout=3000)
    assert "great" in plot.info.text() and "z =" in plot.info.text()
    with qtbot.waitSignal(plot.featureClicked, timeout=3000) as clicked:
        qtbot.mouseClick(plot.plot_widget.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert clicked.args == ["great", "Positive"]
    # The click filtered the examples table to the reviews containing "great".
    qtbot.waitUntil(lambda: window.tabs.currentWidget() is window.examples)
    model = window.examples.model
    expected = int(window.stats_panel.stats.n[window.stats_panel.stats.feature_names.index("great")])
    assert 0 < model.rowCount() <= expected
    assert all("great" in model.example_at(r)["text"].lower() for r in range(min(model.rowCount(), 50)))


def test_png_and_svg_export(window, tmp_path):
    plot = window.stats_panel.plot
    png = plot.export_image(tmp_path / "plot.png")
    image = QImage(str(png))
    assert image.width() >= 1200 and image.height() > 300
    colours = {image.pixel(x, y) for x in range(0, image.width(), 17) for y in range(0, image.height(), 17)}
    assert len(colours) > 10, "a real plot, not a blank image"
    svg = plot.export_image(tmp_path / "plot.svg").read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and svg.count("<path") + svg.count("<circle") > 10


def test_compare_and_zfilter(window, qtbot):
    from widgets.zfilter_dialog import ZFilterRequest
    from engine.stats import ZFilterConfig

    original = window.current_dataset
    request = ZFilterRequest("plain", original.id, None, ZFilterConfig(k=20, batch_size=200), "filtered")
    with qtbot.waitSignal(window.jobs.finished, timeout=60_000):
        window.stats.run_zfilter(request)
    qtbot.waitUntil(lambda: window.current_dataset is not None and window.current_dataset.name == "filtered")
    filtered = window.current_dataset
    assert 0 < filtered.row_count < original.row_count
    assert filtered.params["accepted"] + filtered.params["rejected"] == original.row_count
    # Compare the original (shown) with the filtered version: Δz table sorted by reduction.
    window.select_dataset(original.id)
    panel = window.stats_panel
    with qtbot.waitSignal(window.jobs.finished, timeout=60_000):
        window.stats.compute(panel.config(), filtered.id)
    qtbot.waitUntil(lambda: panel.compare is not None)
    delta = panel.delta_model
    assert delta.rowCount() > 0
    first = [delta.index(r, 7).data(ArrayTableModel.SortRole) for r in range(min(20, delta.rowCount()))]
    assert first[0] < 0, "the strongest artefacts shrink after z-filtering"
    assert first == sorted(first)
    assert panel.plot.visible_points() > 1000
    assert np.isfinite(first).all()
