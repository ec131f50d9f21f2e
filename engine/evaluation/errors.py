"""Named errors of the downstream evaluation and the diversity measures (codes CB900-CB919)."""

from __future__ import annotations

from engine.errors import CounterbiasError

__all__ = [
    "BadConditionError",
    "BadTestSetError",
    "ClassifierError",
    "EvaluationError",
    "NoParentsError",
    "NoTestSetsError",
]


class EvaluationError(CounterbiasError):
    """A downstream evaluation cannot run as asked."""

    code = "CB900"


class BadConditionError(EvaluationError):
    """A training condition is malformed or selects no usable rows."""

    code = "CB901"


class BadTestSetError(EvaluationError):
    """A test set is malformed (unknown role, empty split)."""

    code = "CB902"


class ClassifierError(EvaluationError):
    """No classifier of that name, or its options do not fit."""

    code = "CB903"


class NoTestSetsError(EvaluationError):
    """Nothing is marked as a test set."""

    code = "CB904"


class NoParentsError(EvaluationError):
    """A dataset holds no generated rows with a parent to compare against."""

    code = "CB910"
