"""CLI verbs for active learning: ``al-data`` (build and import a simulation set), ``al-simulate`` and ``annotate``."""

from __future__ import annotations

import argparse
import json
import os
from contextlib import closing, nullcontext
from pathlib import Path
from typing import Any

from engine.cli.args import DATASET, JSON, LLM, PROJECT, csv_list, llm_config_from_args
from engine.cli.commands import command
from engine.cli.progress import StderrProgress
from engine.errors import EXIT_OK
from engine.progress import CancelToken

#: The shared data folder beside the checkout (``COUNTERBIAS_SHARED_DATA`` overrides it).
SHARED_DATA = Path(os.environ.get("COUNTERBIAS_SHARED_DATA") or Path(__file__).resolve().parents[2].parent / "shared" / "data")


@command("al-simulate")
def _add_simulate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "al-simulate",
        parents=[DATASET, JSON, LLM],
        help="active-learning simulation: macro-F1 vs annotated examples for selection strategies",
        description="Simulate an analyst labelling the dataset's examples in the order a strategy chooses "
        "(random; cluster: k-means over MiniLM embeddings, rotating among clusters; counterfactual: each selected "
        "example paired with its counterfactuals, labelled with their target label). At each budget the learner "
        "is retrained and scored on a held-out split (macro-F1). Prints mean ± SD over seeds. Every finished "
        "(strategy, seed, budget) is stored in the project: a rerun skips it.",
    )
    p.add_argument("--strategies", default="random,cluster,counterfactual",
                   help="comma-separated: random, cluster, counterfactual, counterfactual-cluster "
                        "(default random,cluster,counterfactual)")
    p.add_argument("--shots", default="10,15,30,60,120", help="budgets, comma-separated (default 10,15,30,60,120)")
    p.add_argument("--seeds", default="5", help="number of seeds 0..N-1 (default 5)")
    p.add_argument("--learner", default="embed-lr", help="embed-lr (default: LR on MiniLM embeddings) or tfidf-lr")
    p.add_argument("--counterfactuals", default="stored", metavar="SOURCE",
                   help="stored (the project's proposed/accepted candidates, default), llm (guided LLM edits made "
                        "for the selected examples that have none) or vt (pattern-keeping counterfactuals, the paper's "
                        "condition, made for them from the dataset's stored patterns: run `patterns` first; an example "
                        "no pattern matches gets a plain edit, as in the annotation loop); LLM options below")
    p.add_argument("--statuses", default="proposed,accepted", help="stored: candidate statuses to use")
    p.add_argument("--method", action="append", default=None, help="stored: only candidates of this method (repeat)")
    p.add_argument("--verified-only", action="store_true", help="only candidates whose verification passed")
    p.add_argument("--test-split", default=None, help="hold out this split for testing (default: a sample)")
    p.add_argument("--test-fraction", type=float, default=0.3, help="held-out share when no --test-split (0.3)")
    p.add_argument("--split-seed", type=int, default=0, help="seed of the held-out sample (default 0)")
    p.add_argument("--clusters", type=int, default=10, help="k of the cluster strategies (default 10)")
    p.add_argument("--plot", type=Path, metavar="PNG", help="write macro-F1 vs shots as a PNG")
    p.add_argument("--out", type=Path, metavar="CSV", help="write the table as CSV")
    p.set_defaults(run=_run_simulate)


def _ints(value: str, what: str) -> list[int]:
    from engine.active.errors import BadShotsError

    try:
        return [int(v) for v in csv_list(value)]
    except ValueError as exc:
        raise BadShotsError(f"{what} {value!r} are not whole numbers.", "Write e.g. --shots 10,15,30,60,120 "
                            "--seeds 5.") from exc


def _writable(path: Path | None, project: Path) -> None:
    """Refuse an output that must not be written (the project, a device...) or whose folder is missing."""
    from engine.active.errors import ActiveLearningError
    from engine.io.output import check_output_path

    if path is not None:
        check_output_path(path, project=project)
    if path is not None and not path.resolve().parent.is_dir():
        raise ActiveLearningError(f"Cannot write {path}: its folder does not exist.", "Create the folder first.")


def _run_simulate(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.active.counterfactuals import LLMCounterfactuals, StoredCounterfactuals, VariationCounterfactuals
    from engine.active.errors import ActiveLearningError, BadShotsError
    from engine.active.simulation import simulate
    from engine.active.strategies import STRATEGIES
    from engine.store import Project

    strategies = csv_list(args.strategies)
    if not strategies:
        raise ActiveLearningError("No strategy given.", f"Use some of: {', '.join(STRATEGIES.names())}.")
    for name in strategies:
        STRATEGIES.get(name)  # an unknown name fails here, before the project is opened
    shots = _ints(args.shots, "Budgets")
    seeds = _ints(args.seeds, "Seeds")
    if len(seeds) != 1:
        raise BadShotsError(f"--seeds {args.seeds!r} is not one number.", "Give the number of seeds, e.g. --seeds 5.")
    if args.counterfactuals not in ("stored", "llm", "vt"):
        raise ActiveLearningError(f"Unknown counterfactual source {args.counterfactuals!r}.", "Use stored, llm or vt.")
    for path in (args.plot, args.out):
        _writable(path, args.project)
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        source: Any = None
        at = [0.0]  # the simulation's last fraction: a generation inside a cell reports at it, with its own message

        def simulating(fraction: float, message: str = "") -> None:
            at[0] = fraction
            progress(fraction, message)

        def generating(fraction: float, message: str = "") -> None:
            progress(at[0], f"making counterfactuals of the selected examples: {message}")

        if any(STRATEGIES.get(n).needs_counterfactuals for n in strategies):
            if args.counterfactuals == "llm":
                source = LLMCounterfactuals(project, dataset.id, llm_config_from_args(args),
                                            verified_only=args.verified_only, progress=generating, cancel=cancel)
            elif args.counterfactuals == "vt":
                source = VariationCounterfactuals(project, dataset.id, llm_config_from_args(args),
                                                  verified_only=args.verified_only, progress=generating, cancel=cancel)
            else:
                source = StoredCounterfactuals(project, statuses=csv_list(args.statuses),
                                               verified_only=args.verified_only, methods=args.method)
        with closing(source) if isinstance(source, (LLMCounterfactuals, VariationCounterfactuals)) else nullcontext():
            result = simulate(project, dataset.id, strategies=strategies, shots=shots, seeds=seeds[0],
                              learner=args.learner, counterfactuals=source, test_split=args.test_split,
                              test_fraction=args.test_fraction, split_seed=args.split_seed, n_clusters=args.clusters,
                              progress=simulating, cancel=cancel)
    if args.out:
        result.write_csv(args.out, project=args.project)
    if args.plot:
        result.plot(args.plot, project=args.project)
    notes = []
    for row in result.table():
        if STRATEGIES.get(row.strategy).needs_counterfactuals and all(a == 0 for a in row.added):
            notes.append(f"{row.strategy}: no counterfactuals were found for the selected examples, so it trained "
                         "on the same rows as its base selection (generate candidates first, or use "
                         "--counterfactuals llm or vt)")
    if args.json:
        print(json.dumps({**result.to_dict(), "notes": notes}, indent=2))
    else:
        print(result.format_table())
        print(f"({result.computed} cells computed, {result.skipped} already stored)")
        for note in notes:
            print(f"note: {note}")
    return EXIT_OK


@command("al-data")
def _add_data(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "al-data",
        parents=[PROJECT],
        help="build and import a simulation set: imdb-fine (4 rating classes) or cad-nli (3 classes)",
        description="imdb-fine: a seeded, class-balanced sample of IMDb train reviews with ratings 1-2, 3-4, 7-8, "
        "9-10 as four classes. cad-nli: a seeded sample of CAD's original SNLI pairs (hypothesis as the text, or "
        "pairs); --with-counterfactuals attaches CAD's human revised hypotheses as accepted candidates.",
    )
    p.add_argument("which", help="imdb-fine or cad-nli")
    p.add_argument("--name", help="dataset name (default: WHICH)")
    p.add_argument("--n", type=int, default=500, help="rows sampled (default 500)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--max-words", type=int, default=None,
                   help="imdb-fine: sample only whole reviews of at most this many words (default any length)")
    p.add_argument("--mode", default="hypothesis", help="cad-nli: hypothesis (default) or pair")
    p.add_argument("--with-counterfactuals", action="store_true", help="cad-nli: store CAD's human revisions")
    p.add_argument("--data", type=Path, default=SHARED_DATA, help="the shared data folder (default ../shared/data beside the checkout, or $COUNTERBIAS_SHARED_DATA)")
    p.set_defaults(run=_run_data)


def _run_data(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    import tempfile

    from engine.active.datasets import build_cad_nli, build_imdb_fine, store_cad_counterfactuals
    from engine.active.errors import DataBuildError
    from engine.io import ImportOptions, import_file
    from engine.store import Project

    if args.which not in ("imdb-fine", "cad-nli"):
        raise DataBuildError(f"Unknown simulation set {args.which!r}.", "Use imdb-fine or cad-nli.")
    if args.n < 10:
        raise DataBuildError(f"--n {args.n} is too small.", "Use --n 10 or more (default 500).")
    name = args.name or args.which
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"{name}.csv"
        if args.which == "imdb-fine":
            build_imdb_fine(args.data / "imdb_maas" / "train.tsv.gz", out, n=args.n, seed=args.seed,
                            max_words=args.max_words)
        else:
            build_cad_nli(args.data / "cad" / "NLI", out, mode=args.mode, n=args.n, seed=args.seed)
        with Project.open(args.project) as project:
            result = import_file(project, out, options=ImportOptions(name=name), progress=progress, cancel=cancel)
            added = 0
            if args.with_counterfactuals and args.which == "cad-nli":
                added = store_cad_counterfactuals(project, result.dataset.id, args.data / "cad" / "NLI")
    print(f"imported {result.rows} rows as {name!r}: " + ", ".join(f"{k} {v}" for k, v in result.label_counts.items()))
    if added:
        print(f"stored {added} human counterfactuals (CAD revised hypotheses) as accepted candidates")
    return EXIT_OK


@command("annotate")
def _add_annotate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "annotate",
        parents=[DATASET, JSON, LLM],
        help="the annotation loop headless: next examples, labels, counterfactuals, retraining, the curve",
        description="The steps of the Annotate tab, one per call, all stored in the project (the tab shows the "
        "same session). --next N prints the next N unlabelled examples a strategy chooses; --label ID LABEL "
        "labels an example (repeatable), --label ID LABEL --candidate CID labels one of its counterfactuals; "
        "--counterfactuals makes counterfactuals of the labelled examples (LLM options apply); --retrain fits the "
        "learner on every label and prints its held-out macro-F1; --curve prints the stored learning curve.",
    )
    p.add_argument("--next", type=int, metavar="N", help="print the next N examples to label")
    p.add_argument("--strategy", default="cluster", help="cluster (default) or random")
    p.add_argument("--label", nargs=2, action="append", metavar=("EXAMPLE_ID", "LABEL"), help="give a label")
    p.add_argument("--candidate", type=int, help="with one --label: the counterfactual candidate labelled")
    p.add_argument("--counterfactuals", choices=("vt", "llm"), help="make counterfactuals of the labelled examples")
    p.add_argument("--retrain", action="store_true", help="retrain and print the held-out score")
    p.add_argument("--curve", action="store_true", help="print the stored learning curve")
    p.add_argument("--learner", default="embed-lr", help="embed-lr (default) or tfidf-lr")
    p.set_defaults(run=_run_annotate)


def _run_annotate(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.active.annotation import (
        annotate,
        annotation_setup,
        annotations,
        learning_curve,
        make_counterfactuals,
        next_batch,
        retrain,
    )
    from engine.active.errors import ActiveLearningError
    from engine.store import Project

    if not (args.next or args.label or args.counterfactuals or args.retrain or args.curve):
        raise ActiveLearningError("Nothing to do.", "Give --next, --label, --counterfactuals, --retrain or --curve.")
    if args.candidate is not None and len(args.label or []) != 1:
        raise ActiveLearningError("--candidate needs exactly one --label.", "Label one counterfactual per call.")
    out: dict[str, Any] = {}
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        setup = annotation_setup(project, dataset.id)
        for example_id, label in args.label or []:
            annotate(project, dataset.id, int(example_id), label, candidate_id=args.candidate,
                     strategy=None if args.candidate else args.strategy)
        if args.label:
            out["labelled"] = len(args.label)
        if args.counterfactuals:
            ids = sorted({a.example_id for a in annotations(project, dataset.id) if a.candidate_id is None})
            made = make_counterfactuals(project, dataset.id, ids, llm_config_from_args(args),
                                        method=args.counterfactuals, progress=progress, cancel=cancel)
            out["counterfactuals"] = {"made": len(made["vt"]) + len(made["llm"]), "failed": made["failed"],
                                      "pattern_keeping": len(made["vt"]), "patterns": made["patterns"]}
        if args.retrain:
            point = retrain(project, setup, learner=args.learner, progress=progress, cancel=cancel)
            out["retrained"] = {"labels": point.annotations, "counterfactuals": point.counterfactuals,
                                "macro_f1": round(point.macro_f1, 4), "accuracy": round(point.accuracy, 4),
                                "test": point.test_size}
        if args.next:
            ids = next_batch(project, setup, strategy=args.strategy, n=args.next, progress=progress, cancel=cancel)
            out["next"] = [{"id": int(r["id"]), "text": r.get("text") or r.get("hypothesis") or ""}
                           for r in project.examples(ids)]
        if args.curve:
            out["curve"] = [{"labels": p.annotations, "counterfactuals": p.counterfactuals,
                             "macro_f1": round(p.macro_f1, 4), "at": p.created_at}
                            for p in learning_curve(project, setup, learner=args.learner)]
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return EXIT_OK
    if "labelled" in out:
        print(f"labelled {out['labelled']}")
    if "counterfactuals" in out:
        c = out["counterfactuals"]
        print(f"counterfactuals: {c['made']} made ({c['pattern_keeping']} pattern-keeping), {c['failed']} failed")
    if "retrained" in out:
        r = out["retrained"]
        print(f"macro-F1 {r['macro_f1']:.3f} (accuracy {r['accuracy']:.3f}) on {r['test']} held-out examples after "
              f"{r['labels']} labels + {r['counterfactuals']} counterfactuals")
    for row in out.get("next", []):
        print(f"{row['id']:>7}  {row['text'][:110]}")
    for point in out.get("curve", []):
        print(f"{point['labels']:>5} labels + {point['counterfactuals']:>3} counterfactuals: macro-F1 "
              f"{point['macro_f1']:.3f}")
    return EXIT_OK
