"""The pattern language on hand-made sentences: every construct, the matched span, syntax errors."""

from __future__ import annotations

import pytest

from engine.patterns import Matcher, PatternSyntaxError, parse
from engine.patterns.soft import EmbeddingSoftMatcher, FormsSoftMatcher, make_soft_matcher
from engine.patterns.errors import UnknownSoftMatcherError


@pytest.fixture(scope="module")
def m() -> Matcher:
    return Matcher(soft="embedding")


def span(m: Matcher, pattern: str, text: str) -> str | None:
    hit = m.find(pattern, text)
    if hit is not None:
        assert text[hit.start : hit.end] == hit.text  # offsets point into the text
    return None if hit is None else hit.text


def test_word_is_case_insensitive_and_whole(m):
    assert span(m, "great", "A GREAT film.") == "GREAT"
    assert span(m, "great", "Greatness, not greatly.") is None
    assert span(m, "movie's", "The movie’s end.") is None  # spaCy splits the clitic off: two words
    assert span(m, "movie+'s", "The movie’s end.") == "movie’s"


def test_forms_by_lemma_and_stem(m):
    assert span(m, "[have]", "She has two cats.") == "has"
    assert span(m, "[have]", "We had fun.") == "had"
    assert span(m, "[have]", "Having fun.") == "Having"
    assert span(m, "[bore]", "A boring plot.") == "boring"
    assert span(m, "[movie]", "Two movies.") == "movies"
    assert span(m, "[have]", "A hive of bees.") is None


def test_soft_match_accepts_related_words_only(m):
    assert span(m, "(pricey)", "The menu was rather expensive.") == "expensive"
    assert span(m, "(pricey)", "Everything was costly.") == "costly"
    assert span(m, "(pricey)", "The food, sadly, was pricey.") == "pricey"
    assert span(m, "(pricey)", "The soup was cold and the band was loud.") is None
    forms = Matcher(soft="forms")
    assert forms.find("(pricey)", "The menu was rather expensive.") is None


def test_entity_types_take_the_whole_entity(m):
    assert span(m, "$LOCATION", "We flew to Houston last May.") == "Houston"
    assert span(m, "$DATE", "It opened last May in Houston.") == "last May"
    assert span(m, "$ORG", "She works at Google.") == "Google"
    assert span(m, "$PERSON", "The soup was cold.") is None
    assert span(m, "$DATE+*+$ORG", "On Friday we met people from Google there.") == "Friday we met people from Google"


def test_parts_of_speech(m):
    assert span(m, "ADJ+NOUN", "A truly great movie with bad acting.") == "great movie"
    assert span(m, "ADV+ADJ", "It was truly great.") == "truly great"
    assert span(m, "NOUN+NOUN", "It was truly great.") is None


def test_wildcard_sequence_and_punctuation(m):
    assert span(m, "[food]+*+ADJ", "Good food with great variety.") == "food with great"
    assert span(m, "[food]+ADJ", "Good food with great variety.") is None
    assert span(m, "food+great", "The food, great!") == "food, great"  # punctuation is not a word
    assert span(m, "(amazing)+*", "The food was amazing.") == "amazing"  # '*' may take no words
    assert span(m, "*+movie", "What a movie.") == "movie"


def test_alternation_takes_the_leftmost_match(m):
    assert span(m, "never|not+ADJ", "It was not good, and I never went back.") == "not good"
    assert span(m, "not+ADJ|never", "I never liked it.") == "never"
    assert m.find("waiter|chef", "The chef and the waiter.").alternative == 1


def test_parse_round_trip_and_errors():
    assert str(parse(" [food] + * + ADJ | ( pricey ) | $location ")) == "[food]+*+ADJ|(pricey)|$LOCATION"
    assert [e.kind for e in parse("good+NOUN+Noun").elements()] == ["word", "pos", "word"]
    for bad in ("", "+food", "food+", "food ADJ", "food||bad", "$PLANET", "*", "food+*|*", "[food", "food+@"):
        with pytest.raises(PatternSyntaxError) as info:
            parse(bad)
        assert info.value.code == "CB971" and info.value.hint


def test_soft_matcher_registry():
    assert isinstance(make_soft_matcher("forms"), FormsSoftMatcher)
    soft = make_soft_matcher("embedding", threshold=0.55)
    assert isinstance(soft, EmbeddingSoftMatcher)
    assert soft.synonyms("pricey", ["expensive", "soup", "costly", "window"])[:2] in (["expensive", "costly"],
                                                                                    ["costly", "expensive"])
    with pytest.raises(UnknownSoftMatcherError):
        make_soft_matcher("wordnet-9")


def test_verification_check_uses_the_matcher():
    from engine.verification.checks import Subject, run_checks
    from engine.counterbias.verify import CandidateFilter

    labels = ["negative", "positive"]
    subject = Subject({"text": "The waiter was rude."}, {"text": "The waiter was friendly."}, labels, "positive",
                      "negative", meta={"pattern": "[waiter]+*+ADJ"})
    assert run_checks(subject, CandidateFilter(), ["pattern"])["pattern"].status == "pass"
    moved = Subject({"text": "The waiter was rude."}, {"text": "Lovely evening."}, labels, "positive", "negative",
                    meta={"pattern": "[waiter]+*+ADJ"})
    verdict = run_checks(moved, CandidateFilter(), ["pattern"])["pattern"]
    assert verdict.status == "fail" and "no longer matches" in verdict.reason
