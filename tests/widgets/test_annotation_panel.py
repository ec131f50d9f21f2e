"""The Annotate tab's counterfactual table: a pair's counterfactual shows its new hypothesis."""

from __future__ import annotations

from widgets.annotation_panel import AnnotationPanel


def test_pair_counterfactuals_show_their_hypothesis_and_failures_their_reason(qtbot):
    panel = AnnotationPanel()
    qtbot.addWidget(panel)
    panel.set_labels(["entailment", "neutral", "contradiction"])
    rows = [
        {"id": 1, "text": None, "premise": "A girl sings.", "hypothesis": "Nobody sings.", "target_label": "contradiction",
         "status": "proposed", "scores": {"verdicts": {"copy": {"status": "pass", "detail": ""}}},
         "meta": {"pattern": "NOUN+VERB", "phrases": ["nobody sings"]}},
        {"id": 2, "text": None, "premise": "A girl sings.", "hypothesis": None, "target_label": "neutral",
         "status": "failed", "scores": {}, "meta": {"error": {"message": "It repeats the premise."}}},
        {"id": 3, "text": "A dull film.", "premise": None, "hypothesis": None, "target_label": "neg",
         "status": "proposed", "scores": {}, "meta": {}},
    ]
    panel.show_counterfactuals(rows, {})
    cells = [panel.cf_table.item(r, 0).text() for r in range(3)]
    assert cells == ["Nobody sings.", "(failed: It repeats the premise.)", "A dull film."]
    assert "pattern NOUN+VERB" in panel.cf_table.item(0, 0).toolTip()
