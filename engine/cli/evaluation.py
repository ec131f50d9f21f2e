"""CLI verbs for the downstream evaluation: ``evaluate``, ``diversity`` and the before/after ``report``."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from engine.cli.args import DATASET, JSON, PROJECT
from engine.cli.commands import command
from engine.cli.progress import StderrProgress
from engine.errors import EXIT_OK
from engine.progress import CancelToken


@command("evaluate")
def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        parents=[PROJECT, JSON],
        help="downstream experiment: train a classifier per condition and seed, score every test set",
        description="Train a classifier on each training condition for each seed and score it on every test set. "
        "A condition is NAME=DATASET[:SPLIT][@LIMIT][+DATASET[:SPLIT][@LIMIT]...] (SPLIT '*' or none: every row; "
        "@LIMIT: a seeded random sample of that many rows, e.g. a size control). A test set is "
        "DATASET[:SPLIT][=ROLE] with ROLE in-domain (default), counterfactual or out-of-domain; it is marked in the "
        "project. Without --test every marked test set is used. Results are stored as they are produced: "
        "a rerun skips the cells already scored.",
    )
    p.add_argument("--train", action="append", required=True, metavar="COND", help="a training condition (repeat)")
    p.add_argument("--test", action="append", default=[], metavar="SET", help="a test set (repeat)")
    p.add_argument("--classifier", default="tfidf-lr", help="tfidf-lr (default) or backbone:<name>")
    p.add_argument("--preset", default=None, help="training preset for a backbone classifier (default fast-cpu)")
    p.add_argument("--seeds", type=int, default=3, help="number of seeds 0..N-1 (default 3)")
    p.add_argument("--out", type=Path, help="also write the table as CSV")
    p.set_defaults(run=_run_evaluate)


def _run_evaluate(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.evaluation.classifiers import make_classifier
    from engine.evaluation.conditions import parse_condition
    from engine.evaluation.errors import EvaluationError
    from engine.evaluation.experiment import run_evaluation
    from engine.evaluation.table import format_table, write_csv
    from engine.evaluation.test_sets import mark_test_set, parse_test_set, test_sets
    from engine.store import Project

    if args.seeds < 1:
        raise EvaluationError(f"--seeds {args.seeds} is not positive.", "Use --seeds 1 or more (default 3).")
    conditions = [parse_condition(c) for c in args.train]
    parsed = [parse_test_set(t) for t in args.test]
    options = {"preset": args.preset} if args.preset else {}
    if options and not args.classifier.startswith("backbone:"):
        raise EvaluationError("--preset applies to backbone classifiers only.", "Drop --preset for tfidf-lr.")
    classifier = make_classifier(args.classifier, **options)
    if args.out:
        from engine.io.output import check_output_path

        check_output_path(args.out, project=args.project)  # before the classifiers are trained
    with Project.open(args.project) as project:
        tests = None
        if parsed:
            marked = {(t.dataset_id, t.split): t for t in test_sets(project)}
            tests = []
            for dataset, split, role in parsed:
                d = project.dataset(dataset)
                known = marked.get((d.id, split))
                if known is not None and (role is None or role == known.role):
                    tests.append(known)
                else:
                    tests.append(mark_test_set(project, d.id, split, role or "in-domain"))
        result = run_evaluation(project, conditions, classifier, seeds=list(range(args.seeds)), tests=tests,
                                progress=progress, cancel=cancel)
    rows = result.table()
    if args.out:
        write_csv(rows, args.out, project=args.project)
    if args.json:
        print(json.dumps({
            "computed": result.computed, "skipped": result.skipped,
            "rows": [{"condition": r.condition, "classifier": r.classifier, "test_set": r.test_set, "role": r.role,
                      "seeds": list(r.seeds), "n_test": r.n, "accuracy": _num(r.accuracy.mean),
                      "accuracy_ci95": _num(r.accuracy.half_width), "macro_f1": _num(r.macro_f1.mean),
                      "macro_f1_ci95": _num(r.macro_f1.half_width)} for r in rows],
        }, indent=2))
    else:
        print(format_table(rows))
        print(f"({result.computed} cells computed, {result.skipped} already stored; accuracy %, mean ± 95% CI "
              "over seeds)")
    return EXIT_OK


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


@command("diversity")
def _add_diversity(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diversity",
        parents=[DATASET, JSON],
        help="diversity of an augmented dataset's generated rows and their closeness to the parents",
    )
    p.add_argument("--no-embeddings", action="store_true", help="skip the MiniLM cosine and principal components")
    p.add_argument("--judge", metavar="MODEL", help="a trained member: the flip rate is the share it labels "
                   "with the target label")
    p.add_argument("--pc", type=int, default=5, help="principal components for the variance share (default 5)")
    p.set_defaults(run=_run_diversity)


def _run_diversity(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.evaluation.diversity_report import dataset_diversity
    from engine.evaluation.errors import EvaluationError
    from engine.store import Project

    if args.pc < 1:
        raise EvaluationError(f"--pc {args.pc} is not positive.", "Use --pc 1 or more.")
    with Project.open(args.project) as project:
        judge: Any = None
        if args.judge:
            from engine.models.predict import predict
            from engine.models.store import find_model

            info = find_model(project, args.judge)
            if info is None:
                raise EvaluationError(f"No trained model called {args.judge!r}.", "See 'models' for the names.")

            def ensemble_judge(texts: Any) -> list[str]:
                probs = predict(project, args.judge, list(texts))
                return [info.labels[i] for i in probs.argmax(axis=1)]

            judge = ensemble_judge

        report = dataset_diversity(project, args.dataset, judge=judge, embeddings=not args.no_embeddings,
                                   pc_k=args.pc, progress=progress, cancel=cancel)
    values = report.as_dict()
    if args.json:
        print(json.dumps({k: _num(v) if isinstance(v, float) else v for k, v in values.items()}, indent=2))
    else:
        for k, v in values.items():
            print(f"{k:18} {v:.4f}" if isinstance(v, float) else f"{k:18} {v}")
    return EXIT_OK


@command("report")
def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        parents=[PROJECT, JSON],
        help="before/after report of a dataset and its counterbias augmentation (HTML and/or PDF)",
        description="Compare the z-statistics of a dataset with its augmented version (the originals plus the "
        "accepted candidates, or a stored augmented version), count the candidates per method, status and failing "
        "check, give the label-flip rates, the stored downstream evaluation and the diversity of the accepted "
        "edits. Writes one self-contained HTML file and/or a PDF; prints the headline figures.",
    )
    p.add_argument("--dataset", required=True, help="the original dataset (id or name; an augmented version "
                   "stands for itself against its parent)")
    p.add_argument("--augmented", metavar="VERSION", help="a stored augmented version to compare with (default: "
                   "the originals plus the candidates accepted now)")
    p.add_argument("--html", type=Path, metavar="FILE", help="write the report as one self-contained HTML file")
    p.add_argument("--pdf", type=Path, metavar="FILE", help="write the report as a PDF")
    p.add_argument("--no-diversity", action="store_true", help="skip the diversity of the accepted edits")
    p.set_defaults(run=_run_report)


def _run_report(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.evaluation.report import build_report
    from engine.evaluation.report_render import check_target, write_html, write_pdf
    from engine.store import Project

    for target in (args.html, args.pdf):
        if target is not None:
            check_target(target, project=args.project)
    with Project.open(args.project, readonly=True) as project:
        report = build_report(project, args.dataset, augmented_id=args.augmented, diversity=not args.no_diversity,
                              progress=progress, cancel=cancel)
    written = []
    if args.html:
        written.append(str(write_html(report, args.html, project=args.project)))
    if args.pdf:
        written.append(str(write_pdf(report, args.pdf, project=args.project)))
    summary = report.summary()
    if args.json:
        print(json.dumps({**summary, "written": written}, indent=2, ensure_ascii=False))
        return EXIT_OK
    sig, changes, cands = summary["significant_features"], summary["abs_z"], summary["candidates"]
    print(f"{report.title}")
    print(f"augmented: {report.augmented}")
    print(f"significant features: {sig['before']} before, {sig['after']} after; |z| dropped for "
          f"{changes['dropped']}, rose for {changes['rose']}")
    print(f"candidates: {cands['total']} ({cands['accepted']} accepted, {cands['rejected']} rejected, "
          f"{cands['undecided']} undecided, {cands['failed']} failed)")
    for row in report.dropped(5):
        print(f"  {row.feature:24} {row.label:10} z {row.z_before:7.2f} -> {row.z_after:7.2f}")
    for note in report.notes:
        print(f"note: {note}")
    for path in written:
        print(f"wrote {path}")
    return EXIT_OK
