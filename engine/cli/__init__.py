"""Headless command line: every step the GUI runs, for scripts and large datasets.

Run ``python -m engine --help`` (or the ``counterbias`` console script).

One module per area registers its verbs in :data:`engine.cli.commands.COMMANDS`:
:mod:`~engine.cli.project` (``init``, ``import``, ``info``, ``export``, ``demo``),
:mod:`~engine.cli.stats` (``stats``, ``zfilter``), :mod:`~engine.cli.models` (``train``,
``attribute``, ``vote``, ``models``), :mod:`~engine.cli.llm` (``serve-llm``, ``triples``),
:mod:`~engine.cli.generate` (``generate``, ``verify``, ``candidates``, ``decide``, ``augment``),
:mod:`~engine.cli.evaluation` (``evaluate``, ``diversity``, ``report``),
:mod:`~engine.cli.retrieval` (``corpus``, ``index``, ``retrieve``, ``core``, ``train-retriever``),
:mod:`~engine.cli.active` (``al-data``, ``al-simulate``, ``annotate``) and :mod:`~engine.cli.patterns` (``patterns``, ``vt-generate``). Arguments
shared by several verbs are parent parsers in :mod:`engine.cli.args`.

Exit codes
----------
0  success
1  internal error (a bug: please report it with the traceback)
2  usage error (bad arguments)
3  the input or project is not usable; the message says what to do
130 cancelled (Ctrl+C)
143 terminated (SIGTERM): handled like Ctrl+C, so a recorded run is stored ``cancelled`` before the exit
141 stdout's reader closed the pipe early (``... | head``): nothing more is printed
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from engine import __version__
from engine.cli.commands import COMMANDS
from engine.cli.progress import StderrProgress
from engine.errors import (
    EXIT_CANCELLED,
    EXIT_INTERNAL_ERROR,
    EXIT_USER_ERROR,
    Cancelled,
    CounterbiasError,
)
from engine.progress import CancelToken

__all__ = ["build_parser", "main"]

EPILOG = """exit codes: 0 success, 1 internal error, 2 usage error, 3 unusable input or project
(the message says what to do), 130 cancelled (Ctrl+C), 143 terminated (SIGTERM), 141 output pipe closed early.  Progress goes to stderr, results to stdout."""


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (every registered verb; imports each verb module once)."""
    parser = argparse.ArgumentParser(
        prog="counterbias",
        description="Counterbias Studio, headless: projects, import/export and every analysis step.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS.load_all().values():
        add(sub)
    return parser


#: Exit code after SIGTERM (128 + the signal's number, as shells report it).
EXIT_TERMINATED = 128 + int(signal.SIGTERM)
#: Exit code when stdout's reader closed the pipe early (128 + SIGPIPE, as shells report it).
EXIT_BROKEN_PIPE = 141


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


class _Sigterm:
    """SIGTERM as a Ctrl+C: sets the cancel token and raises :class:`KeyboardInterrupt` in the main thread.

    Only the first SIGTERM raises; later ones are ignored, so that the cleanup it started (the run row
    stored ``cancelled``, an import's rows removed) is not itself interrupted.
    """

    def __init__(self, cancel: CancelToken) -> None:
        self.cancel = cancel
        self.received = False
        self.previous: object = None

    def __call__(self, signum: int, frame: object) -> None:
        if self.received:
            return
        self.received = True
        self.cancel.cancel()
        raise KeyboardInterrupt("terminated (SIGTERM)")

    def install(self) -> _Sigterm:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self)
        return self

    def restore(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (see the module doc for the codes)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    progress = StderrProgress(quiet=args.quiet)
    cancel = CancelToken()
    sigterm = _Sigterm(cancel).install()
    try:
        return int(args.run(args, progress, cancel))
    except CounterbiasError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except (Cancelled, KeyboardInterrupt):
        print("terminated" if sigterm.received else "cancelled", file=sys.stderr)
        return EXIT_TERMINATED if sigterm.received else EXIT_CANCELLED
    except BrokenPipeError:
        # the reader of stdout went away (``counterbias info P | head``): stop quietly, as a program killed by
        # SIGPIPE would; stdout is pointed at /dev/null so that flushing it at exit cannot fail again
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception:  # a bug: show everything
        import traceback

        traceback.print_exc()
        return EXIT_INTERNAL_ERROR
    finally:
        sigterm.restore()
