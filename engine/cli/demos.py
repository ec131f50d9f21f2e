"""CLI verb ``demos``: import human counterfactual pairs as a dataset's demonstrations, and count the pool."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engine.cli.args import DATASET, JSON
from engine.cli.commands import command
from engine.cli.progress import StderrProgress
from engine.errors import EXIT_OK
from engine.progress import CancelToken


@command("demos")
def _add_demos(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demos", parents=[DATASET, JSON],
        help="the demonstration pool: import human counterfactual pairs, count the pairs (imported and accepted)",
        description="Edit requests of generate (the default edit method) take the sentence edits of these pairs "
        "nearest to the sentence being edited as their examples (--demonstrations, default 2). The pool holds the "
        "pairs imported here and every candidate accepted in review. A pair file is CSV, TSV or JSONL whose rows name "
        "their pair: rows sharing --group-column form a pair, the first the original (CAD's *_paired.tsv: "
        "--group-column batch_id --text-column Text --label-column Sentiment), or each counterfactual row names its "
        "original's --id-column in --parent-column. Importing the same file again adds nothing. Without --import: "
        "the counts.")
    p.add_argument("--import", dest="file", type=Path, metavar="FILE", help="a pair file to import")
    p.add_argument("--text-column", default="text", help="the text column (default text)")
    p.add_argument("--label-column", default="label", help="the label column (default label)")
    p.add_argument("--group-column", help="rows sharing this value form a pair, the first the original")
    p.add_argument("--parent-column", help="a counterfactual row names its original's id here")
    p.add_argument("--id-column", default="id", help="with --parent-column: the rows' id column (default id)")
    p.set_defaults(run=_run_demos)


def _run_demos(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.generation.demo_pairs import import_pairs, pair_counts
    from engine.store import Project

    out: dict[str, object] = {}
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        if args.file is not None:
            done = import_pairs(project, dataset.id, args.file, text_column=args.text_column,
                                label_column=args.label_column, group_column=args.group_column,
                                parent_column=args.parent_column, id_column=args.id_column, progress=progress,
                                cancel=cancel)
            out.update(read=done.read, added=done.added, skipped=done.skipped)
        out.update(pair_counts(project, dataset.id))
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        if args.file is not None:
            print(f"{out['read']} pairs read, {out['added']} added, {out['skipped']} skipped")
        print(f"demonstrations of {args.dataset}: {out['imported']} imported pairs, {out['accepted']} accepted "
              "candidates")
    return EXIT_OK
