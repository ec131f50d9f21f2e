"""``generate --method``: one verb for every generation method of :data:`~engine.generation.methods.GENERATORS`.

Every method shares the selection, the LLM options (``--model``, ``--seed``, ``--temperature``…), ``--targets``
and ``--judge`` (same name, same default: the dataset's default judges). Each method's own options are one
argument group (``coba``: the declared :class:`~engine.counterbias.settings.GenerateSettings` options and
``--vote-set``; ``core``; ``vt``); an option of another method's group is refused (CB801), as the declared
options are where they have no effect. ``core`` and ``vt-generate`` are the same verb with another default
method (``core --llm-only`` is ``--method llm``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from engine.cli.args import DATASET, LLM, SELECTION, csv_list, llm_config_from_args, selected_example_ids
from engine.cli.generate_options import add_generate_options, settings_from_args
from engine.cli.progress import StderrProgress
from engine.errors import EXIT_OK
from engine.generate_settings import OPTIONS, GenerationConfigError
from engine.progress import CancelToken

__all__ = ["METHODS", "add_generate_verb", "method_flags"]

#: The built-in methods, in the order ``--help`` lists them (the registry's names).
METHODS = ("coba-edit", "coba-reconstruct", "core", "llm", "vt")
#: Options every method takes besides the selection and LLM parents.
_SHARED = frozenset({"targets", "judge", "method", "llm_only"})


def add_generate_verb(sub: argparse._SubParsersAction, name: str, default: str, help: str,  # noqa: A002
                      description: str) -> argparse.ArgumentParser:
    """Add verb ``name``: the one generation verb, with ``default`` as its method."""
    p = sub.add_parser(name, parents=[DATASET, SELECTION, LLM], help=help, description=description)
    p.add_argument("--method", choices=METHODS, default=None,
                   help=f"how candidates are made (default {default}): " + "; ".join(
                       f"{m}: {_method_help(m)}" for m in METHODS))
    p.add_argument("--judge", help="comma-separated members that judge the new candidates (default: the members of "
                   "the dataset's newest vote and those that only judge; 'none')")
    if name == "core":
        p.add_argument("--llm-only", action="store_true", help=argparse.SUPPRESS)
    groups: dict[str, set[str]] = {}
    before = {a.dest for a in p._actions}
    add_generate_options(p)
    p.add_argument("--vote-set", type=int, help="coba: vote set id (default: the newest vote per example)")
    groups["coba"] = {a.dest for a in p._actions} - before - _SHARED
    before = {a.dest for a in p._actions}
    _add_core_options(p)
    groups["core"] = {a.dest for a in p._actions} - before
    before = {a.dest for a in p._actions}
    _add_vt_options(p)
    groups["vt"] = {a.dest for a in p._actions} - before
    p.set_defaults(run=_run, default_method=default, method_groups=groups)
    p.set_defaults(parser_defaults={a.dest: a.default for a in p._actions})
    return p


def method_flags(parser: argparse.ArgumentParser) -> dict[str, tuple[str, ...]]:
    """Each method group's visible flags (group → flags), as ``--help`` lists them."""
    groups = parser.get_default("method_groups") or {}
    return {group: tuple(f for a in parser._actions if a.dest in dests and a.help is not argparse.SUPPRESS
                         for f in a.option_strings) for group, dests in groups.items()}


def _method_help(method: str) -> str:
    from engine.generation.methods import GENERATORS

    return GENERATORS.get(method).help.replace("%", "%%")


def _add_core_options(p: argparse.ArgumentParser) -> None:
    from engine.cli.index_args import index_options

    g = p.add_argument_group("core", "--method core (and --keywords for llm): retrieval from a corpus")
    g.add_argument("--corpus", help="corpus name (see 'corpus' and 'index')")
    g.add_argument("--member", help="the member that labelled the corpus")
    g.add_argument("-k", type=int, default=5, help="excerpts retrieved per query (default 5)")
    g.add_argument("--diversity", type=float, default=0.3,
                   help="maximal-marginal-relevance weight picking the k excerpts (default 0.3; 0: the k nearest)")
    g.add_argument("--per-text", action="store_true", help="one query per text (default: one per sentence)")
    g.add_argument("--keywords", type=int, default=8, help="core, llm: keywords offered per edit (default 8)")
    index_options(g)


def _add_vt_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("vt", "--method vt: pattern-keeping edits (see 'patterns')")
    g.add_argument("--pattern", help="use this pattern for every selected example (instead of the stored ones)")
    g.add_argument("--phrases", type=int, default=5, help="phrases asked for per example and target (default 5)")
    g.add_argument("--soft", default="embedding", help="soft matcher of (word) elements: embedding (default), forms")


def _given(parser_defaults: dict[str, Any], args: argparse.Namespace, dest: str) -> bool:
    return getattr(args, dest, None) != parser_defaults.get(dest)


def _method(args: argparse.Namespace) -> str:
    method = args.method or args.default_method
    if getattr(args, "llm_only", False):
        method = "llm"
    mode = getattr(args, "mode", None)
    if mode is not None:  # --mode is the old spelling of coba-edit / coba-reconstruct
        if args.method not in (None, f"coba-{mode}") or not method.startswith("coba"):
            raise GenerationConfigError(f"--mode {mode} does not go with --method {method}.",
                                        f"Use --method coba-{mode} alone.")
        method = f"coba-{mode}"
    return method


def _refuse_other_groups(args: argparse.Namespace, method: str) -> None:
    """Refuse an option of another method's group (``--keywords`` is also the ``llm`` method's)."""
    own = {"coba-edit": "coba", "coba-reconstruct": "coba", "core": "core", "llm": None, "vt": "vt"}[method]
    for group, dests in args.method_groups.items():
        if group == own:
            continue
        for dest in sorted(dests):
            if (method == "llm" and dest == "keywords") or dest == "mode":  # --mode: see _method
                continue
            if getattr(args, dest, None) != args.parser_defaults.get(dest):
                flag = OPTIONS[dest].flag if dest in OPTIONS else ("-k" if dest == "k" else "--" + dest.replace("_", "-"))
                raise GenerationConfigError(f"{flag} has no effect with --method {method}.",
                                            f"Drop {flag}, or use a method it belongs to ({group}).")


def _run(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.counterbias import candidate_rows, flip_rates
    from engine.generation.methods import GENERATORS
    from engine.store import Project

    method = _method(args)
    _refuse_other_groups(args, method)
    generator = GENERATORS.get(method)
    inputs = _inputs(args, method)
    config = llm_config_from_args(args)
    judge = None if args.judge is None else ([] if args.judge == "none" else csv_list(args.judge))
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        ids = selected_example_ids(project, dataset, args)
        if method == "core":
            _check_core(args)
        done = generator.run(project, dataset.id, ids, config, inputs, judge=judge, progress=progress,
                             cancel=cancel)
        rows = [r for r in candidate_rows(project, example_ids=ids) if r["method"] == done.method]
    training = done.summary.pop("judges_training", None)
    if training:
        print(f"note: {', '.join(training)} was still training: these candidates are judged by the others only; "
              "run 'counterbias verify' once it is trained.", file=sys.stderr)
    made = [r for r in rows if r["status"] != "failed"]
    out: dict[str, Any] = {"run_id": done.run_id, "method": method, **done.summary}
    if method == "vt":
        kept = [r for r in made if (r["scores"].get("verdicts") or {}).get("pattern", {}).get("status") == "pass"]
        out["pattern_keeping_rate"] = round(len(kept) / len(made), 4) if made else None
    out["rates"] = flip_rates([r["scores"] for r in made])
    out["failures"] = [{"candidate": r["id"], "example_id": r["example_id"], **(r["meta"].get("error") or {})}
                       for r in rows if r["status"] == "failed"][:50]
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return EXIT_OK


def _inputs(args: argparse.Namespace, method: str) -> Any:
    from engine.generation.methods import CobaInputs, CoreInputs, VtInputs

    targets = args.targets or "other"
    if method.startswith("coba"):
        args.mode = method.removeprefix("coba-")
        settings = settings_from_args(args)  # refuses an option given where it has no effect (CB801)
        return CobaInputs(settings, args.vote_set)
    if method in ("core", "llm"):
        from engine.counterbias.guided import GuidedSettings

        settings = GuidedSettings(method=method, max_keywords=args.keywords, targets=targets,
                                  temperature=args.temperature, seed=args.seed, max_tokens=args.max_tokens)
        if method == "llm":
            return settings
        from engine.cli.index_args import kind_params
        from engine.counterbias.retrieve_edit import RetrievalSettings

        retrieval = RetrievalSettings(corpus=args.corpus, model=args.member, k=args.k, per_sentence=not args.per_text,
                                      encoder="trained" if args.retriever else args.encoder, kind=args.kind,
                                      params=kind_params(args) or None, max_length=args.max_length,
                                      retriever=args.retriever, diversity=args.diversity)
        return CoreInputs(retrieval, settings)
    from engine.counterbias.variation import VariationSettings

    settings = VariationSettings(phrases=args.phrases, targets=targets, temperature=args.temperature,
                                 seed=args.seed, max_tokens=args.max_tokens, soft=args.soft)
    return VtInputs(settings, args.pattern)


def _check_core(args: argparse.Namespace) -> None:
    from engine.cli.index_args import check_k_and_diversity
    from engine.retrieval.errors import RetrievalError

    if not (args.corpus and args.member):
        raise RetrievalError("CORE needs --corpus and --member (the member that labelled the corpus).",
                             "Add them, or use --method llm for the baseline without retrieval.")
    check_k_and_diversity(args)
