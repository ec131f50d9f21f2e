"""Made-up words: words a language model coined while editing a text ("whitemailed" for "blackmailed").

A small model asked to turn a sentence's opinion sometimes flips a word *inside* another word
("blackmailed" → "whitemailed", "ridiculousness" → "ridiculousity"). Such a word passes every other
check (it is not a leak, not a refusal, the sentence is still an edit) and reads as nonsense. A
word is *coined* when it is new (not in the original text), starts lowercase or starts a sentence
(a capitalised word inside a sentence is a name, which may be new and right), is at least
:data:`MIN_LENGTH` letters long, and neither it nor a regular variant of it (a contraction's stem,
British ``-ise``/``-our`` spelled ``-ize``/``-or``) is known: in the English word list of the
``pyspellchecker`` package (160k word forms, inflections included) or in the dataset's own words
(``known``: words of at least two of its texts, so that slang the reviews use — "rewatchable",
"badass" — counts as a word and a typo seen once does not).

The word list is loaded once per process (≈ 0.2 s). Without the package, :func:`english_words`
is ``None`` and nothing counts as coined.

Measured (with scripts outside the repository) on the 373 distinct candidates of the CoBA quality runs kept
from earlier work (the bundled Qwen2.5-Coder-1.5B editing CAD reviews; the dataset's words = CAD train): 12 are
flagged, for five coinages ("whitemailed", "ridiculousity", "subcontext", "clemental", "mutant-embowelment"), no
real word among them. On the CAD editors' own revisions (1,952 pairs) 165 are flagged: mostly typos ("masterpeice",
"unreasonbaly") and ``un-`` coinages ("unthrilling"), and about 20 real but rare words ("impactful", "snoozefest",
"rewatching") — about 1 % of good edits, the price of the check.

Examples
--------
>>> words = frozenset({"the", "plot", "blackmailed", "him", "was", "dull", "bright"})
>>> coined_words("The plot whitemailed him.", "The plot blackmailed him.", english=words)
['whitemailed']
>>> coined_words("The plot was bright.", "The plot was dull.", english=words)
[]
>>> coined_words("Then Nordland arrived.", "Then he arrived.", english=words)  # a name, not a coinage
[]
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable

__all__ = ["ENGLISH_SHARE", "MIN_LENGTH", "coined_words", "corpus_words", "english_share", "english_words", "is_known"]

#: Below this share of known words (:func:`english_share`) a text is taken as not English: nothing in it is judged.
ENGLISH_SHARE = 0.7
#: Shorter new words are not judged (abbreviations, interjections: "dvd", "meh").
MIN_LENGTH = 4

_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_CLITIC = re.compile(r"(?:n['’]t|['’](?:s|d|ll|re|ve|m))$")
#: British spellings tried as their American forms (the word list is mostly American).
_VARIANTS = ((re.compile(r"is(e|ed|es|ing|ation|ations|er|ers)$"), r"iz\1"),
             (re.compile(r"our(s|ed|ing|ite|ites|able|ful)?$"), r"or\1"),
             (re.compile(r"ogue$"), "og"), (re.compile(r"tre(s)?$"), r"ter\1"))


@functools.cache
def english_words() -> frozenset[str] | None:
    """The English word forms of the ``pyspellchecker`` package (lowercase), or ``None`` without it."""
    try:
        from spellchecker import SpellChecker
    except ImportError:
        return None
    return frozenset(SpellChecker(language="en").word_frequency.dictionary.keys())


def _forms(word: str) -> list[str]:
    """``word`` (lowercase) and the variants tried when it is not known itself."""
    word = word.lower().replace("’", "'")
    stem = _CLITIC.sub("", word)
    forms = [word, stem]
    for pattern, repl in _VARIANTS:
        if pattern.search(stem):
            forms.append(pattern.sub(repl, stem))
    return forms


def is_known(word: str, english: frozenset[str], known: Iterable[str] = ()) -> bool:
    """Whether ``word`` (or each part of a hyphenated word) is a word of ``english`` or of ``known``.

    >>> is_known("Under-Dramatised", frozenset({"under", "dramatized"}))
    True
    >>> is_known("didn't", frozenset({"did"}))
    True
    """
    known = known if isinstance(known, (set, frozenset)) else set(known)
    parts = [p for p in re.split(r"-", word) if p]
    return all(len(p) < MIN_LENGTH or any(f in english or f in known for f in _forms(p)) for p in parts) or \
        any(f in english or f in known for f in _forms(word))


def coined_words(new: str, original: str, *, known: Iterable[str] = (),
                 english: frozenset[str] | None = None) -> list[str]:
    """The words of ``new`` that are in neither ``original``, the word list nor ``known`` (see the module doc);
    none when ``original`` is not English (:func:`english_share` under :data:`ENGLISH_SHARE`).

    Parameters
    ----------
    new, original
        The edited text and the text it was made from.
    known
        More words to accept (lowercase): the dataset's words (:func:`corpus_words`).
    english
        The word list (default: :func:`english_words`; without it nothing is coined).
    """
    english = english_words() if english is None else english
    if not english or english_share(original, english) < ENGLISH_SHARE:
        return []
    seen = {m.group(0).lower().replace("’", "'") for m in _WORD.finditer(original)}
    known = known if isinstance(known, (set, frozenset)) else set(known)
    found: list[str] = []
    for m in _WORD.finditer(new):
        word = m.group(0)
        if word.lower().replace("’", "'") in seen or len(word) < MIN_LENGTH or word in found:
            continue
        before = new[:m.start()].rstrip()
        if word[0].isupper() and before and before[-1] not in ".!?\"'“‘(:;>":
            continue  # capitalised inside a sentence: a name
        if word[0].isupper() and word[1:2].isupper():
            continue  # an acronym
        if not is_known(word, english, known):
            found.append(word)
    return found


def corpus_words(texts: Iterable[str], min_texts: int = 2) -> frozenset[str]:
    """Lowercase words found in at least ``min_texts`` of ``texts`` (a typo seen once is not a word)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update({m.group(0).lower().replace("’", "'") for m in _WORD.finditer(text or "")})
    return frozenset(w for w, n in counts.items() if n >= min_texts)


def english_share(text: str, english: frozenset[str] | None = None) -> float:
    """The share of ``text``'s words (of :data:`MIN_LENGTH` letters or more) that the word list knows; 1.0 when
    it has none or there is no word list. Below :data:`ENGLISH_SHARE` the text is not English and :func:`coined_words`
    means nothing."""
    english = english_words() if english is None else english
    words = [m.group(0) for m in _WORD.finditer(text) if len(m.group(0)) >= MIN_LENGTH]
    if not english or not words:
        return 1.0
    return sum(is_known(w, english) for w in words) / len(words)
