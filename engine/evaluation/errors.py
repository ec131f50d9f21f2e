"""Named errors of the downstream evaluation and the diversity measures (codes CB900-CB929)."""

from __future__ import annotations

from engine.errors import CounterbiasError

__all__ = [
    "BadConditionError",
    "BadTestSetError",
    "ClassifierError",
    "EvaluationError",
    "NoParentsError",
    "NoTestSetsError",
    "NothingToReportError",
    "ReportError",
    "ReportExportError",
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


class ReportError(EvaluationError):
    """The before/after report cannot be built as asked."""

    code = "CB920"


class NothingToReportError(ReportError):
    """A dataset has no counterbias candidates and no augmented version to compare with."""

    code = "CB921"


class ReportExportError(ReportError):
    """The report's HTML or PDF file cannot be written."""

    code = "CB922"
