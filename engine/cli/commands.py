"""The registry of CLI verbs: each verb is a function adding its sub-parser.

A verb module defines ``add(sub)`` functions decorated with :func:`command`; the add function
creates the sub-parser and sets ``run(args, progress, cancel) -> exit code`` as its default.
The built-in verbs are declared here by module path, so building the parser imports each
area module once and nothing imports the verb modules by name.

Examples
--------
>>> from engine.cli.commands import COMMANDS
>>> COMMANDS.names()[:5]
['init', 'import', 'info', 'export', 'demo']
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from engine.errors import CounterbiasError
from engine.registry import Registry

__all__ = ["COMMANDS", "AddCommand", "CliUsageError", "UnknownSplitError", "command"]

#: ``add(sub)``: adds one sub-command to ``sub`` (the parser's sub-parsers action).
AddCommand = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


class CliUsageError(CounterbiasError):
    """A combination of command-line options that cannot work."""

    code = "CB090"


class UnknownSplitError(CliUsageError):
    """``--split`` names a split the dataset does not have."""

    code = "CB091"


def _verbs(module: str, *names: str) -> dict[str, str]:
    return {name: module for name in names}


#: Every verb by name, in the order ``--help`` lists them.
COMMANDS: Registry[AddCommand] = Registry(
    "command",
    CliUsageError,
    builtins={
        **_verbs("engine.cli.project", "init", "import", "info", "export", "demo"),
        **_verbs("engine.cli.stats", "stats", "zfilter"),
        **_verbs("engine.cli.models", "train", "attribute", "vote", "models"),
        **_verbs("engine.cli.llm", "serve-llm", "triples"),
        **_verbs("engine.cli.generate", "generate", "verify", "candidates", "decide", "augment"),
        **_verbs("engine.cli.demos", "demos"),
        **_verbs("engine.cli.evaluation", "evaluate", "diversity", "report"),
        **_verbs("engine.cli.retrieval", "corpus", "index", "retrieve", "core", "train-retriever"),
        **_verbs("engine.cli.active", "al-data", "al-simulate", "annotate"),
        **_verbs("engine.cli.patterns", "patterns", "vt-generate"),
    },
)


def command(name: str) -> Callable[[AddCommand], AddCommand]:
    """Register a function that adds sub-command ``name`` to the parser."""
    return COMMANDS.register(name)
