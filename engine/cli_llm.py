"""CLI steps for the LLM layer: ``serve-llm`` and ``triples`` (registered into :mod:`engine.cli`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engine.cli import StderrProgress, command
from engine.errors import EXIT_OK
from engine.progress import CancelToken


def add_llm_arguments(p: argparse.ArgumentParser) -> None:
    """Options choosing the LLM (any OpenAI-compatible endpoint, or the bundled local model)."""
    g = p.add_argument_group("LLM")
    g.add_argument("--backend", default="local", help="'local' (bundled GGUF model) or 'openai' (any compatible endpoint)")
    g.add_argument("--model", default=None, help="model name (default: qwen2.5-coder-1.5b for local)")
    g.add_argument("--base-url", help="endpoint, e.g. http://gpu-server:8000/v1 (vLLM), http://localhost:11434/v1 (Ollama)")
    g.add_argument("--api-key-env", help="environment variable holding the API key (never stored)")
    g.add_argument("--concurrency", type=int, default=8, help="parallel requests to the endpoint (default 8)")
    g.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
    g.add_argument("--temperature", type=float, default=0.0)
    g.add_argument("--max-tokens", type=int, default=256)
    g.add_argument("--seed", type=int, default=0)


def llm_config_from_args(args: argparse.Namespace):
    from engine.llm.config import LLMConfig

    defaults = LLMConfig()
    return LLMConfig(
        backend=args.backend,
        model=args.model or (defaults.model if args.backend == "local" else ""),
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        concurrency=args.concurrency,
        timeout_s=args.timeout,
        params={"temperature": args.temperature, "max_tokens": args.max_tokens, "seed": args.seed},
    )


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
        help="decompose each text into subject | predicate | object triples with an LLM",
        description="Sentences are split, then each goes to the LLM; answers are parsed strictly and stored "
        "per example. Examples already done are skipped; every response is cached in the project.",
    )
    p.add_argument("project", type=Path)
    p.add_argument("dataset", help="dataset id or name")
    p.add_argument("--limit", type=int, help="only the first N examples")
    p.add_argument("--split", help="only examples of this split")
    add_llm_arguments(p)
    p.set_defaults(run=_run_triples)


def _run_triples(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.store import ExampleQuery, Project
    from engine.counterbias.triples import extract_triples

    config = llm_config_from_args(args)
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        ids = project.example_ids(ExampleQuery(dataset.id, splits=(args.split,) if args.split else None)).tolist()
        if args.limit is not None:
            ids = ids[: args.limit]
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
