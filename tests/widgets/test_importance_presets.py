"""The Word importance panel shows each member's preset beside its dev accuracy and offers the CPU presets."""

from __future__ import annotations

from widgets.importance_panel import ImportancePanel


def test_members_show_dev_accuracy_and_preset(qtbot):
    panel = ImportancePanel()
    qtbot.addWidget(panel)
    presets = [panel.preset.itemText(i) for i in range(panel.preset.count())]
    assert presets == ["sample-cpu", "top-cpu", "quick-cpu", "fast-cpu", "paper"]
    panel.set_default_preset("fast-cpu")
    assert panel.preset.currentText() == "fast-cpu"
    panel.show_members(["d:minilm-l6", "d:mpnet-base", "d:minilm-l3"],
                       {"d:minilm-l6": 0.863, "d:mpnet-base": 0.84, "d:minilm-l3": 0.8},
                       {"d:minilm-l6": "fast-cpu", "d:mpnet-base": "quick-cpu", "d:minilm-l3": "quick-cpu"})
    text = panel.members_label.text()
    assert "<b>d:minilm-l6</b> 86.3% (fast-cpu)" in text and "<b>d:mpnet-base</b> 84.0% (quick-cpu)" in text
    header = panel.grid.table.verticalHeaderItem(1).text()
    assert "84.0%" in header and "quick-cpu" in header
