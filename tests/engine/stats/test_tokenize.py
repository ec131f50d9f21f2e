"""Tokenization: lower-case, punctuation removed, whitespace tokens (Gardner et al. 2021)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.stats.tokenize import count_tokens, tokenize, tokenize_many


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Hello, World!", ["hello", "world"]),
        ("It's GREAT, isn't it?", ["its", "great", "isnt", "it"]),
        ("don\u2019t", ["dont"]),
        ("well-made... film", ["well", "made", "film"]),
        ("line one<br /><br />line two", ["line", "one", "line", "two"]),
        ("a<b and c>d", ["a", "b", "and", "c", "d"]),
        ("\u201cQuoted\u201d \u2014 dash\u2026", ["quoted", "dash"]),
        ("snake_case 3.5 100%", ["snake", "case", "3", "5", "100"]),
        ("Caf\u00e9 CAFE\u0301", ["caf\u00e9", "caf\u00e9"]),  # composed and decomposed accents agree
        ("tabs\tand\nnewlines", ["tabs", "and", "newlines"]),
        ("nul\x00inside", ["nul", "inside"]),
        ("", []),
        (None, []),
        ("?!.,", []),
    ],
)
def test_tokenize_cases(text, tokens):
    assert tokenize(text) == tokens


def test_count_tokens_modes():
    tokens = tokenize("good good very good")
    assert count_tokens(tokens) == {"good": 3, "very": 1}
    assert count_tokens(tokens, per_document=True) == {"good": 1, "very": 1}


def test_tokenize_many_ids_offsets_and_dedupe():
    texts = ["A b", None, "a, B!", "x", "", "A b"]
    tok = tokenize_many(texts)
    assert tok.n_texts == 6
    assert tok.n_unique == 4  # "A b" twice; None and "" are the same empty text
    assert [tok.tokens(i) for i in range(6)] == [tokenize(t) for t in texts]
    assert tok.lengths.tolist() == [2, 0, 2, 1, 0, 2]
    assert tok.vocab == ["a", "b", "x"]


def test_tokenize_many_chunks_agree():
    texts = [f"Word{i % 7} and, word{i % 3}!" for i in range(50)]
    small = tokenize_many(texts, chunk_size=4, dedupe=False)
    assert [small.tokens(i) for i in range(50)] == [tokenize(t) for t in texts]


_alphabet = st.sampled_from(
    list("abcAB xyz'.,!-_<>/\t\n\x00\x1f") + ["\u00e9", "E\u0301", "\u2019", "\u201c", "\u03a3", "\u0130", "<br />"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_alphabet, max_size=12).map("".join), max_size=8), st.booleans())
def test_tokenize_many_matches_tokenize(texts, dedupe):
    tok = tokenize_many(texts, dedupe=dedupe, chunk_size=3)
    assert [tok.tokens(i) for i in range(len(texts))] == [tokenize(t) for t in texts]
