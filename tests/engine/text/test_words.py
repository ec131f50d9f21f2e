"""Canonical segmentation: one word list for every member."""

from __future__ import annotations

import unicodedata

import pytest

from engine.text import normalize, segment, words_of


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I didn't love it.", ["I", "didn't", "love", "it", "."]),
        ("It’s well-made, rock'n'roll!", ["It’s", "well-made", ",", "rock'n'roll", "!"]),
        ("the actors' '90s", ["the", "actors", "'", "'", "90s"]),
        ("Wow!!! Really?!", ["Wow", "!!!", "Really", "?", "!"]),
        ("3.5/10, 1,000 fans at 10:30 in 1990", ["3.5/10", ",", "1,000", "fans", "at", "10:30", "in", "1990"]),
        ("Loved it 😀👍🏽 🇫🇷 👨\u200d👩\u200d👧", ["Loved", "it", "😀", "👍🏽", "🇫🇷", "👨\u200d👩\u200d👧"]),
        ("Bad.<br /><br />Worse", ["Bad", ".", "<br />", "<br />", "Worse"]),
        ("x--y a_b", ["x", "--", "y", "a", "_", "b"]),
        ("", []),
    ],
)
def test_segment_rules(text: str, expected: list[str]) -> None:
    assert words_of(text) == expected


def test_spans_index_the_original_text() -> None:
    text = "  Naïve café — didn't 😀!  "
    for w in segment(text):
        assert text[w.start : w.end] == w.text
    assert [w.start for w in segment(text)] == sorted(w.start for w in segment(text))


def test_composed_and_decomposed_accents_are_one_word_each() -> None:
    nfc = "café naïve"
    nfd = unicodedata.normalize("NFD", nfc)
    assert len(segment(nfd)) == len(segment(nfc)) == 2
    assert [normalize(w.text) for w in segment(nfd)] == [normalize(w.text) for w in segment(nfc)]


def test_kinds() -> None:
    kinds = {w.text: w.kind for w in segment("Great 10/10 film 😀 !! <i>")}
    assert kinds == {"Great": "word", "10/10": "number", "film": "word", "😀": "emoji", "!!": "punct", "<i>": "markup"}
    lexical = [w.text for w in segment("Great 10/10 film 😀 !! <i>") if w.is_lexical]
    assert lexical == ["Great", "10/10", "film", "😀"]


def test_normalize_folds_case_and_apostrophes() -> None:
    assert normalize("DIDN’T") == normalize("didn't") == "didn't"
