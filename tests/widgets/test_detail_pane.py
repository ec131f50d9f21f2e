"""DetailPane: fields, label chip, plain-text rendering of data."""

from __future__ import annotations

from PySide6.QtCore import Qt

from engine.store import ExampleQuery
from tests.widgets._data import make_dataset
from widgets.detail_pane import DetailPane
from widgets.labels import contrast_text_color, label_color
from widgets.models.examples_model import ExamplesTableModel

LABELS = ["negative", "positive"]


def test_placeholder(qtbot):
    pane = DetailPane()
    qtbot.addWidget(pane)
    pane.show_example(None, LABELS)
    assert pane.example is None
    assert pane.text_edit.toPlainText() == ""


def test_single_example_from_the_model(qtbot, project):
    dataset_id = make_dataset(project, 5)
    model = ExamplesTableModel(project)
    model.set_query(ExampleQuery(dataset_id))
    pane = DetailPane()
    qtbot.addWidget(pane)
    example = model.example_at(1)
    pane.show_example(example, model.labels)
    assert pane.fields["id"].text() == str(example["id"])
    assert pane.fields["ext_id"].text() == "r1"
    assert pane.fields["split"].text() == "dev"
    assert pane.label_chip.text() == "positive"
    assert label_color(1).name() in pane.label_chip.styleSheet()
    assert pane.text_edit.toPlainText() == example["text"]
    assert pane.example == example


def test_html_in_data_is_shown_as_text(qtbot):
    pane = DetailPane()
    qtbot.addWidget(pane)
    evil = "<b>bold</b> <img src=x onerror=alert(1)> & <a href='http://x'>link</a>"
    row = {
        "id": 3, "ext_id": "<i>e</i>", "text": evil, "premise": None, "hypothesis": None,
        "label": "<b>neg</b>", "split": None, "source": "augmented", "method": "<script>",
        "parent_id": 1, "target_label": "positive",
    }
    pane.show_example(row, LABELS)
    assert pane.text_edit.toPlainText() == evil
    for label in [*pane.fields.values(), pane.label_chip, pane.target_chip]:
        assert label.textFormat() == Qt.TextFormat.PlainText
    assert pane.fields["ext_id"].text() == "<i>e</i>"
    assert pane.fields["method"].text() == "<script>"
    assert pane.label_chip.text() == "<b>neg</b>"  # unknown label: grey chip, still shown
    assert pane.target_chip.text() == "positive"
    assert pane._form.isRowVisible(pane.target_chip)
    assert not pane._form.isRowVisible(pane.fields["split"])  # empty fields are hidden


def test_pair_example(qtbot):
    pane = DetailPane()
    qtbot.addWidget(pane)
    row = {"id": 1, "text": None, "premise": "A man sleeps.\nSecond line.", "hypothesis": "Nobody sleeps.",
           "label": "contradiction", "split": "test", "source": "original"}
    pane.show_example(row, ["entailment", "neutral", "contradiction"])
    assert pane.premise_edit.toPlainText() == "A man sleeps.\nSecond line."
    assert pane.hypothesis_edit.toPlainText() == "Nobody sleeps."
    assert pane.text_edit.toPlainText() == ""
    assert pane.premise_edit.isReadOnly() and pane.hypothesis_edit.isReadOnly()
    assert not pane._form.isRowVisible(pane.target_chip)


def test_contrast_text_color():
    assert contrast_text_color(label_color(6)).name() == "#000000"  # yellow
    assert contrast_text_color(label_color(0)).name() == "#ffffff"  # blue


def test_annotation_verdict_summary_says_when_the_label_was_not_judged():
    from widgets.annotation_panel import _verdict_summary

    form_only = {"verdicts": {"refusal": {"status": "pass"}, "copy": {"status": "pass"},
                              "label-flip": {"status": "skip", "reason": "no ensemble"}}}
    text, tip = _verdict_summary(form_only)
    assert text == "? label not judged · 2 pass, 1 not run" and "No ensemble" in tip
    assert "✓" not in text  # a check that did not run never shows as a pass
    judged = {"verdicts": {**form_only["verdicts"], "label-flip": {"status": "pass"}}}
    assert _verdict_summary(judged)[0] == "✓ 3 checks pass"
    skipped = {"verdicts": {**judged["verdicts"], "residual": {"status": "skip", "reason": "no reader"}}}
    assert _verdict_summary(skipped)[0] == "✓ 3 checks pass, 1 not run"
    assert _verdict_summary({"verdicts": {**judged["verdicts"], "copy": {"status": "fail"}}})[0] == "✗ copy"


def test_line_break_tags_are_shown_as_breaks(qtbot):
    """IMDb reviews store line breaks as ``<br />``: the pane draws them as breaks, any other markup as text."""
    pane = DetailPane()
    qtbot.addWidget(pane)
    row = {"id": 1, "text": "Fine.<br /><br />Dull <b>film</b>.<BR>End", "premise": None, "hypothesis": None,
           "label": "negative", "source": "original"}
    pane.show_example(row, LABELS)
    assert pane.text_edit.toPlainText() == "Fine.\n\nDull <b>film</b>.\nEnd"
    assert pane.example["text"] == row["text"]  # the example itself is as stored


def test_the_doctests_hold():
    import doctest

    from widgets import detail_pane

    assert doctest.testmod(detail_pane).failed == 0
