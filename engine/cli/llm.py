"""CLI verbs for the LLM layer: ``serve-llm`` and ``triples``."""

from __future__ import annotations

import argparse
import json

from engine.cli.args import DATASET, LLM, SELECTION, llm_config_from_args, selected_example_ids
from engine.cli.commands import command
from engine.cli.progress import StderrProgress
from engine.errors import EXIT_OK
from engine.progress import CancelToken


@command("serve-llm")
def _add_serve(sub: argparse._SubParsersAction) -> None:
    from engine.llm.server import add_arguments

    p = sub.add_parser("serve-llm", help="serve a bundled model as an OpenAI-compatible HTTP endpoint on loopback")
    add_arguments(p)
    p.set_defaults(run=_run_serve)


def _run_serve(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.llm.server import serve

    return serve(args)


@command("triples")
def _add_triples(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "triples",
        parents=[DATASET, SELECTION, LLM],
        help="decompose each text into subject | predicate | object triples with an LLM",
        description="Sentences are split, then each goes to the LLM; answers are parsed strictly and stored "
        "per example. Examples already done are skipped; every response is cached in the project.",
    )
    p.set_defaults(run=_run_triples)


def _run_triples(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.store import Project
    from engine.counterbias.triples import extract_triples

    config = llm_config_from_args(args)
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        ids = selected_example_ids(project, dataset, args)
        result = extract_triples(project, dataset.id, ids, config, progress=progress, cancel=cancel)
    statuses: dict[str, int] = {}
    for item in result.items:
        statuses[item.status] = statuses.get(item.status, 0) + 1
    print(json.dumps({
        "run_id": result.run_id, "processed": len(result.items), "skipped": len(result.skipped),
        "status": statuses, "requests_sent": result.sent, "cache_hits": result.cache_hits,
        "tokens": {"prompt": result.usage.prompt_tokens, "completion": result.usage.completion_tokens},
        "seconds": round(result.seconds, 1),
    }, indent=2))
    return EXIT_OK
