"""Ratings written into a text ("7/10", "3 out of 10", "9.0 on a scale of 10") and the label each side of a scale goes with.

A review that gives the film "10/10" carries its label in that number as surely as in "superb";
a counterfactual that turns every opinion word around and keeps the "10/10" is a mislabelled
example. Which end of the scale goes with which label is learned from the labelled data
(:func:`rating_sides`), not assumed: on CAD's IMDb train split, 128 of the 134 rated Positive
reviews rate high and 118 of the 137 rated Negative ones low.

Read: a number followed by ``/10`` or ``/100``, by ``out of`` 4, 5, 10 or 100, or by ``on a
scale of`` 5, 10 or 100 (a sentence glued to the one before, "suspense.4 out of 10", counts
too); and a number up to 10 given to the text's subject without a scale ("I give it a 2", "I
rated this movie a 9", "I'd give it an 8.5"), read on IMDb's scale of 10 — only the number is
the rating there. Dates (``9/11``, ``12/10/2005``), fractions (``3/4 of
the film``, ``1/4 or 1/8``) and counts (``7 out of 10 people``) are not ratings; nor are star
drawings (``*1/2 from ****``). A school grade after a cue word ("GRADE: B", "I'd give it an A-", "my
rating: D+") counts on a scale of 4 (A 4, B 3, C 2, D 1, F 0, a sign a third of a step): the letter
must be a capital, so "rated a bit" is no grade, and a bare "A" before a lowercase word is the article.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["HIGH", "LOW", "Rating", "against", "find_ratings", "rating_sides", "side", "suggestion"]

HIGH, LOW = "high", "low"
#: A rating at or above this share of its scale is high, at or below ``1 - HIGH_SHARE`` low; between, neither.
HIGH_SHARE = 0.6
#: Rated texts a label needs before its side of the scale is trusted.
MIN_RATED = 8
#: The labels' mean ratings (as shares of the scale) must differ by at least this.
MIN_GAP = 0.3

_NUMBER = r"(?<![\w/-])(?<!\d\.)(\d{1,3}(?:\.\d{1,2})?)"
_SCALE = r"(100|10|5|4)"
#: Words after "N out of M" that make it a count, not a rating.
_COUNTED = (r"people|persons|viewers|reviewers|users|critics|voters|friends|men|women|kids|children|times|films|"
            r"movies|episodes|scenes|shows|cases|minutes|hours|years|days|of")
#: Words after "give it a N" that make N a count or an ordinal ("give it 2 hours", "a 2nd chance").
_UNITS = (r"hours?|hrs?|minutes?|mins?|seconds?|days?|weeks?|months?|years?|times?|tries|chances?|people|stars?|"
          r"thumbs?|points?\s+out|percent|%|nd|rd|th|st")
#: "give/gave/rate/rated/score … (it|this movie|…) (a|an) N", scale 10 implied.
_IMPLIED = re.compile(
    r"\b(?:give|gave|giving|given|rate|rated|rating|score|scored|vote|voted)\s+"
    r"(?:it|this(?:\s+(?:film|movie|one|show|series|episode|book))?|the\s+(?:film|movie|show|series))?\s*"
    r"(?:a|an)?\s+" + _NUMBER + r"(?!\.\d|\s*(?:/|out\s+of\b|on\s+a\s+scale\b)|\s*(?:" + _UNITS + r")\b|\d)",
    re.IGNORECASE)
#: "GRADE: B", "graded it a C+", "I'd give it an A-": a capital A-D or F (with a sign) after a cue, scale 4.
_LETTER = re.compile(
    r"(?i:\b(?:grade[ds]?|grading|rating|rated|score[ds]?|verdict|mark|give\s+it|gave\s+it|giving\s+it)\b)"
    r"\s*[:=-]?\s*(?:(?i:an?)\s+)?([A-DF][+-]?)(?![\w+-])")
_LETTER_VALUE = {"A": 4.0, "B": 3.0, "C": 2.0, "D": 1.0, "F": 0.0}

_PATTERNS = (
    re.compile(_NUMBER + r"\s*/\s*(100|10)(?![\d/.]\d|\s+of\b)", re.IGNORECASE),
    re.compile(_NUMBER + r"\s+out\s+of\s+" + _SCALE + r"\b(?!\.\d)(?!\s+(?:" + _COUNTED + r")\b)", re.IGNORECASE),
    re.compile(_NUMBER + r"\s+on\s+a\s+scale\s+(?:of|from)\s+(?:(?:0|1|one|zero)\s*(?:-|to|through)\s*)?"
               r"(100|10|5)\b(?!\.\d)", re.IGNORECASE),
)


@dataclass(frozen=True)
class Rating:
    """One rating found in a text: ``text[start:end]``, its ``value`` on a ``scale``."""

    text: str
    start: int
    end: int
    value: float
    scale: float

    @property
    def share(self) -> float:
        """The value as a share of the scale (0 to 1)."""
        return self.value / self.scale

    @property
    def side(self) -> str | None:
        """:data:`HIGH`, :data:`LOW` or ``None`` (the middle of the scale)."""
        return side(self.share)


def side(share: float) -> str | None:
    """The end of a scale a share lies at (``None`` in the middle).

    Examples
    --------
    >>> side(0.9), side(0.2), side(0.5)
    ('high', 'low', None)
    """
    if share >= HIGH_SHARE:
        return HIGH
    if share <= 1.0 - HIGH_SHARE:
        return LOW
    return None


def find_ratings(text: str) -> list[Rating]:
    """The ratings written in ``text``, in order.

    Examples
    --------
    >>> [(r.text, r.share) for r in find_ratings("A 9/10 from me, or 4.5 out of 5 stars.")]
    [('9/10', 0.9), ('4.5 out of 5', 0.9)]
    >>> find_ratings("Shot on 9/11, released 12/10/2005; 7 out of 10 people left; 3/4 of it drags.")
    []
    >>> [r.text for r in find_ratings("I rate it a 9.0 on a scale of 10.")]
    ['9.0 on a scale of 10']
    >>> [(r.text, r.share) for r in find_ratings("Only reason I did give it a 2 was the cast.")]
    [('2', 0.2)]
    >>> [(r.text, r.share) for r in find_ratings("GRADE: B. I'd give it an A- at best, never a D.")]
    [('B', 0.75), ('A-', 0.9166666666666666)]
    >>> find_ratings("It rated a bit low; grade school kids. Score: A lot of fun.")  # 'A lot': a word, not a grade
    []
    """
    found: list[Rating] = []
    taken: list[tuple[int, int]] = []
    for pattern in (*_PATTERNS, _IMPLIED):
        for m in pattern.finditer(text or ""):
            implied = pattern is _IMPLIED
            value, scale = float(m.group(1)), 10.0 if implied else float(m.group(2))
            start, end = (m.start(1), m.end(1)) if implied else (m.start(), m.end())
            if value > scale or any(a < end and start < b for a, b in taken):
                continue
            taken.append((start, end))
            found.append(Rating(text[start:end], start, end, value, scale))
    for m in _LETTER.finditer(text or ""):
        start, end = m.start(1), m.end(1)
        if any(a < end and start < b for a, b in taken):
            continue
        grade = m.group(1)
        if grade == "A" and re.match(r"\s+[a-z]", text[end:]):  # "Score: A lot of fun": the article
            continue
        value = _LETTER_VALUE[grade[0]] + {"+": 1 / 3, "-": -1 / 3}.get(grade[1:], 0.0)
        taken.append((start, end))
        found.append(Rating(grade, start, end, min(max(value, 0.0), 4.0), 4.0))
    return sorted(found, key=lambda r: r.start)


def rating_sides(texts: Sequence[str], labels: Sequence[str], *, min_rated: int = MIN_RATED,
                 min_gap: float = MIN_GAP) -> dict[str, str]:
    """Which labels go with the high and the low end of a rating scale, learned from labelled texts.

    Each text's ratings are averaged (as shares of their scales); the label whose rated texts have
    the highest mean goes with :data:`HIGH`, the one with the lowest with :data:`LOW`, when each
    has at least ``min_rated`` rated texts and the means differ by ``min_gap`` or more. Other
    labels (a neutral class) get no side. Empty when the data say nothing (no ratings, NLI).

    Examples
    --------
    >>> rating_sides(["8/10"] * 9 + ["2/10"] * 9 + ["fine"], ["pos"] * 9 + ["neg"] * 9 + ["pos"])
    {'pos': 'high', 'neg': 'low'}
    >>> rating_sides(["8/10", "2/10"], ["pos", "neg"])
    {}
    """
    shares: dict[str, list[float]] = defaultdict(list)
    for text, label in zip(texts, labels, strict=True):
        found = find_ratings(text)
        if found:
            shares[str(label)].append(sum(r.share for r in found) / len(found))
    means = {label: sum(v) / len(v) for label, v in shares.items() if len(v) >= min_rated}
    if len(means) < 2:
        return {}
    high, low = max(means, key=means.__getitem__), min(means, key=means.__getitem__)
    if means[high] - means[low] < min_gap:
        return {}
    return {high: HIGH, low: LOW}


def against(text: str, target: str, original: str, sides: Mapping[str, str]) -> list[Rating]:
    """Ratings in ``text`` that speak for another label than ``target``.

    With a side for ``target``: the ratings at the other end of the scale. Without one (a label
    of the middle): the ratings at the side of ``original``.

    Examples
    --------
    >>> sides = {"Positive": "high", "Negative": "low"}
    >>> [r.text for r in against("Dull. 9/10, though.", "Negative", "Positive", sides)]
    ['9/10']
    >>> against("Dull. 2/10.", "Negative", "Positive", sides)
    []
    """
    wanted, before = sides.get(target), sides.get(original)
    if wanted is None and before is None:
        return []
    return [r for r in find_ratings(text) if r.side is not None
            and (r.side != wanted if wanted is not None else r.side == before)]


def suggestion(rating: Rating, target_side: str | None) -> str:
    """The rating written again at ``target_side`` of its scale, as an example for an editor.

    Examples
    --------
    >>> suggestion(find_ratings("4/10")[0], "high"), suggestion(find_ratings("9.0 on a scale of 10")[0], "low")
    ('8/10', '2.0 on a scale of 10')
    >>> suggestion(find_ratings("Grade: B+")[0], "low")
    'D'
    """
    if rating.text[:1].isalpha():  # a school grade
        return {HIGH: "A", LOW: "D"}.get(target_side or "", "C")
    share = {HIGH: 0.8, LOW: 0.2}.get(target_side or "", 0.5)
    value = share * rating.scale
    written = f"{value:.1f}" if "." in rating.text.split()[0].split("/")[0] else f"{round(value):d}"
    number = re.match(r"\s*\d{1,3}(?:\.\d{1,2})?", rating.text)
    return written + rating.text[number.end():] if number else written
