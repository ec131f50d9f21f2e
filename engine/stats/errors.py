"""Named errors of the bias-statistics step (codes ``CB4xx``).

They derive from :class:`engine.errors.CounterbiasError`, so the GUI and the CLI show
their message and hint like any other user-caused problem.
"""

from __future__ import annotations

from engine.errors import CounterbiasError


class StatsError(CounterbiasError):
    """Bias statistics or z-filtering cannot run on the given data or settings."""

    code = "CB400"


class EmptyDatasetError(StatsError):
    """The dataset version holds no examples."""

    code = "CB401"


class LabelSetError(StatsError):
    """The labels do not allow the statistics (fewer than two, or an unknown label)."""

    code = "CB402"


class StatsConfigError(StatsError):
    """A setting is out of range (e.g. ``k < 1``, no feature family chosen)."""

    code = "CB403"


class DatasetMismatchError(StatsError):
    """Two datasets that must be combined differ in task or label set."""

    code = "CB404"
