"""Progress reporting and cooperative cancellation, with nothing Qt-ish in it.

Long engine functions take ``progress(fraction, message)`` and a :class:`CancelToken`,
report at batch boundaries and call :meth:`CancelToken.raise_if_cancelled` there.
"""

from __future__ import annotations

import threading
from typing import Protocol

from engine.errors import Cancelled


class ProgressFn(Protocol):
    """Callable receiving a completion ``fraction`` in [0, 1] and a short ``message``."""

    def __call__(self, fraction: float, message: str = "") -> None: ...


def no_progress(fraction: float, message: str = "") -> None:
    """A progress callback that ignores everything."""


def scaled(progress: ProgressFn, start: float, end: float) -> ProgressFn:
    """Map a sub-step's [0, 1] progress onto ``[start, end]`` of ``progress``.

    Examples
    --------
    >>> seen = []
    >>> sub = scaled(lambda f, m="": seen.append(round(f, 2)), 0.5, 1.0)
    >>> sub(0.5, "half")
    >>> seen
    [0.75]
    """

    span = end - start

    def _sub(fraction: float, message: str = "") -> None:
        progress(round(start + span * min(max(fraction, 0.0), 1.0), 9), message)

    return _sub


class CancelToken:
    """A thread-safe flag that a running engine function polls at batch boundaries."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask the function to stop at its next check."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        """Raise :class:`~engine.errors.Cancelled` if :meth:`cancel` was called."""
        if self._event.is_set():
            raise Cancelled("cancelled by the user")


def ensure_token(cancel: CancelToken | None) -> CancelToken:
    """Return ``cancel`` or a fresh token that is never set."""
    return cancel if cancel is not None else CancelToken()
