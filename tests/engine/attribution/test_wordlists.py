"""Bundled gender lists and user lists."""

from __future__ import annotations

import pytest

from engine.attribution import (
    WordlistError,
    available_wordlists,
    combine_wordlists,
    gender_pairs,
    load_wordlist,
    parse_wordlist,
    read_wordlist,
)


def test_bundled_gender_lists() -> None:
    assert set(available_wordlists()) == {"winobias-gender", "gn-glove-gender", "gender"}
    wino = load_wordlist("winobias-gender")
    assert {"he", "she", "him", "her", "actor", "actress", "cowboy", "cowgirl"} <= wino
    glove = load_wordlist("gn-glove-gender")
    assert {"countryman", "countrywoman", "fathers", "mothers"} <= glove
    assert load_wordlist("gender") == wino | glove
    assert ("actor", "actress") in gender_pairs() and ("countryman", "countrywoman") in gender_pairs()
    with pytest.raises(WordlistError):
        load_wordlist("race")


def test_the_swap_leaves_pairs_that_name_no_person_but_they_stay_spurious_words() -> None:
    from engine.attribution.wordlists import not_swapped, swap_pairs

    pairs = set(swap_pairs())
    assert {("actor", "actress"), ("he", "she"), ("countryman", "countrywoman")} <= pairs
    for a, b in [("gay", "lesbian"), ("cialis", "viagra"), ("macho", "effeminate"), ("bull", "cow")]:
        assert (a, b) in gender_pairs() and (a, b) not in pairs
    assert not {w for p in pairs for w in p} & not_swapped()
    assert not_swapped() <= load_wordlist("gender")  # every word is a word of the lists (catches a typo)


def test_user_lists(tmp_path) -> None:
    assert parse_wordlist("Spielberg, Hitchcock\n# directors\nDVD  vhs # formats") == {"spielberg", "hitchcock", "dvd", "vhs"}
    path = tmp_path / "mine.txt"
    path.write_text("Oscar\nNetflix\n", encoding="utf-8")
    assert read_wordlist(path) == {"oscar", "netflix"}
    with pytest.raises(WordlistError):
        read_wordlist(tmp_path / "missing.txt")
    assert combine_wordlists(["winobias-gender"], ["Netflix"]) >= {"netflix", "he"}


def test_attribution_file_is_bundled() -> None:
    import resources

    text = resources.path("wordlists", "ATTRIBUTION.md").read_text(encoding="utf-8")
    assert "uclanlp/corefBias" in text and "uclanlp/gn_glove" in text
