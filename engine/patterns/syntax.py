"""The symbolic pattern language (after PaTAT, Gebreegziabher et al. 2023) and its parser.

A pattern describes a run of words. Elements:

==============  =========================================================================
``word``        the word itself (case-insensitive)
``[word]``      any form of the word: same lemma or same Porter stem (``[have]``: *had*, *has*)
``(word)``      a soft match: the word, its forms, or a word the soft matcher finds similar
                (``(pricey)``: *expensive*, *costly*)
``$TYPE``       an entity of that type (``$PERSON``, ``$ORG``, ``$DATE``, ``$LOCATION``, …)
``NOUN``        a part of speech (universal tags: ``ADJ``, ``ADV``, ``NOUN``, ``VERB``, …)
``*``           any run of words, also none
==============  =========================================================================

``+`` joins elements into a sequence of consecutive words (punctuation between words is
skipped); ``|`` separates alternatives, each a sequence (``|`` binds loosest:
``[food]+ADJ|(price)`` is ``[food]+ADJ`` or ``(price)``).

Examples
--------
>>> p = parse("[food] + * + ADJ | (pricey)")
>>> [[e.spec for e in seq] for seq in p.alternatives]
[['[food]', '*', 'ADJ'], ['(pricey)']]
>>> str(p)
'[food]+*+ADJ|(pricey)'
>>> parse("[food]+")
Traceback (most recent call last):
...
engine.patterns.errors.PatternSyntaxError: [CB971] Pattern '[food]+' ends where an element should follow '+' (at 7).
What to do: Join elements with '+' and alternatives with '|'; an element is word, [word], (word), $TYPE, a part of speech such as ADJ, or *.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.patterns.errors import PatternSyntaxError

__all__ = ["ENTITY_TYPES", "POS_TAGS", "Element", "Pattern", "parse"]

#: Universal part-of-speech tags (spaCy's ``Token.pos_``).
POS_TAGS = frozenset({"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN",
                      "PUNCT", "SCONJ", "SYM", "VERB", "X"})
#: Entity types an ``$TYPE`` element may name: spaCy's English labels and the paper's aliases.
ENTITY_TYPES = {
    "PERSON": {"PERSON"}, "NORP": {"NORP"}, "FAC": {"FAC"}, "ORG": {"ORG"}, "GPE": {"GPE"}, "LOC": {"LOC"},
    "PRODUCT": {"PRODUCT"}, "EVENT": {"EVENT"}, "WORK_OF_ART": {"WORK_OF_ART"}, "LAW": {"LAW"},
    "LANGUAGE": {"LANGUAGE"}, "DATE": {"DATE"}, "TIME": {"TIME"}, "PERCENT": {"PERCENT"}, "MONEY": {"MONEY"},
    "QUANTITY": {"QUANTITY"}, "ORDINAL": {"ORDINAL"}, "CARDINAL": {"CARDINAL"},
    "LOCATION": {"GPE", "LOC", "FAC"}, "ORGANIZATION": {"ORG"}, "NUMBER": {"CARDINAL", "ORDINAL", "QUANTITY"},
}
KINDS = ("word", "stem", "soft", "entity", "pos", "any")
_HINT = ("Join elements with '+' and alternatives with '|'; an element is word, [word], (word), $TYPE, "
         "a part of speech such as ADJ, or *.")
_WORD = r"['’]?[^\W_](?:[\w'’-]*\w)?"
_TOKEN = re.compile(
    rf"\s*(?:(?P<op>[+|])|(?P<any>\*)|\[\s*(?P<stem>{_WORD})\s*\]|\(\s*(?P<soft>{_WORD})\s*\)"
    rf"|\$(?P<entity>[A-Za-z_]+)|(?P<word>{_WORD}))\s*"
)


@dataclass(frozen=True)
class Element:
    """One element of a pattern.

    Attributes
    ----------
    kind
        One of :data:`KINDS`.
    value
        The word (lower-cased), the entity type or the part-of-speech tag; ``""`` for ``*``.
    """

    kind: str
    value: str = ""

    @property
    def spec(self) -> str:
        """The element written in the pattern language."""
        return {"word": self.value, "stem": f"[{self.value}]", "soft": f"({self.value})",
                "entity": f"${self.value}", "pos": self.value, "any": "*"}[self.kind]


@dataclass(frozen=True)
class Pattern:
    """A parsed pattern: alternatives, each a sequence of elements."""

    alternatives: tuple[tuple[Element, ...], ...]

    def __str__(self) -> str:
        return "|".join("+".join(e.spec for e in seq) for seq in self.alternatives)

    def elements(self) -> list[Element]:
        """Every element, in order."""
        return [e for seq in self.alternatives for e in seq]


def parse(spec: str | Pattern) -> Pattern:
    """Parse a pattern written in the pattern language.

    Raises
    ------
    PatternSyntaxError
        For text that is not a pattern, with the position of the problem.
    """
    if isinstance(spec, Pattern):
        return spec
    text = str(spec)
    if not text.strip():
        raise PatternSyntaxError("The pattern is empty.", _HINT)
    alternatives: list[tuple[Element, ...]] = []
    current: list[Element] = []
    expect_element = True
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise PatternSyntaxError(f"Pattern {text!r} has something unexpected at {pos}: {text[pos:pos + 12]!r}.",
                                     _HINT)
        op = m.group("op")
        if op:
            if expect_element:
                raise PatternSyntaxError(f"Pattern {text!r} has {op!r} where an element should be (at {m.start('op')}).",
                                         _HINT)
            if op == "|":
                alternatives.append(tuple(current))
                current = []
            expect_element = True
        else:
            if not expect_element:
                raise PatternSyntaxError(
                    f"Pattern {text!r} has two elements without '+' or '|' between them (at {m.start()}).", _HINT)
            current.append(_element(m, text))
            expect_element = False
        pos = m.end()
    if expect_element:
        last = "'+'" if current else "'|'"
        raise PatternSyntaxError(f"Pattern {text!r} ends where an element should follow {last} (at {len(text)}).",
                                 _HINT)
    alternatives.append(tuple(current))
    for seq in alternatives:
        if all(e.kind == "any" for e in seq):
            raise PatternSyntaxError(f"Pattern {text!r} has an alternative made only of '*' (it matches anything).",
                                     "Give the alternative at least one element that is not '*'.")
    return Pattern(tuple(alternatives))


def _element(m: re.Match[str], text: str) -> Element:
    if m.group("any"):
        return Element("any")
    if m.group("stem"):
        return Element("stem", m.group("stem").lower())
    if m.group("soft"):
        return Element("soft", m.group("soft").lower())
    if m.group("entity"):
        name = m.group("entity").upper()
        if name not in ENTITY_TYPES:
            raise PatternSyntaxError(f"Pattern {text!r} names an unknown entity type ${name}.",
                                     f"Use one of: {', '.join('$' + t for t in sorted(ENTITY_TYPES))}.")
        return Element("entity", name)
    word = m.group("word")
    if word in POS_TAGS:
        return Element("pos", word)
    return Element("word", word.lower().replace("’", "'"))
