"""Arguments shared by many verbs, as argparse *parent* parsers, and the helpers that read them.

Pass them as ``parents=[...]`` to ``sub.add_parser``; their positionals come first, in the
order of the parents::

    p = sub.add_parser("triples", parents=[DATASET, SELECTION, LLM], help="...")

==============  =================================================================
``PROJECT``     ``project`` (a ``.cbproj`` file)
``DATASET``     ``project dataset`` (the dataset by id or name)
``SELECTION``   ``--split`` (repeatable) and ``--limit N``: :func:`selected_example_ids`
``JSON``        ``--json``: print JSON instead of text
``LLM``         the LLM backend and its settings: :func:`llm_config_from_args`
==============  =================================================================
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.llm.config import LLMConfig
    from engine.store import DatasetInfo, Project

__all__ = [
    "DATASET",
    "JSON",
    "LLM",
    "PROJECT",
    "SELECTION",
    "check_splits",
    "csv_list",
    "llm_config_from_args",
    "selected_example_ids",
    "selected_splits",
]


def _parent(*parents: argparse.ArgumentParser) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(add_help=False, parents=list(parents))


#: ``project``: the project file.
PROJECT = _parent()
PROJECT.add_argument("project", type=Path, help="project file (.cbproj)")

#: ``project dataset``: a dataset of the project, by id or name.
DATASET = _parent(PROJECT)
DATASET.add_argument("dataset", help="dataset id or name")

#: ``--split`` (repeatable) and ``--limit``: which examples of the dataset.
SELECTION = _parent()
SELECTION.add_argument("--split", action="append", help="only this split (repeatable)")
SELECTION.add_argument("--limit", type=int, help="only the first N examples (in dataset order)")

#: ``--json``: machine-readable output.
JSON = _parent()
JSON.add_argument("--json", action="store_true", help="print JSON")

#: The LLM: any OpenAI-compatible endpoint, or the bundled local model.
LLM = _parent()
_llm = LLM.add_argument_group("LLM")
_llm.add_argument("--backend", default="local", help="'local' (bundled GGUF model) or 'openai' (any compatible endpoint)")
_llm.add_argument("--model", default=None, help="model name (default: qwen2.5-coder-1.5b for local)")
_llm.add_argument("--base-url", help="endpoint, e.g. http://gpu-server:8000/v1 (vLLM), http://localhost:11434/v1 (Ollama)")
_llm.add_argument("--api-key-env", help="environment variable holding the API key (never stored)")
_llm.add_argument("--concurrency", type=int, default=8,
                  help="parallel requests to an openai endpoint (default 8; vLLM: its --max-num-seqs, Ollama: "
                       "its OLLAMA_NUM_PARALLEL); the local backend uses --slots instead")
_llm.add_argument("--slots", type=int, default=None,
                  help="local backend: parallel llama.cpp slots (default: from the CPU cores / GPU and memory)")
_llm.add_argument("--threads", type=int, default=None,
                  help="local backend: CPU threads (default: every core but one, at most 8)")
_llm.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
# 0.7 and 384 are what every LLM verb has used: ``core`` once set them with set_defaults, which changes the
# actions this parent shares with every verb (the 0.0 and 256 written here were never in effect)
_llm.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (default 0.7)")
_llm.add_argument("--max-tokens", type=int, default=384, help="most tokens of one answer (default 384)")
_llm.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")


def csv_list(value: str) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``."""
    return [v.strip() for v in value.split(",") if v.strip()]


def selected_splits(args: argparse.Namespace) -> tuple[str, ...] | None:
    """The ``--split`` values (``None``: every split)."""
    return tuple(args.split) if args.split else None


def check_splits(project: Project, dataset: DatasetInfo, args: argparse.Namespace) -> None:
    """Refuse ``--split`` values the dataset has no rows in.

    Raises
    ------
    UnknownSplitError
        Naming the unknown splits and listing the dataset's splits (with their row counts).
    """
    from engine.cli.commands import UnknownSplitError
    from engine.store.names import shown

    wanted = selected_splits(args)
    if not wanted:
        return
    counts = project.split_counts(dataset.id)
    unknown = [s for s in wanted if s not in counts]
    if unknown:
        have = ", ".join(f"{shown(str(s)) if s is not None else '(none)'} ({n:,} rows)" for s, n in counts.items())
        raise UnknownSplitError(
            f"Dataset {dataset.name!r} has no split {', '.join(repr(s) for s in unknown)}.",
            f"Use one of its splits: {have or 'none (it has no rows)'}; or leave --split out for every row.",
        )


def selected_example_ids(project: Project, dataset: DatasetInfo, args: argparse.Namespace) -> list[int]:
    """Ids of the examples ``--split`` and ``--limit`` select, in dataset order.

    Raises
    ------
    UnknownSplitError
        A ``--split`` the dataset does not have (:func:`check_splits`).
    """
    from engine.store import ExampleQuery

    check_splits(project, dataset, args)
    ids = [int(i) for i in project.example_ids(ExampleQuery(dataset.id, splits=selected_splits(args)))]
    return ids if args.limit is None else ids[: args.limit]


def llm_config_from_args(args: argparse.Namespace) -> LLMConfig:
    """The :class:`~engine.llm.config.LLMConfig` the ``LLM`` options describe."""
    from engine.llm.config import LLMConfig

    defaults = LLMConfig()
    params: dict[str, Any] = {"temperature": args.temperature, "max_tokens": args.max_tokens, "seed": args.seed}
    return LLMConfig(
        backend=args.backend,
        model=args.model or (defaults.model if args.backend == "local" else ""),
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        concurrency=args.concurrency,
        timeout_s=args.timeout,
        params=params,
        options={k: v for k, v in (("n_parallel", getattr(args, "slots", None)),
                                   ("n_threads", getattr(args, "threads", None))) if v is not None},
    )
