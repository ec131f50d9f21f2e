"""Small wording helpers shared by the panels and their controllers."""

from __future__ import annotations

__all__ = ["count_of"]


def count_of(n: int, word: str, plural: str | None = None) -> str:
    """``n`` and ``word`` in the right number, with thousands separators.

    Examples
    --------
    >>> count_of(1, "example"), count_of(2_500, "example"), count_of(3, "match", "matches")
    ('1 example', '2,500 examples', '3 matches')
    """
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"
