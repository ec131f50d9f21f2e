"""The pure parts of edit mode: sentence spans in the raw text, joining edits, checks, edit distance."""

from __future__ import annotations

import pytest

from engine.counterbias.edit import assemble, check_sentence, clean_sentence, has_word
from engine.text.distance import word_edit_distance
from engine.text.sentences import sentence_spans, split_sentences


def test_spans_keep_every_byte_between_sentences():
    raw = "Great  cast.<br /><br />Terrible script!  Ok then."
    base, spans = sentence_spans(raw)
    assert base == raw and len(spans) == len(split_sentences(raw)) == 3
    assert assemble(base, spans, {1: "A fine script!"}) == "Great  cast.<br /><br />A fine script!  Ok then."
    assert assemble(base, spans, {}) == raw


def test_checks_name_what_is_wrong():
    sentence = "The plot is great and the music by Ennio is lovely."
    assert check_sentence("The plot is dull and the music by Ennio is lovely.", sentence, ["plot", "Ennio"]) is None
    missing = check_sentence("The story is dull and the music is lovely.", sentence, ["plot", "Ennio"])
    assert missing.reason == "missing words" and '"plot"' in missing.message and '"Ennio"' in missing.message
    assert check_sentence(sentence.upper(), sentence, []).reason == "unchanged"
    assert check_sentence("", sentence, []).reason == "empty"
    assert check_sentence("Negative", sentence, [], labels=["Negative", "Positive"]).reason == "label only"
    assert check_sentence(sentence + " blah" * 200, sentence, []).reason == "too long"
    assert not has_word("a god-awful film", "god")  # no match inside a hyphenated word


def test_clean_sentence_takes_the_first_line_without_labels():
    assert clean_sentence('Edited sentence: "It is dull."\n\nExplanation: changed great.') == "It is dull."
    assert clean_sentence("```\nIt is dull.\n```") == "It is dull."


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("The film is good.", "The film is good!", 0.0),
    ("The film is good.", "The film is not good.", 0.2),
    ("good film", "bad movie", 1.0),
    ("", "", 0.0),
])
def test_word_edit_distance(a, b, expected):
    assert word_edit_distance(a, b) == pytest.approx(expected)


def test_an_answer_copying_the_context_or_replacing_the_sentence_is_refused():
    sentences = ["My cousin took me on Sunday.", "The plot is great and the music is lovely.", "We stayed for the credits."]
    sentence = sentences[1]
    assert check_sentence("My cousin took me on Sunday.", sentence, [], others=sentences).reason == "wrong sentence"
    doubled = "The plot is dull and the music is lovely. We stayed for the credits."
    assert check_sentence(doubled, sentence, [], others=sentences).reason == "wrong sentence"
    assert check_sentence("A masterpiece from start to finish, truly.", sentence, [], others=sentences).reason == "not an edit"
    assert check_sentence("The plot is dull and the music is lovely.", sentence, [], others=sentences) is None
    # an edit of the next sentence glued on (six words in a row of it that the sentence did not have)
    lines = ["and the acting, or should i say the lack thereof?",
             "apparently talent wasn't a factor when the casting director came to town."]
    glued = "and the acting, or should i say the abundance of Apparently talent was a factor when the casting director came to town."
    assert check_sentence(glued, lines[0], [], others=lines).reason == "wrong sentence"
    assert check_sentence("and the acting, or should i say the abundance thereof?", lines[0], [], others=lines) is None


def test_an_edit_leaning_away_from_the_target_is_refused():
    from engine.attribution.word_prior import word_z_by_label
    from engine.counterbias.edit import check_sentence, label_lean

    texts = [f"a good film {i}" for i in range(6)] + [f"a bad film {i}" for i in range(6)]
    z = word_z_by_label(texts, ["Positive"] * 6 + ["Negative"] * 6)
    lean = label_lean(z["Positive"])
    wrong = check_sentence("It is a bad one to watch.", "It is a good one to watch.", [], lean=lean, target="Positive")
    assert wrong is not None and wrong.reason == "wrong direction" and '"bad"' in wrong.message
    assert check_sentence("It is a good one to watch.", "It is a bad one to watch.", [], lean=lean,
                          target="Positive") is None
    # words without a clear label (film) or unknown to the data change nothing
    assert check_sentence("It is a bad movie to watch.", "It is a bad film to watch.", [], lean=lean,
                          target="Positive") is None


def test_unmoved_edits_are_the_flat_and_the_backward_ones():
    """``unmoved`` on hand-made readings: flat and below 0.5 → repair; fallen by more than WRONG_WAY → repair
    even above 0.5 ("joy" → "sorrow" in a sentence the members still read as the target); risen → kept."""
    from engine.counterbias.edit import SentenceEdit
    from engine.generation.edit.first import unmoved
    from engine.generation.edit.state import edit_key
    from engine.generation.plan import FieldPlan, Slot

    reading = {"much joy": 0.91, "much sorrow": 0.62, "tired cast": 0.2, "weary cast": 0.22, "lively cast": 0.7}

    def polar(sentences, label):
        assert label == "Positive"
        return [next(p for k, p in reading.items() if k in s) for s in sentences]

    slot = Slot({"id": 1, "label": "Negative"}, "Positive", 0, [], [])
    plan = FieldPlan("text", "", [], [])
    edits = [SentenceEdit(0, "How much joy.", "How much joy.", ["joy"], [], answer="How much sorrow."),
             SentenceEdit(1, "A tired cast.", "A tired cast.", ["tired"], [], answer="A weary cast."),
             SentenceEdit(2, "A tired cast!", "A tired cast!", ["tired"], [], answer="A lively cast!")]
    found = unmoved([(slot, plan, e) for e in edits], polar, 0.25)
    keys = [edit_key(slot, plan, e) for e in edits]
    assert set(found) == {keys[0], keys[1]}
    assert found[keys[0]][0].startswith('It reads less as Positive than the sentence did. "sorrow" point away')
    assert found[keys[1]][0].startswith('It still reads as Negative. "weary" mean much the same as "tired".')
    assert found[keys[0]][1] == 0.91
    assert unmoved([(slot, plan, e) for e in edits], polar, 0.0) == {}


def test_a_sentence_without_a_principal_word_names_its_label_words_but_never_a_kept_one():
    from engine.generation.edit.select import cue_words as _cue_words

    z = {"waste": 8.7, "dull": 4.7, "plot": 5.0, "time": 1.0, "just": 3.3}
    assert _cue_words("This movie is just a waste of time - Run away!", z) == ["waste", "just"]
    assert _cue_words("A dull plot, a waste of time.", z, ["plot"]) == ["waste", "dull"]
    assert _cue_words("Then a rat flushes him down a toilet!", z) == []
