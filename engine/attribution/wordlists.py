"""Word lists that join the spurious words W_s: bundled gender lists and the user's own.

Bundled (``resources/wordlists``, see its ``ATTRIBUTION.md``):

``winobias-gender``
    Both sides of WinoBias' ``generalized_swaps.txt`` and ``extra_gendered_words.txt``
    (Zhao et al., NAACL 2018), the list CoBA uses for its gender-bias experiment.
``gn-glove-gender``
    The GN-GloVe male and female seed words (Zhao et al., EMNLP 2018).
``gender``
    The union of the two.

The gender swap of counterbias generation uses :func:`swap_pairs`: the pairs of both lists except
those naming something other than a person of either gender (``not_swapped.txt``: sexual
orientation, anatomy, medicines, stereotyped traits, animals — GN-GloVe pairs *gay/lesbian*,
*viagra/cialis*, *macho/effeminate*). Those words stay in the spurious lists.

Four misspellings of the published lists (``godess``, ``mentleman``, …) are corrected on reading.

User lists are plain text: one or more words per line, separated by whitespace or commas,
``#`` starts a comment. Words are compared with :func:`engine.text.normalize` (case-folded).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import resources
from engine.attribution.errors import WordlistError
from engine.text import normalize

__all__ = ["available_wordlists", "gender_pairs", "load_wordlist", "not_swapped", "parse_wordlist", "read_wordlist",
           "swap_pairs"]

_FOLDER = ("wordlists",)
_WINOBIAS = ("winobias_generalized_swaps.txt", "winobias_extra_gendered_words.txt")
_GN_GLOVE = ("gn_glove_male.txt", "gn_glove_female.txt")
_NOT_SWAPPED = "not_swapped.txt"
#: Misspellings in the upstream lists, corrected when the lists are read (the files stay as published).
_SPELLING = {"godess": "goddess", "godesses": "goddesses", "mentleman": "gentleman", "seamstress'": "seamstresses"}


def _fix(word: str) -> str:
    return _SPELLING.get(word, word)

_DESCRIPTIONS = {
    "winobias-gender": "WinoBias gender swap pairs, both sides (Zhao et al. 2018, MIT)",
    "gn-glove-gender": "GN-GloVe male and female seed words (Zhao et al. 2018, Apache-2.0)",
    "gender": "Union of the WinoBias and GN-GloVe gender words",
}


def available_wordlists() -> dict[str, str]:
    """Names and descriptions of the bundled lists."""
    return dict(_DESCRIPTIONS)


def _lines(name: str) -> list[str]:
    return resources.path(*_FOLDER, name).read_text(encoding="utf-8").splitlines()


@lru_cache(maxsize=1)
def gender_pairs() -> tuple[tuple[str, str], ...]:
    """``(word, swap)`` pairs from WinoBias then GN-GloVe (male line *i* with female line *i*), de-duplicated."""
    pairs: list[tuple[str, str]] = []
    for name in _WINOBIAS:
        for line in _lines(name):
            parts = line.split()
            if len(parts) >= 2:
                pairs.append((_fix(normalize(parts[0])), _fix(normalize(parts[1]))))
    male, female = (_lines(n) for n in _GN_GLOVE)
    for m, f in zip(male, female):
        if m.strip() and f.strip():
            pairs.append((_fix(normalize(m.strip())), _fix(normalize(f.strip()))))
    return tuple(dict.fromkeys(pairs))


@lru_cache(maxsize=1)
def not_swapped() -> frozenset[str]:
    """Words of the gender lists the swap leaves as they are (``resources/wordlists/not_swapped.txt``)."""
    return parse_wordlist(resources.path(*_FOLDER, _NOT_SWAPPED).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def swap_pairs() -> tuple[tuple[str, str], ...]:
    """The :func:`gender_pairs` the gender swap uses: those with neither word in :func:`not_swapped`.

    Examples
    --------
    >>> ("actor", "actress") in swap_pairs(), ("gay", "lesbian") in swap_pairs()
    (True, False)
    """
    keep = not_swapped()
    return tuple(p for p in gender_pairs() if p[0] not in keep and p[1] not in keep)


@lru_cache(maxsize=None)
def load_wordlist(name: str) -> frozenset[str]:
    """The normalised words of a bundled list.

    Raises
    ------
    WordlistError
        For an unknown name.
    """
    if name not in _DESCRIPTIONS:
        raise WordlistError(f"No bundled word list {name!r}.", f"Use one of: {', '.join(_DESCRIPTIONS)}.")
    words: set[str] = set()
    if name in ("winobias-gender", "gender"):
        for file in _WINOBIAS:
            for line in _lines(file):
                words.update(_fix(normalize(w)) for w in line.split())
    if name in ("gn-glove-gender", "gender"):
        for file in _GN_GLOVE:
            words.update(_fix(normalize(w.strip())) for w in _lines(file) if w.strip())
    return frozenset(w for w in words if w)


def parse_wordlist(text: str) -> frozenset[str]:
    """Words of a user list (whitespace/comma separated, ``#`` comments), normalised."""
    words: set[str] = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        words.update(normalize(w) for w in line.replace(",", " ").split())
    return frozenset(w for w in words if w)


def read_wordlist(path: str | Path) -> frozenset[str]:
    """Read a user list from a UTF-8 text file.

    Raises
    ------
    WordlistError
        If the file cannot be read.
    """
    path = Path(path)
    try:
        return parse_wordlist(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise WordlistError(f"Cannot read the word list {path}: {exc}.", "Choose a UTF-8 text file, one word per line.") from exc


def combine_wordlists(names: Iterable[str] = (), extra: Iterable[str] = ()) -> frozenset[str]:
    """Union of bundled lists ``names`` and ``extra`` words (normalised)."""
    words: set[str] = {normalize(w) for w in extra if w and w.strip()}
    for name in names:
        words |= load_wordlist(name)
    return frozenset(words)
