"""CLI verbs of variation theory: ``patterns`` (synthesize, add, list, remove) and ``vt-generate``."""

from __future__ import annotations

import argparse
import json

from engine.cli.args import DATASET, JSON, SELECTION, selected_example_ids
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
    from engine.cli.generate_methods import add_generate_verb

    add_generate_verb(
        sub, "vt-generate", "vt",
        help="generate --method vt: pattern-keeping counterfactuals (variation theory)",
        description="The generate verb with --method vt as its default. For each example, the best stored pattern "
        "of its label that matches it (see 'patterns'), or --pattern: the LLM writes phrases that match the pattern "
        "and fit each target label (or answers CANNOT), then edits the example to contain one of them. The "
        "'pattern' check gives the pattern keeping rate. A rerun skips what was made.")
