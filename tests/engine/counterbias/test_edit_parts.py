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
