"""Reading ``subject | predicate | object`` lines out of an LLM answer.

LLM output is untrusted data: it is only split and compared as text here, never
executed, evaluated or formatted into anything. :func:`parse_triples` checks the format
alone; :func:`parse_answer` adds the checks that need the request (an answer cut at
``max_tokens``, triples that do not come from the sentence).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from engine.llm.base import ChatResult

#: Longest accepted subject or object, and predicate (characters / words).
MAX_PART_CHARS = 200
MAX_ARG_WORDS = 30
MAX_PREDICATE_WORDS = 12
#: Triples kept from one answer; further lines are rejected.
MAX_TRIPLES_PER_ANSWER = 30


class Triple(NamedTuple):
    """One fact: ``subject | predicate | object``."""

    subject: str
    predicate: str
    object: str


class RejectedLine(NamedTuple):
    """A non-empty answer line that is not a triple, and why."""

    line: str
    reason: str


_FENCE = re.compile(r"^(```|~~~)[\w+-]*$")
_HEADER = re.compile(
    r"^(?:#{1,6}\s*)?[*_]{0,2}\s*(?:semantic\s+)?(?:triples?|triplets?|facts?|output|answer)\s*:?\s*[*_]{0,2}\s*:?$",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^(?:\(?\d{1,3}(?:[-.]\d{1,3})*[.):]\s*|[-*+–—]\s+|[•·●▪‣]\s*)")
_TABLE_RULE = re.compile(r"^\|?[\s:|-]+\|?$")
_LABEL = re.compile(r"^(?:subject|predicate|relation|verb|object)\s*:\s*", re.IGNORECASE)
_QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’", "«": "»"}
_HEADER_WORDS = {"subject", "predicate", "object", "relation", "verb", "s", "p", "o"}


def _unwrap(text: str) -> str:
    """Strip whitespace, matching outer quotes and markdown bold/italic marks.

    A pair is stripped only when the text inside holds no other such mark, so
    ``**a** | b | **c**`` is left for the per-part pass.
    """
    text = text.strip()
    for _ in range(2):
        if len(text) >= 2 and text[0] in _QUOTES and text[-1] == _QUOTES[text[0]]:
            inner = text[1:-1]
            if text[0] not in inner and text[-1] not in inner:
                text = inner.strip()
        for mark in ("**", "__", "*", "_"):
            if len(text) > 2 * len(mark) and text.startswith(mark) and text.endswith(mark):
                inner = text[len(mark) : -len(mark)]
                if mark not in inner:
                    text = inner.strip()
                break
    return text


def _clean_part(part: str, *, last: bool) -> str:
    part = _LABEL.sub("", _unwrap(part))
    part = _unwrap(part)
    if last:
        part = _unwrap(part.rstrip(" .;,"))
    return part


def parse_triples(text: str) -> tuple[list[Triple], list[RejectedLine]]:
    """Read ``subject | predicate | object`` lines from an LLM answer.

    Tolerated and ignored: blank lines, code fences, a header such as ``Triples:``, a
    markdown table's header and rule rows. Tolerated and stripped: numbering (``1.``,
    ``1)``, ``(1)``, ``1-1.``), bullets (``-``, ``*``, ``•``), surrounding spaces, quotes
    and bold marks, a leading or trailing (table) pipe, ``Subject:``-style labels, a trailing
    full stop.
    Rejected (returned with a reason): lines without ``|`` (prose), lines that do not
    split into exactly three non-empty parts, parts that are too long, and lines past
    :data:`MAX_TRIPLES_PER_ANSWER`. Duplicates are kept once.

    Parameters
    ----------
    text
        The raw answer (untrusted: only parsed).

    Returns
    -------
    triples : list of Triple
    rejected : list of RejectedLine

    Examples
    --------
    >>> parse_triples("Triples:\\n1. The plot | is | thin.\\nI hope this helps!")
    ([Triple(subject='The plot', predicate='is', object='thin')], [RejectedLine(line='I hope this helps!', reason='prose: no "|" separators')])
    """
    triples: list[Triple] = []
    rejected: list[RejectedLine] = []
    seen: set[tuple[str, str, str]] = set()
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or _FENCE.match(line) or _HEADER.match(line) or _TABLE_RULE.match(line):
            continue
        body = _unwrap(_BULLET.sub("", line, count=1))
        if body.startswith("|"):  # table-style outer pipes
            body = body[1:]
        if body.endswith("|"):
            body = body[:-1]
        if "|" not in body:
            rejected.append(RejectedLine(line, 'prose: no "|" separators'))
            continue
        raw_parts = body.split("|")
        if len(raw_parts) != 3:
            rejected.append(RejectedLine(line, f"{len(raw_parts)} parts, expected 3"))
            continue
        parts = [_clean_part(p, last=(i == 2)) for i, p in enumerate(raw_parts)]
        if not all(parts):
            rejected.append(RejectedLine(line, "an empty part"))
            continue
        if {p.lower() for p in parts} <= _HEADER_WORDS:
            continue  # a table header or the format echoed back
        reason = _too_long(parts)
        if reason:
            rejected.append(RejectedLine(line, reason))
            continue
        if len(triples) >= MAX_TRIPLES_PER_ANSWER:
            rejected.append(RejectedLine(line, f"more than {MAX_TRIPLES_PER_ANSWER} triples"))
            continue
        key = tuple(p.casefold() for p in parts)
        if key not in seen:
            seen.add(key)
            triples.append(Triple(*parts))
    return triples, rejected


def _too_long(parts: Sequence[str]) -> str | None:
    for name, part, max_words in zip(
        ("subject", "predicate", "object"), parts, (MAX_ARG_WORDS, MAX_PREDICATE_WORDS, MAX_ARG_WORDS)
    ):
        if len(part) > MAX_PART_CHARS or len(part.split()) > max_words:
            return f"{name} too long ({len(part.split())} words)"
    return None


_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_FUNCTION_WORDS = frozenset(
    "a an the of in on at to for from with by as and or but is are was were be been being "
    "this that these those it its there here".split()
)


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def is_grounded(triple: Triple, sentence: str) -> bool:
    """Whether the triple's subject and object come from ``sentence``.

    At least half of their content words (all words if none is a content word) must occur
    in the sentence; words of five or more letters match on their first five letters
    (``hoping`` ~ ``hoped`` does not, ``battling`` ~ ``battle`` does). The predicate is not
    checked: it is often a paraphrase (``wears``). This rejects small models' echoes of the
    prompt's own examples (``I | walked out | after twenty minutes``).

    Examples
    --------
    >>> is_grounded(Triple("The plot", "is", "thin"), "The plot is painfully thin.")
    True
    >>> is_grounded(Triple("I", "walked out", "after twenty minutes"), "This movie is not very good.")
    False
    """
    have = set(_words(sentence))
    prefixes = {w[:5] for w in have if len(w) >= 5}
    words = _words(f"{triple.subject} {triple.object}")
    content = [w for w in words if w not in _FUNCTION_WORDS] or words
    if not content:
        return False
    hits = sum(1 for w in content if w in have or (len(w) >= 5 and w[:5] in prefixes))
    return 2 * hits >= len(content)


def parse_answer(result: ChatResult, sentence: str | None = None) -> tuple[list[Triple], list[RejectedLine]]:
    """:func:`parse_triples` on a completion, plus the checks that need the request.

    A last line cut off at ``max_tokens`` is dropped, and, when ``sentence`` is given,
    triples not grounded in it (:func:`is_grounded`) are rejected.
    """
    text = result.text
    cut: list[RejectedLine] = []
    if result.finish_reason == "length":
        lines = text.rstrip().splitlines()
        if lines:
            cut.append(RejectedLine(lines[-1].strip(), "cut off at max_tokens"))
            text = "\n".join(lines[:-1])
    triples, rejected = parse_triples(text)
    if sentence is not None:
        kept = []
        for t in triples:
            if is_grounded(t, sentence):
                kept.append(t)
            else:
                rejected.append(RejectedLine(" | ".join(t), "not grounded in the sentence"))
        triples = kept
    return triples, rejected + cut
