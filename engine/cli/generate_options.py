"""The ``generate`` options, built from the declaration of :class:`~engine.counterbias.settings.GenerateSettings`.

Each declared option with ``cli="generate"`` becomes one flag: ``--`` and its name with dashes, a boolean
``--name``/``--no-name``. Every flag defaults to ``None`` so that :func:`settings_from_args` knows which options
were given (an option given where it has no effect is refused, CB801); an option left out takes the declared
default. The old flags of renamed options (``--keep-stubborn``, …) still work, hidden; those of removed stages
(:data:`~engine.generate_settings.RETIRED_FLAGS`) are refused with what to do.
The ``cli="llm"`` options (temperature, seed, max tokens) are the shared LLM flags (:data:`engine.cli.args.LLM`).
"""

from __future__ import annotations

import argparse

from engine.generate_settings import MODES, OPTIONS, RETIRED_FLAGS, GenerateSettings, GenerationConfigError, Option

__all__ = ["add_generate_options", "explicit_options", "generate_flags", "settings_from_args"]


def _type(declared: Option):
    return {int: int, float: float}.get(declared.kind, str)


def _metavar(declared: Option) -> str:
    if declared.name == "sentence_reader":
        return "{" + ",".join(value for value, _ in declared.items) + "}"
    return {int: "N", float: "X"}.get(declared.kind, declared.name.upper())


def add_generate_options(parser: argparse.ArgumentParser) -> None:
    """Add a "generation" group with a flag for every declared ``generate`` option (and the hidden old flags)."""
    group = parser.add_argument_group("generation", "options of the candidates (each also under LLM settings… "
                                      "in the GUI, unless CLI only); given where it has no effect: refused (CB801)")
    for name, declared in OPTIONS.items():
        if declared.cli != "generate":
            continue
        scope = "" if set(declared.modes) == set(MODES) else f"{'/'.join(declared.modes)} mode"
        if declared.needs:
            scope += (", with " if scope else "with ") + ", ".join(OPTIONS[n].flag for n in declared.needs)
        scope += ": " if scope else ""
        text = (scope + declared.help).replace("%", "%%")
        if declared.kind is bool:
            group.add_argument(declared.flag, dest=name, action=argparse.BooleanOptionalAction, default=None,
                               help=text)
        elif declared.closed:
            group.add_argument(declared.flag, dest=name, default=None, help=text,
                               choices=[value for value, _ in declared.items])
        else:
            group.add_argument(declared.flag, dest=name, default=None, type=_type(declared),
                               metavar=_metavar(declared), help=text)
        for alias, value in declared.aliases:
            group.add_argument(alias, dest=name, action="store_const", const=value, help=argparse.SUPPRESS)
    for flag in RETIRED_FLAGS:  # removed stages: named and refused, not "unrecognized arguments"
        group.add_argument(flag, dest="retired", action="append_const", const=flag, help=argparse.SUPPRESS)


def generate_flags(parser: argparse.ArgumentParser) -> dict[str, tuple[str, ...]]:
    """The declared options a parser lists in its help (option name → its visible flags)."""
    out: dict[str, tuple[str, ...]] = {}
    for action in parser._actions:
        if action.help is argparse.SUPPRESS or action.dest not in OPTIONS:
            continue
        out.setdefault(action.dest, ())
        out[action.dest] += tuple(action.option_strings)
    return out


def explicit_options(args: argparse.Namespace) -> tuple[str, ...]:
    """The ``generate`` options given on the command line."""
    return tuple(name for name, declared in OPTIONS.items()
                 if declared.cli == "generate" and getattr(args, name, None) is not None)


def settings_from_args(args: argparse.Namespace) -> GenerateSettings:
    """The validated :class:`GenerateSettings` of the ``generate`` flags (raises ``GenerationConfigError``)."""
    retired = getattr(args, "retired", None)
    if retired:
        raise GenerationConfigError(
            f"{retired[0]} was removed: its stage (the flip repair, or the hold of spurious opinion words) no longer "
            "runs, because an ablation found no candidate it made better.", f"Leave {retired[0]} out.")
    values = {}
    for name, declared in OPTIONS.items():
        value = getattr(args, name, None)
        if value is None:
            continue
        if declared.kind is tuple:
            value = tuple(part.strip() for part in str(value).split(",") if part.strip()) or None
        values[name] = value
    return GenerateSettings(**values).validate(explicit_options(args))
