"""The one canonical word segmentation every ensemble member and method shares.

Attribution scores from different tokenizers (BERT WordPiece, RoBERTa byte-level BPE, MPNet)
can only be compared, ranked and voted on once they are mapped onto *the same* words. This
module defines those words: :func:`segment` turns a text into a list of :class:`Word` spans
``(text, start, end, kind)`` with character offsets into the original string, so the GUI can
highlight them and :mod:`engine.text.align` can map sub-word tokens onto them.

Rules (regular expressions, tried in this order at each position; whitespace separates):

``markup``
    An HTML tag such as IMDb's ``<br />``, ``<i>`` or ``</i>`` is one token. Markup is kept so
    that attribution sums stay complete, but it is never a candidate for principal or spurious
    words.
``emoji``
    Each emoji is its own token, including skin-tone modifiers, variation selectors, keycaps,
    zero-width-joiner sequences (``👨‍👩‍👧``) and flag pairs. ``😀👍`` is two tokens.
``number``
    Digits joined by ``.``, ``,``, ``:`` or ``/``: ``3.5``, ``1,000``, ``7/10``, ``10:30``.
    (Plain digit runs such as ``1990`` match the ``word`` rule and are typed ``number``.)
``word``
    Letters and digits (any script; every combining mark stays on its letter, so NFC ``café`` and NFD
    ``cafe\u0301`` are both one word, and Thai vowel signs and tone marks never stand alone) joined by internal apostrophes (``'`` or ``’``) or
    hyphens. Contractions stay whole: ``didn't``, ``it's``, ``I'm``, ``rock'n'roll``;
    ``well-made`` is one word. A leading or trailing apostrophe (``'90s``, ``actors'``) is
    punctuation.
``punct``
    Any other non-space character. A run of the *same* mark is one token (``!!!``, ``...``,
    ``--``), different marks are separate (``?!`` is two).

Punctuation is *included* in the segmentation (with ``kind="punct"``) rather than dropped, so
that every non-special sub-word token lands on some canonical token and per-word attributions
still add up to the model's output difference (IG completeness). Consumers that want words
only use :attr:`Word.is_lexical` (``word``, ``number``, ``emoji``), as the vote does.

:func:`normalize` gives the comparison key of a word (NFC, case-folded, typographic
apostrophes folded to ``'``), used when counting the same word across members and examples.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["FUNCTION_WORDS", "KINDS", "LEXICAL_KINDS", "Word", "lexical_words", "normalize", "segment", "words_of"]

#: Every token kind :func:`segment` produces.
KINDS = ("word", "number", "emoji", "punct", "markup")
#: Kinds that can be principal or spurious words.
LEXICAL_KINDS = frozenset({"word", "number", "emoji"})

#: Function words (articles, conjunctions, prepositions, pronouns, auxiliaries): never named as label words to
#: replace (a vote may pick them; naming them misleads the LLM) and never keywords of a retrieved excerpt.
#: Negations (``not``, ``never``, ``no``) are not in it: they carry labels.
FUNCTION_WORDS = frozenset(
    "a an the and or but if when while as of to in on at by for with from this that these those it its is are was "
    "were be been being do does did done have has had i you he she we they me him her us them my your his our their "
    "so than then there here what which who whom".split())

_ALNUM = r"[^\W_]"
_APOS = "'\u2019\u02bc"
_EMOJI_BASE = "\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\u3030\u303d\u3297\u3299\U0001f000-\U0001faff"
_EMOJI_MOD = "\U0001f3fb-\U0001f3ff\ufe0f\u20e3\U000e0020-\U000e007f"
_EMOJI_ONE = rf"[{_EMOJI_BASE}][{_EMOJI_MOD}]*"



def _mark_ranges() -> str:
    """Every combining mark (Unicode categories Mn, Mc, Me) as a character-class body of ranges.

    Read from :mod:`unicodedata` (so every script is covered: Thai vowel signs and tone marks, Devanagari
    matras, Hebrew points…); marks exist only below U+20000 and in the variation selectors U+E0100–U+E01EF.
    """
    category = unicodedata.category
    codes = [c for block in (range(0x20000), range(0xE0100, 0xE01F0)) for c in block if category(chr(c))[0] == "M"]
    spans: list[list[int]] = []
    for c in codes:
        if spans and spans[-1][1] == c - 1:
            spans[-1][1] = c
        else:
            spans.append([c, c])
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in spans)


@functools.lru_cache(maxsize=1)
def _pattern() -> re.Pattern[str]:
    """The segmentation rules (compiled on first use: listing the marks takes a few tens of ms)."""
    word_body = rf"{_ALNUM}(?:{_ALNUM}|[{_mark_ranges()}])*"
    return re.compile(
        "|".join(
            [
                r"(?P<markup></?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]{0,200}?)?\s*/?>)",
                rf"(?P<emoji>[\U0001f1e6-\U0001f1ff]{{2}}|{_EMOJI_ONE}(?:\u200d{_EMOJI_ONE})*|[0-9#*]\ufe0f?\u20e3)",
                r"(?P<number>\d+(?:[.,:/]\d+)+)",
                rf"(?P<word>{word_body}(?:[{_APOS}\-]{word_body})*)",
                r"(?P<punct>([^\w\s]|_)\6*)",
            ]
        )
    )

_DIGITS_ONLY = re.compile(r"[\d.,:/]+")
_FOLD_APOS = str.maketrans({"\u2019": "'", "\u02bc": "'", "\u2018": "'"})


class Word(NamedTuple):
    """One canonical token: its surface text, character span ``[start, end)`` and kind."""

    text: str
    start: int
    end: int
    kind: str

    @property
    def is_lexical(self) -> bool:
        """Whether this token is a word, number or emoji (not punctuation or markup)."""
        return self.kind in LEXICAL_KINDS

    @property
    def key(self) -> str:
        """The comparison key (:func:`normalize` of the text)."""
        return normalize(self.text)


def segment(text: str) -> list[Word]:
    """Split ``text`` into canonical tokens with character offsets.

    Parameters
    ----------
    text
        Any string (``None`` is treated as empty).

    Returns
    -------
    list of Word
        Non-overlapping spans in text order; ``text[w.start:w.end] == w.text``.

    Examples
    --------
    >>> [w.text for w in segment("I didn't love it... 7/10 👍🏽")]
    ['I', "didn't", 'love', 'it', '...', '7/10', '👍🏽']
    """
    if not text:
        return []
    out: list[Word] = []
    for match in _pattern().finditer(text):
        kind = match.lastgroup
        if kind == "word" and _DIGITS_ONLY.fullmatch(match.group()):
            kind = "number"
        out.append(Word(match.group(), match.start(), match.end(), str(kind)))
    return out


def words_of(text: str) -> list[str]:
    """The surface texts of :func:`segment` (convenience for tests and displays)."""
    return [w.text for w in segment(text)]


def lexical_words(words: Sequence[Word]) -> list[Word]:
    """Keep only words, numbers and emoji."""
    return [w for w in words if w.is_lexical]


def normalize(word: str) -> str:
    """Comparison key of a word: NFC, case-folded, curly apostrophes made straight.

    Examples
    --------
    >>> normalize("Didn\u2019t") == normalize("didn't")
    True
    """
    return unicodedata.normalize("NFC", word).translate(_FOLD_APOS).casefold()
