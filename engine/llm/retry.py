"""When to retry a failed call, and how long to wait first."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from datetime import datetime, timezone


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter, honouring the server's ``Retry-After``.

    Parameters
    ----------
    max_retries
        Retries after the first attempt.
    base_s
        Wait before the first retry (doubled for each further one).
    cap_s
        Largest backoff wait.
    max_retry_after_s
        Largest wait a server's ``Retry-After`` can ask for.

    Examples
    --------
    >>> p = RetryPolicy(base_s=1.0, cap_s=8.0)
    >>> [p.backoff(a, random.Random(0)) <= min(8.0, 2 ** a) for a in range(5)]
    [True, True, True, True, True]
    >>> p.delay(0, retry_after=3.0, rng=random.Random(0)) >= 3.0
    True
    """

    max_retries: int = 4
    base_s: float = 0.5
    cap_s: float = 20.0
    max_retry_after_s: float = 120.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Jittered wait before retry number ``attempt`` (0-based): in ``[d/2, d]``, ``d = base * 2**attempt``."""
        d = min(self.cap_s, self.base_s * (2**attempt))
        return d / 2 + rng.uniform(0, d / 2)

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """The wait before retry ``attempt``: the backoff, or the server's ``Retry-After`` if longer."""
        wait = self.backoff(attempt, rng)
        if retry_after is not None and retry_after > 0:
            wait = max(wait, min(retry_after, self.max_retry_after_s))
        return wait


def parse_retry_after(headers: Mapping[str, str] | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date).

    Examples
    --------
    >>> parse_retry_after({"retry-after": "2"})
    2.0
    >>> parse_retry_after({"retry-after-ms": "250"})
    0.25
    >>> parse_retry_after({}) is None
    True
    """
    if not headers:
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lower.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            if name != "retry-after":
                continue
            try:
                when = parsedate_to_datetime(value)
            except (TypeError, ValueError):
                continue
            if when.tzinfo is None:
                when = when.replace(tzinfo=timezone.utc)
            seconds = (when - (now or datetime.now(timezone.utc))).total_seconds()
        if seconds == seconds and seconds >= 0:  # not NaN
            return seconds
        return 0.0
    return None
