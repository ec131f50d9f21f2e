"""Headless command line: every step the GUI runs, for scripts and large datasets.

Run ``python -m engine --help`` (or the ``counterbias`` console script).

One module per area registers its verbs in :data:`engine.cli.commands.COMMANDS`:
:mod:`~engine.cli.core` (``init``, ``import``, ``info``, ``export``, ``demo``),
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
"""

from __future__ import annotations

import argparse
import sys
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
(the message says what to do), 130 cancelled.  Progress goes to stderr, results to stdout."""


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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    progress = StderrProgress(quiet=args.quiet)
    cancel = CancelToken()
    try:
        return int(args.run(args, progress, cancel))
    except CounterbiasError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except (Cancelled, KeyboardInterrupt):
        print("cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    except Exception:  # a bug: show everything
        import traceback

        traceback.print_exc()
        return EXIT_INTERNAL_ERROR
