"""The candidate detail says which sentences were edited, repaired, or left as they were."""

from __future__ import annotations

from widgets.review_panel import candidate_html


def test_edited_sentences_show_their_repairs_and_unusable_ones_their_reasons():
    meta = {"original_label": "Negative", "fields": [{"field": "text", "edits": [
        {"index": 0, "sentence": "A very tired cast.", "new": "A very lively cast.", "problems": ["unmoved"]},
        {"index": 2, "sentence": "The end drags.", "new": "The end flies.", "problems": []},
        {"index": 3, "sentence": "What a waste.", "new": None, "problems": ["unmoved", "wrong direction"]},
    ]}]}
    html = candidate_html({"id": 7, "example_id": 3, "target_label": "Positive", "status": "proposed",
                           "meta": meta, "scores": {}, "text": "x"})
    assert "sentence 1: A very tired cast. → A very lively cast. <span style='color:#777'>(after: unmoved)</span>" in html
    assert "sentence 3: The end drags. → The end flies.</li>" in html
    assert "sentence 4: What a waste. (not usable: unmoved, wrong direction)" in html


def test_repairs_are_named():
    meta = {"original_label": "Negative", "repairs": {"edit": 2, "fresh": 1, "flip": 1}, "fields": []}
    html = candidate_html({"id": 7, "example_id": 3, "target_label": "Positive", "status": "proposed",
                           "meta": meta, "scores": {}, "text": "x"})
    assert "<b>Repairs</b>: sentence repaired ×2, sentence tried afresh ×1, half flip repaired ×1" in html
