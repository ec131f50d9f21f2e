"""Word diffs, the candidates model (qtmodeltester) and its status / example proxy."""

from __future__ import annotations

from PySide6.QtCore import Qt

from widgets.diff_view import DELETE_STYLE, INSERT_STYLE, DiffOp, DiffView, change_counts, diff_html, word_diff
from widgets.models.candidates_model import CandidatesProxy, CandidatesTableModel
from widgets.candidate_view import candidate_html


def test_word_diff_marks_deletions_and_insertions():
    ops = word_diff("I love this film.", "I hate this film.")
    assert ops == [DiffOp("equal", "I"), DiffOp("delete", "love"), DiffOp("insert", "hate"),
                   DiffOp("equal", "this film.")]
    assert word_diff("same  words", "same words") == [DiffOp("equal", "same words")]
    assert change_counts("a b c", "a x y c") == (1, 2)
    assert word_diff("", "new text") == [DiffOp("insert", "new text")]


def test_html_line_breaks_are_words_of_their_own_and_shown_as_breaks():
    """IMDb's "<br /><br />10/10": the rating alone is the changed word, the tags become line breaks."""
    ops = word_diff("A must-see!<br /><br />10/10 stars!", "A must-see!<br /><br />0/10 stars!")
    assert ops == [DiffOp("equal", "A must-see!\n\n"), DiffOp("delete", "10/10"), DiffOp("insert", "0/10"),
                   DiffOp("equal", "stars!")]
    assert change_counts("Good.<br />Great cast.", "Good.<br />Weak cast.") == (1, 1)
    out = diff_html("Good.<br />Great cast.", "Good.<br />Weak cast.")
    assert out.startswith("Good.<br>") and "&lt;br" not in out


def test_diff_html_escapes_data(qtbot):
    out = diff_html("a <b>bold</b> claim", "a <i>meek</i> claim")
    assert "<b>bold" not in out and "&lt;b&gt;bold&lt;/b&gt;" in out
    assert f'<span style="{DELETE_STYLE}">&lt;b&gt;bold&lt;/b&gt;</span>' in out
    assert f'<span style="{INSERT_STYLE}">&lt;i&gt;meek&lt;/i&gt;</span>' in out
    view = DiffView()
    qtbot.addWidget(view)
    view.show_html(out)
    assert "meek" in view.toPlainText() and view.html_source == out


def _cand(cid, example, status, text, *, flipped=None, prob=None, kept=None, error=None):
    scores = {}
    if flipped is not None:
        scores = {"judge": {"members": {"m1": {"label": "neg", "target_prob": prob}}, "predicted": "neg",
                            "flipped": flipped, "left_original": flipped, "target_prob": prob},
                  "spurious_kept": kept, "missing_spurious": [] if kept else ["he"], "passes": bool(flipped and kept)}
    meta = {"generated": {"text": text}, "keep_words": ["he"], "original_label": "pos", "error": error,
            "fields": [{"field": "text", "triples": [["he", "loves", "it"]], "categories": ["principal"],
                        "rewritten": [["he", "hates", "it"]], "gender_swaps": [["he", "she"]]}]}
    return {"id": cid, "example_id": example, "target_label": "neg", "status": status, "text": text,
            "premise": None, "hypothesis": None, "scores": scores, "meta": meta,
            "original": {"text": "He loves it."}, "original_label": "pos"}


ROWS = [
    _cand(1, 10, "proposed", "She hates it.", flipped=True, prob=0.9, kept=True),
    _cand(2, 10, "accepted", "He hates it.", flipped=False, prob=0.2, kept=False),
    _cand(3, 11, "failed", None, error={"step": "rewrite", "message": "Server error 500", "hint": "Retry.",
                                         "retriable": True}),
    _cand(4, 12, "rejected", "It is hated."),
]


def test_candidates_model_and_proxy(qtmodeltester):
    model = CandidatesTableModel()
    model.set_rows(ROWS)
    qtmodeltester.check(model)
    proxy = CandidatesProxy()
    proxy.setSourceModel(model)
    qtmodeltester.check(proxy)
    assert model.index(0, model.FLIPPED).data() == "yes"
    assert model.index(1, model.KEPT).data() == "no"
    assert "he" in model.index(1, model.KEPT).data(Qt.ItemDataRole.ToolTipRole)
    assert model.index(2, model.TEXT).data().startswith("failed at rewrite")
    assert model.index(3, model.PROB).data() == "—"
    proxy.set_statuses(["proposed", "failed"])
    assert [proxy.index(r, 0).data() for r in range(proxy.rowCount())] == [1, 3]
    proxy.set_statuses(None)
    proxy.set_example(10)
    assert proxy.rowCount() == 2
    proxy.set_example(None)
    proxy.sort(model.PROB, Qt.SortOrder.DescendingOrder)
    assert proxy.index(0, 0).data() == 1
    qtmodeltester.check(proxy)
    # a decision updates one row in place
    model.update_row({**ROWS[0], "status": "rejected"})
    assert model.index(0, model.STATUS).data() == "rejected"
    assert model.candidate_at(0)["original"] == {"text": "He loves it."}


def test_candidate_html_shows_scores_steps_and_errors():
    good = candidate_html(ROWS[0])
    assert "line-through" in good and "She" in good and "Ensemble judge" in good and "m1" in good
    assert "he | loves | it" in good and "he | hates | it" in good and "gender swap" in good
    assert "all kept" in candidate_html(ROWS[0])
    assert "missing: he" in candidate_html(ROWS[1])
    failed = candidate_html(ROWS[2])
    assert "Failed at step" in failed and "Server error 500" in failed and "What to do:" in failed


def test_an_edit_mode_sentence_shows_its_opinion_words_released_words_and_phrase_swap():
    row = _cand(5, 13, "proposed", "He finds it awful and dull.")
    row["meta"]["repairs"] = {"edit": 1, "swap": 1}
    row["meta"]["fields"][0]["edits"] = [
        {"index": 0, "sentence": "He finds it great and lovely.", "new": "He finds it awful and dull.",
         "problems": ["unmoved"], "opinion": ["great", "lovely"], "released": ["lovely"],
         "swapped": {"great": "awful", "lovely": "dull"}},
        {"index": 1, "sentence": "A <b>treat</b>.", "new": None, "problems": ["unmoved", "unmoved, dropped"]}]
    row["meta"]["fields"][0]["plain"] = [2, 4]
    out = candidate_html(row)
    assert "left as written: sentence 3, 5" in out
    assert "opinion words: “great”, “lovely”" in out and "released spurious words: lovely" in out
    assert "phrase swap: “great” → “awful”; “lovely” → “dull”" in out and "opinion phrases swapped ×1" in out
    assert "(edit dropped: it still read as the original label after every try)" in out and "&lt;b&gt;treat" in out


def test_an_edit_mode_sentence_says_whether_its_held_spurious_words_were_kept_or_released():
    row = _cand(7, 13, "proposed", "He finds it awful and not lovely. It is dull.")
    row["meta"]["repairs"] = {"release": 1}
    row["meta"]["fields"][0]["edits"] = [
        {"index": 0, "sentence": "He finds it great and lovely.", "new": "He finds it awful and not lovely.",
         "problems": [], "opinion": ["great", "lovely"], "held": ["lovely"], "hold": "kept"},
        {"index": 1, "sentence": "It is charming.", "new": "It is dull.", "problems": [], "opinion": ["charming"],
         "released": ["charming"], "held": ["charming"], "hold": "not read as the target"}]
    row["meta"]["keep_words"] = ["lovely", "charming"]
    row["scores"].update(spurious_kept=True, missing_spurious=[], released_spurious=["charming"])
    out = candidate_html(row)
    assert "Spurious words</b> (lovely, charming): the others kept; released as opinion words: charming" in out
    assert "spurious opinion words kept, opinion turned around them: lovely" in out
    assert "released spurious words: charming (a try keeping them: not read as the target)" in out
    assert "spurious opinion words released ×1" in out


def test_a_removed_sentence_says_so():
    row = _cand(6, 13, "proposed", "He finds it awful.")
    row["meta"]["repairs"] = {"edit": 1, "remove": 1}
    row["meta"]["fields"][0]["edits"] = [
        {"index": 1, "sentence": "Very recommendable.", "new": "", "removed": True,
         "problems": ["unmoved", "unmoved, dropped", "removed"]}]
    out = candidate_html(row)
    assert "sentence 2: Very recommendable. (removed: it still read as the original label after every try" in out
    assert "sentence removed ×1" in out and "edit dropped" not in out


def test_the_shown_example_draws_the_datas_line_breaks_and_escapes_the_rest(qtbot):
    from widgets.review_panel import ReviewPanel

    panel = ReviewPanel()
    qtbot.addWidget(panel)
    panel.show_example({"id": 7, "label": "Positive", "text": "Good.<br /><br />A <b>bold</b> 10/10."}, [])
    shown = panel.example_label.text()
    assert "Good.<br><br>A &lt;b&gt;bold&lt;/b&gt; 10/10." in shown and panel.shown_example_id == 7


def test_sentences_still_read_as_the_original_label_are_underlined():
    """The residual reading (recorded at generation, else by the LLM judge) is drawn in the candidate's diff."""
    from widgets.diff_view import MARK_STYLE

    row = _cand(4, 12, "proposed", "He hates it. A must-see!")
    row["original"] = {"text": "He loves it. A must-see!"}
    row["meta"]["fields"][0]["residual"] = ["A must-see!"]
    out = candidate_html(row)
    assert f'<span style="{MARK_STYLE}" title="the LLM still reads this as pos">A must-see!</span>' in out
    assert "Still read as pos by the LLM (each sentence alone; underlined where unchanged):<br>• “A must-see!”" in out
    del row["meta"]["fields"][0]["residual"]
    assert MARK_STYLE not in candidate_html(row)
    row["scores"]["residual"] = {"sentences": ["A must-see!"], "model": "local:qwen"}  # from the LLM judge
    assert MARK_STYLE in candidate_html(row)


def test_the_doctests_hold():
    import doctest

    from widgets import diff_view

    assert doctest.testmod(diff_view).failed == 0


def test_an_edit_shows_the_demonstrations_it_was_shown():
    row = _cand(6, 14, "proposed", "He finds it awful.")
    row["meta"]["fields"][0]["edits"] = [
        {"index": 0, "sentence": "He finds it great.", "new": "He finds it awful.", "problems": [],
         "demos": [{"id": "pair:3:1", "source": "imported", "sentence": "A <i>great</i> cast.",
                    "edited": "A weak cast."},
                   {"id": "candidate:9:0", "source": "accepted", "sentence": "I loved it.", "edited": "I hated it."}]}]
    out = candidate_html(row)
    assert "imported pair pair:3:1" in out and "&lt;i&gt;great&lt;/i&gt;" in out and "<i>great" not in out
    assert "your accepted candidate candidate:9:0" in out and "I hated it." in out


def test_the_human_counterfactual_is_shown_beside_the_candidate():
    row = _cand(7, 15, "proposed", "He finds it awful.")
    row["original"] = {"text": "He finds it great."}
    row["human"] = [{"text": "He finds it <b>dreadful</b>.", "target": "Negative", "source": "train_paired.tsv"}]
    out = candidate_html(row)
    assert "Human counterfactual" in out and "train_paired.tsv" in out and "&lt;b&gt;dreadful" in out
