"""Made-up words (engine.text.lexicon), with the real English word list of pyspellchecker.

The coinages below are answers the bundled Qwen2.5-Coder-1.5B gave when asked to edit CAD reviews (kept from the
CoBA quality runs); the other words are real words it wrote in the same runs, or words human editors wrote.
"""

from __future__ import annotations

import pytest

from engine.text.lexicon import coined_words, corpus_words, english_share, english_words
from engine.verification import heuristics

pytestmark = pytest.mark.skipif(english_words() is None, reason="pyspellchecker is not installed")


@pytest.mark.parametrize(("original", "new", "coined"), [
    ("The villain blackmailed the mayor.", "The villain whitemailed the mayor.", ["whitemailed"]),
    ("The sheer ridiculousness of it.", "The sheer ridiculousity of it.", ["ridiculousity"]),
    ("A lot of subtext here.", "A lot of subcontext here.", ["subcontext"]),
    ("A scene of mutant disembowelment.", "A scene of mutant-embowelment.", ["mutant-embowelment"]),
])
def test_coinages_of_the_bundled_model_are_found(original, new, coined):
    assert coined_words(new, original) == coined


@pytest.mark.parametrize("new", [
    "The acting was blandly unvarnished and the plot plagiarized.",
    "It didn't work, and it doesn't, and it shouldn't.",
    "A cliché under-dramatised by a cast in colour.",   # British spellings, an accented word
    "Then Nordland arrived with the NYPD.",             # a name inside a sentence, an acronym
    "The film stuns, stirs and suffocates.",            # inflections
    "An ok dvd, meh.",                                  # shorter than four letters: not judged
])
def test_real_words_names_and_variants_are_not_coined(new):
    assert coined_words(new, "The film was fine.") == []


def test_words_of_the_original_and_of_the_dataset_are_known():
    assert coined_words("It is rewatchable.", "It is rewatchable, sort of.") == []
    assert coined_words("It is rewatchable.", "It is good.") == ["rewatchable"]
    assert coined_words("It is rewatchable.", "It is good.", known={"rewatchable"}) == []


def test_corpus_words_need_two_texts():
    words = corpus_words(["A rewatchable film.", "So rewatchable!", "A typoed wrod."])
    assert "rewatchable" in words and "wrod" not in words


def test_a_text_that_is_not_english_is_not_judged():
    german = "Der Schurke erpresste den Bürgermeister, und die Schauspieler waren wunderbar."
    assert english_share(german) < 0.7 <= english_share("The villain blackmailed the mayor.")
    assert heuristics.coined_word("Der Schurke erpresste den Bürgermeisterin.", german) is None
    assert heuristics.coined_word("The villain whitemailed the mayor.", "The villain blackmailed the mayor.") == (
        'made-up word "whitemailed"')
