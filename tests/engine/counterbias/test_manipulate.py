"""The pure CoBA steps: categorise by lemma, swap gendered words, order/drop, clean answers, targets."""

from __future__ import annotations

import random

import pytest

from engine.counterbias import GenerateSettings, GenerationConfigError, clean_reconstruction, targets_for
from engine.counterbias.manipulate import arrange, categorize, gender_map, swap_gender, swap_triple
from engine.llm.triple_format import Triple


def test_categories_match_forms_and_lemmas():
    triples = [Triple("I", "loved", "the soundtrack"), Triple("The actress", "wears", "a red dress"),
               Triple("We", "watched", "it on Sunday")]
    cats = categorize(triples, principal=["love"], spurious=["actress"])
    assert cats == ["principal", "spurious", "normal"]
    # principal wins over spurious inside one triple
    assert categorize([Triple("the actress", "is", "loved")], ["loving"], ["actress"]) == ["principal"]
    assert categorize([Triple("Movies", "are", "long")], ["movie"], []) == ["principal"]


def test_gender_swap_keeps_case_and_reports_swaps():
    mapping = gender_map([("he", "she"), ("actor", "actress"), ("his", "her")])
    text, swaps = swap_gender("He said the Actor lost his keys; she laughed.", mapping)
    assert text == "She said the Actress lost her keys; he laughed."
    assert swaps == [("He", "She"), ("Actor", "Actress"), ("his", "her"), ("she", "he")]
    triple, found = swap_triple(Triple("The actress", "thanks", "him"), gender_map([("him", "her")]))
    assert triple == Triple("The actress", "thanks", "her")  # 'actress' is not in this map
    assert found == [("him", "her")]


@pytest.fixture(scope="module")
def bundled():
    from engine.attribution.wordlists import swap_pairs

    return gender_map(swap_pairs())


@pytest.mark.parametrize(("text", "expected"), [
    # word boundaries: never inside a word or a hyphenated compound
    ("That was god-awful, said the god.", "That was god-awful, said the goddess."),
    # names: a gendered word inside a proper name stays; titles are swapped
    ("Written by Stephen King, but not as solid as his stories.", "Written by Stephen King, but not as solid as her stories."),
    ("The king met Prince Valiant.", "The queen met Prince Valiant."),
    ("Stephen King cameos as his caretaker.", "Stephen King cameos as her caretaker."),
    ("Manhattan, a mankind of heroics; the man.", "Manhattan, a mankind of heroics; the woman."),
    ("actor2 and actor_x stay", "actor2 and actor_x stay"),
    # compounds after a prefix, and in-laws, are swapped as a whole
    ("his ex-wife and his father-in-law", "her ex-husband and her mother-in-law"),
    # apostrophes: the clitic is kept
    ("He's the actor's friend; she'd know.", "She's the actress's friend; he'd know."),
    ("He\u2019s here.", "She\u2019s here."),
    # case
    ("HIS acting and HER voice", "HER acting and HIS voice"),
    ("He left. HE left. he left.", "She left. SHE left. she left."),
    # a title or a name in capitals stays (the tagger reads capitals poorly); shouted pronouns swap
    ("i prefer DAY OF THE WOMAN, a cult film", "i prefer DAY OF THE WOMAN, a cult film"),
    ("THE INVISIBLE MAN is dull, but the man was good", "THE INVISIBLE MAN is dull, but the woman was good"),
    ("HE WAS AWFUL and HIS MOTHER too", "SHE WAS AWFUL and HER MOTHER too"),
    ("a WOMAN in a hat", "a MAN in a hat"),
    # grammar: her as object -> him, as possessive determiner -> his
    ("I gave her the book.", "I gave him the book."),
    ("He admits her deepest darkest secret to his viewers.", "She admits his deepest darkest secret to her viewers."),
    ("Her performance was great and I loved her.", "His performance was great and I loved him."),
    # his as a standalone possessive pronoun -> hers; hers -> his; him -> her
    ("The book is his.", "The book is hers."),
    ("hers is better than his", "his is better than hers"),
    ("They thanked him, then her.", "They thanked her, then him."),
])
def test_gender_swap_respects_words_case_and_grammar(bundled, text, expected):
    assert swap_gender(text, bundled)[0] == expected


def test_gender_swap_without_a_tagger_uses_the_next_word(bundled):
    assert swap_gender("I gave her the book, it is his and his dog likes her.", bundled, grammar=False)[0] == (
        "I gave him the book, it is hers and her dog likes him.")


def test_swap_triple_tags_the_parts_together(bundled):
    assert swap_triple(Triple("He", "admits", "her deepest secret"), bundled)[0] == Triple("She", "admits", "his deepest secret")
    assert swap_triple(Triple("The actress", "thanks", "her"), bundled)[0] == Triple("The actor", "thanks", "him")


def test_bundled_spelling_is_corrected(bundled):
    assert bundled["god"] == "goddess" and bundled["goddess"] == "god"
    assert "godess" not in bundled and "mentleman" not in bundled


def test_arrange_keeps_principal_and_spurious_in_place_and_is_seeded():
    cats = ["principal", "normal", "spurious", "normal", "normal", "principal"]
    orders = {tuple(arrange(cats, random.Random(s), shuffle=True)) for s in range(30)}
    for order in orders:
        assert order[0] == 0 and order[2] == 2 and order[5] == 5
        assert sorted(order) == list(range(6))
    assert len(orders) > 1  # the normal triples do move
    assert arrange(cats, random.Random(7)) == arrange(cats, random.Random(7))
    dropped = arrange(cats, random.Random(1), drop_prob=0.99)
    assert {0, 2, 5} <= set(dropped) and len(dropped) < 6
    assert arrange(["normal"], random.Random(0), drop_prob=0.99) == [0]  # never empty


@pytest.mark.parametrize(("answer", "expected", "ok"), [
    ('Text: "The acting is wooden."', "The acting is wooden.", True),
    ("```\nThe plot drags.\n```", "The plot drags.", True),
    ("Line one.\nLine two.", "Line one. Line two.", True),
    ("", "", False),
    ("a | b | c\nd | e | f", None, False),
    ("x" * 2000, None, False),
])
def test_clean_reconstruction(answer, expected, ok):
    text, problem = clean_reconstruction(answer, "The acting is superb.")
    assert (problem is None) == ok
    if expected is not None:
        assert text == expected


FACTS = [Triple("The acting", "is", "wooden"), Triple("the story", "lost", "me long before the end")]


@pytest.mark.parametrize(("answer", "ok"), [
    ("The acting is wooden, and the story lost me long before the end.", True),
    ("Wooden acting; the story lost me.", True),            # a paraphrase keeping enough of the facts
    ("Negative", False),                                    # only the label (what small models answer)
    ("negative.", False),
    ("I really enjoyed this film with my family.", False),  # does not express the facts
])
def test_reconstruction_must_express_the_facts(answer, ok):
    _, problem = clean_reconstruction(answer, "The acting is superb and the story kept me gripped.",
                                      facts=FACTS, labels=["Negative", "Positive"])
    assert (problem is None) == ok, problem


def test_targets():
    assert targets_for("Positive", ["Negative", "Positive"], "other") == ["Negative"]
    assert targets_for("neutral", ["contradiction", "entailment", "neutral"], "each") == ["contradiction", "entailment"]
    assert targets_for("neutral", ["contradiction", "entailment", "neutral"], "entailment") == ["entailment"]
    with pytest.raises(GenerationConfigError, match="not in the dataset"):
        targets_for("a", ["a", "b"], "c")
    assert GenerateSettings().edit_fields("pair") == ("hypothesis",)
    with pytest.raises(GenerationConfigError):
        GenerateSettings(fields=("text",)).edit_fields("pair")
    assert GenerateSettings(seed=1).key() != GenerateSettings(seed=2).key()


def test_reconstruction_must_carry_the_edit():
    original = "The acting is superb and the story kept me gripped until the end."
    # a copy of the original (what a 1.5B model did when shown it) is refused
    assert clean_reconstruction(original, original, facts=FACTS)[1]
    # the rewrite brought in "wooden" and "lost": a text with neither is refused
    problem = clean_reconstruction("The acting and the story kept me gripped until the end.", original,
                                   facts=FACTS, edited=["wooden", "lost"])[1]
    assert problem and "edited facts" in problem
    assert clean_reconstruction("The acting is wooden; the story lost me long before the end.", original,
                                facts=FACTS, edited=["wooden", "lost"])[1] is None


def test_names_person_reads_the_entity_recogniser():
    from engine.counterbias.manipulate import names_person
    from engine.text.nlp import load_spacy

    if load_spacy() is None:
        pytest.skip("spaCy's pipeline is not installed: names_person is False without it")
    assert names_person("A tired Burt Reynolds plays a mercenary battling his former employers.")
    assert not names_person("The mother and her son move into a small town with a secret.")
    # the recogniser reads Milo (CAD dev review 1950) as an organisation; the pronoun after him says it is a person
    milo = ("Instead, the main elements were the struggle to get to Atlantis, as Milo the outsider was able to learn "
            "all he ever needed to know about the place.")
    assert names_person(milo)
    assert not names_person("The film is dull. He said so, and his wife agreed.")  # no name before the pronoun
    # spaCy reads the surname Heston (CAD train review) as a place; the pronoun stands two sentence ends later
    heston = ("One really dumb scene shows Heston emptying .45 cases of their powder and collecting it in a sack for "
              "the purpose of starting a fire. A. To gather that much gunpowder he would have needed a pack mule.")
    assert names_person(heston)
    # a gendered noun between a place and the pronoun takes the reference: the text's swap stays consistent
    assert not names_person("It is set in Paris, and I loved watching the lead actress, a stunning blonde, run amok in "
                            "her flat.")


@pytest.mark.parametrize(("text", "expected"), [
    # a gendered word used as a verb is not a person ("miss" -> "sir" broke an accepted candidate)
    ("I will always miss it.", "I will always miss it."),
    ("They man the boats and master the sea; the man is a master.", "They man the boats and master the sea; the woman is a mistress."),
    ("He grooms the horses for the groom.", "She grooms the horses for the bride."),
    ("You will miss the old man.", "You will miss the old woman."),
    # exclamations
    ("Oh boy, what a film! Boy, was I wrong. My God, the boy.", "Oh boy, what a film! Boy, was I wrong. My God, the girl."),
    ("Man, that was bad, said the man.", "Man, that was bad, said the woman."),
    ("The actress is seriously god awful-I pray her career ended. God knows why the god smiled.",
     "The actor is seriously god awful-I pray his career ended. God knows why the goddess smiled."),
    # a possessive before a function word stands alone
    ("It is his and his dog likes her.", "It is hers and her dog likes him."),
    ("In his very first film her so-called friends leave.", "In her very first film his so-called friends leave."),
    # idioms, and pairs of the bundled lists that name no person of either gender
    ("A chick flick for the girls: a host of clichés, and the host was rude.",
     "A chick flick for the boys: a host of clichés, and the hostess was rude."),
    ("The gay man took viagra, grew a beard and fed the bull.", "The gay woman took viagra, grew a beard and fed the bull."),
    ("Thank god the god Thor, a god of thunder, kept his faith in God.",
     "Thank god the goddess Thor, a goddess of thunder, kept her faith in God."),
    ("Praise the Lord: a Lord of the Rings clone where the lord of the manor fights.",
     "Praise the Lord: a Lord of the Rings clone where the lady of the manor fights."),
])
def test_gender_swap_leaves_verbs_and_exclamations(bundled, text, expected):
    assert swap_gender(text, bundled)[0] == expected


def test_gender_swap_without_a_tagger_reads_a_word_after_a_modal_as_a_verb(bundled):
    assert swap_gender("I will miss him, you miss her; the man and the miss.", bundled, grammar=False)[0] == (
        "I will miss her, you miss him; the woman and the sir.")
