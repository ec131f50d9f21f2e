"""Progress of a CLI step: a throttled line on stderr (results go to stdout)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["StderrProgress"]


class StderrProgress:
    """A ``progress(fraction, message)`` callback printing a throttled line to stderr.

    Parameters
    ----------
    stream
        Where to write (default: ``sys.stderr``); a terminal gets one line rewritten in place.
    quiet
        Print nothing.
    interval
        Least seconds between two lines (the final 100 % line is always printed).

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> progress = StderrProgress(out)
    >>> progress(1.0, "done")
    >>> out.getvalue()
    '[100.0%] done\\n'
    """

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False, interval: float = 0.5) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.interval = interval
        self._last = 0.0
        self._tty = self.stream.isatty()

    def __call__(self, fraction: float, message: str = "") -> None:
        if self.quiet:
            return
        t = time.monotonic()
        if fraction < 1.0 and t - self._last < self.interval:
            return
        self._last = t
        line = f"[{fraction * 100:5.1f}%] {message}"
        if self._tty:
            self.stream.write("\r" + line.ljust(79)[:79] + ("\n" if fraction >= 1.0 else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
