"""Mean and two-sided t confidence interval over a few seeds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MeanCI", "mean_ci"]


@dataclass(frozen=True)
class MeanCI:
    """A mean with its confidence interval.

    Attributes
    ----------
    mean
        The sample mean (NaN for no values).
    half_width
        Half the interval's width (NaN for fewer than two values).
    n
        How many values.
    level
        The confidence level, e.g. 0.95.
    """

    mean: float
    half_width: float
    n: int
    level: float = 0.95

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def format(self, scale: float = 100.0, digits: int = 1) -> str:
        """``"83.0 ± 1.2"`` (values times ``scale``); ``"83.0"`` when there is no interval."""
        if math.isnan(self.mean):
            return "-"
        if math.isnan(self.half_width):
            return f"{self.mean * scale:.{digits}f}"
        return f"{self.mean * scale:.{digits}f} ± {self.half_width * scale:.{digits}f}"


def mean_ci(values: Sequence[float], level: float = 0.95) -> MeanCI:
    """Mean and Student-t interval ``mean ± t_{(1+level)/2, n-1} · s / sqrt(n)``.

    Parameters
    ----------
    values
        One value per seed.
    level
        Two-sided confidence level.

    Returns
    -------
    MeanCI
        ``half_width`` is NaN for fewer than two values and 0 when all values are equal.

    Examples
    --------
    >>> r = mean_ci([1.0, 2.0, 3.0])
    >>> round(r.mean, 3), round(r.half_width, 3)
    (2.0, 2.484)
    """
    from scipy import stats

    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return MeanCI(float("nan"), float("nan"), 0, level)
    if max(xs) == min(xs):  # exact: no rounding noise when every seed agrees
        return MeanCI(xs[0], 0.0 if n > 1 else float("nan"), n, level)
    mean = math.fsum(xs) / n
    if n < 2:
        return MeanCI(mean, float("nan"), n, level)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    t = float(stats.t.ppf((1.0 + level) / 2.0, n - 1))
    return MeanCI(mean, t * sd / math.sqrt(n), n, level)
