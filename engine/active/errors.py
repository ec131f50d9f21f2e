"""Named errors of the active-learning simulation (codes CB990-CB999)."""

from __future__ import annotations

from engine.errors import CounterbiasError

__all__ = [
    "ActiveLearningError",
    "BadShotsError",
    "CounterfactualSourceError",
    "DataBuildError",
    "PoolError",
    "UnknownLearnerError",
    "UnknownStrategyError",
]


class ActiveLearningError(CounterbiasError):
    """An active-learning simulation cannot run as asked."""

    code = "CB990"


class UnknownStrategyError(ActiveLearningError):
    """No selection strategy of that name."""

    code = "CB991"


class UnknownLearnerError(ActiveLearningError):
    """No learner of that name, or its options do not fit."""

    code = "CB992"


class BadShotsError(ActiveLearningError):
    """The budgets (shots) or seeds are not positive whole numbers, or exceed the pool."""

    code = "CB993"


class PoolError(ActiveLearningError):
    """The dataset cannot be split into a pool and a held-out test split (too small, one label, no such split)."""

    code = "CB994"


class CounterfactualSourceError(ActiveLearningError):
    """The counterfactual strategy was asked for without a source of counterfactuals, or the source failed."""

    code = "CB995"


class DataBuildError(ActiveLearningError):
    """A simulation data set (IMDb 4-class, CAD NLI) cannot be built from the shared files."""

    code = "CB996"
