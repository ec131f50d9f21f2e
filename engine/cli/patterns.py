"""CLI verbs of variation theory: ``patterns`` (synthesize, add, list, remove) and ``vt-generate``."""

from __future__ import annotations

import argparse
import json

from engine.cli.args import DATASET, JSON, LLM, SELECTION, selected_example_ids
from engine.cli.commands import command
from engine.cli.progress import StderrProgress
from engine.errors import EXIT_OK
from engine.progress import CancelToken


@command("patterns")
def _add_patterns(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "patterns",
        parents=[DATASET, SELECTION, JSON],
        help="symbolic patterns per label: synthesize them from labelled examples, add your own, list, remove",
        description="Pattern language: word, [word] (any form), (word) (soft match: similar words), $TYPE (entity: "
        "$PERSON, $ORG, $DATE, $LOCATION, ...), a part of speech (ADJ, NOUN, VERB, ...), * (any words); '+' joins "
        "consecutive words, '|' separates alternatives. Without --add/--list/--remove, searches the patterns that "
        "match many examples of each label and few of the others, stores them (replacing the last search; your own "
        "patterns stay) and prints them with precision and recall.",
    )
    p.add_argument("--label", action="append", help="only this label (repeatable)")
    p.add_argument("--field", help="text field: text, or hypothesis/premise of pairs (default: text, or the "
                   "hypothesis of pairs — the field pattern-keeping counterfactuals edit)")
    p.add_argument("--add", metavar="PATTERN", help="score and store your pattern for --label")
    p.add_argument("--list", action="store_true", help="print the stored patterns")
    p.add_argument("--remove", type=int, metavar="ID", help="remove a stored pattern")
    p.add_argument("--top", type=int, default=10, help="patterns kept per label (default 10)")
    p.add_argument("--max-elements", type=int, default=3, help="longest pattern, not counting * (default 3)")
    p.add_argument("--min-precision", type=float, default=0.6, help="lowest precision kept (default 0.6)")
    p.add_argument("--soft", default="none",
                   help="soft matcher for (word) elements in the search: none (default, fastest), embedding, forms")
    p.set_defaults(run=_run_patterns)


def _run_patterns(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.patterns.errors import PatternError
    from engine.patterns.store import delete_pattern, load_patterns, store_patterns
    from engine.patterns.synthesis import score_pattern, synthesize_dataset
    from engine.patterns.syntax import parse
    from engine.store import Project

    if args.add is not None:
        parse(args.add)  # a syntax error is reported before the project is opened
        if not args.label or len(args.label) != 1:
            raise PatternError("--add needs one --label: the label the pattern stands for.",
                               "Write e.g. --add '[waiter]+*+ADJ' --label service.")
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        if args.field is None:
            from engine.counterbias.settings import edited_field

            args.field = edited_field(dataset.task)
        if args.remove is not None:
            if not delete_pattern(project, dataset.id, args.remove):
                raise PatternError(f"Dataset {dataset.name!r} has no pattern {args.remove}.",
                                   "List them with --list.")
            print(f"removed pattern {args.remove}")
            return EXIT_OK
        if args.add is not None:
            rows = [r for r in (project.examples(selected_example_ids(project, dataset, args))) if r.get(args.field)]
            scored = score_pattern(args.add, [str(r[args.field]) for r in rows], [str(r["label"]) for r in rows],
                                   args.label[0])
            store_patterns(project, dataset.id, [scored], source="analyst", params={"field": args.field})
            stored = load_patterns(project, dataset.id, args.label[0])
        elif args.list:
            stored = [s for s in load_patterns(project, dataset.id) if not args.label or s.label in args.label]
        else:
            ids = selected_example_ids(project, dataset, args) if (args.split or args.limit) else None
            synthesize_dataset(project, dataset.id, ids, labels=args.label, field=args.field, top=args.top,
                               max_elements=args.max_elements, min_precision=args.min_precision,
                               soft=None if args.soft == "none" else args.soft, progress=progress, cancel=cancel)
            stored = [s for s in load_patterns(project, dataset.id) if not args.label or s.label in args.label]
    if args.json:
        print(json.dumps([{"id": s.id, "label": s.label, "pattern": s.pattern, "source": s.source,
                           "precision": s.precision, "recall": s.recall, "f1": s.f1, "matched": s.matched}
                          for s in stored], indent=2))
        return EXIT_OK
    print(f"{'id':>5}  {'label':<14} {'prec':>5} {'recall':>6}  source       pattern")
    for s in stored:
        print(f"{s.id:>5}  {s.label[:14]:<14} {s.precision or 0:>5.2f} {s.recall or 0:>6.2f}  {s.source:<12} {s.pattern}")
    return EXIT_OK


@command("vt-generate")
def _add_vt_generate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "vt-generate",
        parents=[DATASET, SELECTION, LLM],
        help="pattern-keeping counterfactuals (variation theory): phrases that keep the pattern, then an edit",
        description="For each example, the best stored pattern of its label that matches it (see 'patterns'), or "
        "--pattern: the LLM writes phrases that match the pattern and fit each target label (or answers CANNOT), "
        "then edits the example to contain one of them. Candidates (method vt) are stored and checked like every "
        "other candidate; the 'pattern' check gives the pattern keeping rate. A rerun skips what was made.",
    )
    p.add_argument("--pattern", help="use this pattern for every selected example (instead of the stored ones)")
    p.add_argument("--targets", default="other", help="other (default), each, or comma-separated label names")
    p.add_argument("--phrases", type=int, default=5, help="phrases asked for per example and target (default 5)")
    p.add_argument("--soft", default="embedding", help="soft matcher of (word) elements: embedding (default), forms")
    p.add_argument("--judge", help="comma-separated judge members (default: none)")
    p.set_defaults(run=_run_vt_generate)


def _run_vt_generate(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.cli.args import csv_list, llm_config_from_args
    from engine.counterbias import candidate_rows, flip_rates
    from engine.counterbias.variation import VariationSettings, generate_variations
    from engine.patterns.syntax import parse
    from engine.store import Project

    if args.pattern:
        parse(args.pattern)
    settings = VariationSettings(phrases=args.phrases, targets=args.targets, temperature=args.temperature,
                                 seed=args.seed, max_tokens=args.max_tokens, soft=args.soft)
    config = llm_config_from_args(args)
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        ids = selected_example_ids(project, dataset, args)
        patterns = {i: args.pattern for i in ids} if args.pattern else None
        result = generate_variations(project, dataset.id, ids, config, settings=settings, patterns=patterns,
                                     judge=csv_list(args.judge) if args.judge else (), progress=progress,
                                     cancel=cancel)
        rows = [r for r in candidate_rows(project, example_ids=ids) if r["method"] == "vt"]
    made = [r for r in rows if r["status"] != "failed"]
    kept = [r for r in made if (r["scores"].get("verdicts") or {}).get("pattern", {}).get("status") == "pass"]
    print(json.dumps({
        "run_id": result.run_id, **result.summary(),
        "pattern_keeping_rate": round(len(kept) / len(made), 4) if made else None,
        "rates": flip_rates([r["scores"] for r in made]),
        "failures": [{"candidate": r["id"], "example_id": r["example_id"], **(r["meta"].get("error") or {})}
                     for r in rows if r["status"] == "failed"][:50],
    }, indent=2, ensure_ascii=False))
    return EXIT_OK
