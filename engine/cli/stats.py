"""CLI verbs for bias statistics: ``stats`` and ``zfilter``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engine.cli.args import DATASET, csv_list
from engine.cli.commands import CliUsageError, command
from engine.cli.progress import StderrProgress
from engine.errors import EXIT_OK
from engine.progress import CancelToken

FAMILIES = ("unigrams", "bigrams", "length", "length_ratio", "overlap", "null")


#: ``--features`` and ``--per-document``: which features are counted, and how.
FEATURES = argparse.ArgumentParser(add_help=False)
_features = FEATURES.add_argument_group("features")
_features.add_argument("--features", default=",".join(FAMILIES),
                       help=f"comma-separated feature families (default: all of {','.join(FAMILIES)})")
_features.add_argument("--per-document", action="store_true", help="count a feature once per example")


def _feature_config(args: argparse.Namespace):
    from engine.stats import FeatureConfig
    from engine.stats.errors import StatsConfigError

    chosen = set(csv_list(args.features))
    unknown = chosen - set(FAMILIES)
    if unknown:
        raise StatsConfigError(f"Unknown feature families {sorted(unknown)}.", f"Use some of: {', '.join(FAMILIES)}.")
    return FeatureConfig(per_document=args.per_document, **{f: f in chosen for f in FAMILIES})


@command("stats")
def _add_stats(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stats",
        parents=[DATASET, FEATURES],
        help="z-statistics of every feature against the labels (CSV)",
        description="For each feature x and label y: n = count(x), p_hat = count(x, y)/n, "
        "z = (p_hat - p0)/sqrt(p0(1-p0)/n); significance at alpha with a Bonferroni correction.",
    )
    p.add_argument("--out", type=Path, help="CSV with feature, kind, label, n, count, p_hat, z, significant")
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--alpha", type=float, default=0.01)
    p.add_argument("--p0", type=float, help="null share (default 1/|labels|)")
    p.add_argument("--top", type=int, default=10, help="biased features per label printed (default 10)")
    p.add_argument("--hyp-only", default="auto", metavar="MEMBER",
                   help="hypothesis-only member whose prediction becomes the hyp_only_pred feature: auto (the one "
                   "trained on this dataset, if any; default), none, or a member name")
    p.set_defaults(run=_run_stats)


def _run_stats(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.stats import StatsConfig, ZStatsConfig
    from engine.stats.analysis import analyse_pair
    from engine.store import Project

    config = StatsConfig(
        features=_feature_config(args),
        zstats=ZStatsConfig(alpha=args.alpha, min_count=args.min_count, p0=args.p0),
    )
    if args.out:
        from engine.io.output import check_output_path

        check_output_path(args.out, project=args.project)  # before the statistics are computed
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        stats, _ = analyse_pair(project, dataset.id, None, config, hyp_only=args.hyp_only, progress=progress,
                                cancel=cancel)
    if args.out:
        stats.result.to_csv(args.out, project=args.project)
    print(json.dumps({"dataset": dataset.name, "out": str(args.out) if args.out else None, **stats.summary(args.top)},
                     indent=2))
    return EXIT_OK


@command("zfilter")
def _add_zfilter(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "zfilter",
        parents=[DATASET, FEATURES],
        help="z-filter a dataset (Wu et al. 2022) into a new dataset version",
        description="Accept examples batch by batch unless they hold a top-k biased feature of their "
        "label in the data accepted so far. --seed gives conditional filtering Z(D|seed); "
        "--preset z-aug|par-z|seq-z combines the seed (D0) and the dataset (D'). "
        "The dataset argument is the one to filter (D or D').",
    )
    p.add_argument("--seed", help="seed dataset (D0), id or name")
    p.add_argument("--preset", choices=["z-aug", "par-z", "seq-z"], help="needs --seed")
    p.add_argument("--name", help="name of the new version")
    p.add_argument("--k", type=int, default=20, help="biased features per label (default 20)")
    p.add_argument("--batch-size", type=int,
                   help="rows per batch (default: about 20 batches, between 100 and 10,000 rows)")
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--significant-only", action="store_true",
                   help="only features above the Bonferroni threshold can reject")
    p.set_defaults(run=_run_zfilter)


def _run_zfilter(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.stats import ZFilterConfig, zfilter_project
    from engine.stats.presets_io import zfilter_preset_project
    from engine.stats.zfilter import auto_batch_size
    from engine.store import Project

    features = _feature_config(args)
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        seed = project.dataset(args.seed) if args.seed else None
        config = ZFilterConfig(k=args.k, batch_size=args.batch_size or auto_batch_size(dataset.row_count),
                               min_count=args.min_count, significant_only=args.significant_only)
        if args.preset:
            if seed is None:
                raise CliUsageError("--preset needs --seed (the original dataset D0).", "Add --seed NAME.")
            info, _ = zfilter_preset_project(project, args.preset, seed.id, dataset.id, config, features=features,
                                             name=args.name, progress=progress, cancel=cancel)
        else:
            info = zfilter_project(project, dataset.id, config, features=features,
                                   seed_dataset_id=seed.id if seed else None, name=args.name,
                                   progress=progress, cancel=cancel).dataset
    print(json.dumps({"dataset": info.name, "dataset_id": info.id, "rows": info.row_count,
                      "accepted": info.params.get("accepted"), "rejected": info.params.get("rejected"),
                      "top_rejection_reasons": info.params.get("rejection_summary", [])[:10]}, indent=2))
    return EXIT_OK
