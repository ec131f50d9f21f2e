"""Named errors of word attribution and the principal/spurious vote (codes CB6xx)."""

from __future__ import annotations

from engine.errors import CounterbiasError


class AttributionError(CounterbiasError):
    """Base class of attribution and vote errors."""

    code = "CB600"


class UnknownMethodError(AttributionError):
    """A configuration names an attribution method that is not registered."""

    code = "CB601"


class MethodSettingsError(AttributionError):
    """Settings of an attribution method are invalid."""

    code = "CB602"


class TargetLabelError(AttributionError):
    """The requested target label is not one the model predicts."""

    code = "CB603"


class MissingAttributionsError(AttributionError):
    """A vote needs attributions that have not been computed."""

    code = "CB604"


class VoteConfigError(AttributionError):
    """Vote settings are invalid (K, combine rule, threshold)."""

    code = "CB605"


class WordlistError(AttributionError):
    """A word list cannot be found or read."""

    code = "CB606"
