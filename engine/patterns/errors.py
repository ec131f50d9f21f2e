"""Named errors of the symbolic pattern language (codes CB970-CB979)."""

from __future__ import annotations

from engine.errors import CounterbiasError

__all__ = ["PatternError", "PatternSyntaxError", "PatternToolError", "UnknownSoftMatcherError"]


class PatternError(CounterbiasError):
    """A symbolic pattern cannot be used as asked."""

    code = "CB970"


class PatternSyntaxError(PatternError):
    """A pattern does not follow the pattern language (the message points at the place)."""

    code = "CB971"


class PatternToolError(PatternError):
    """A part of speech or entity element needs spaCy's English pipeline, which is not installed."""

    code = "CB972"


class UnknownSoftMatcherError(PatternError):
    """No soft matcher of that name."""

    code = "CB973"
