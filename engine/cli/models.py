"""CLI verbs for the classifier ensemble: ``train``, ``attribute``, ``vote`` and ``models``.

Every step calls the same engine functions as the GUI and resumes where it stopped: trained
members are reused (``--overwrite`` retrains), attributions and votes are cached in the project.
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

from engine.cli.args import DATASET, SELECTION, check_splits, csv_list, selected_example_ids
from engine.cli.commands import CliUsageError, command
from engine.cli.progress import StderrProgress
from engine.errors import EXIT_OK
from engine.progress import CancelToken


def _method_settings(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """``--methods ig,lime`` plus per-method options into ``{method: settings}``."""
    from engine.attribution import available_methods

    methods = csv_list(args.methods)
    unknown = [m for m in methods if m not in available_methods()]
    if unknown or not methods:
        raise CliUsageError(f"Unknown attribution methods {unknown or methods}.",
                            f"Use some of: {', '.join(available_methods())}.")
    options = {"ig": {"n_steps": args.ig_steps}, "lime": {"num_samples": args.lime_samples},
               "shapley": {"num_samples": args.shapley_samples}}
    if getattr(args, "budget", None):
        options = {m: {**o, "budget": args.budget} for m, o in options.items()}
    return {m: {k: v for k, v in options.get(m, {}).items() if v is not None} or None for m in methods}


def _members(project, dataset, names: str | None) -> list[str]:
    """Named members, or the default explainers among the members trained on this dataset version (or its parent)."""
    from engine.attribution.explainers import default_explainers
    from engine.models import list_models

    if names:
        return csv_list(names)
    ids = {dataset.id, dataset.parent_id}
    found = [m for m in list_models(project) if m.dataset_id in ids and m.params.get("spec", {}).get("inputs", "auto") == "auto"]
    if not found:
        raise CliUsageError(f"No trained members for dataset {dataset.name!r}.",
                            f"Run: counterbias train {shlex.quote(str(project.path))} {shlex.quote(dataset.name)}")
    return [m.name for m in default_explainers(found)]


#: Members, methods and their options, the explained class, and the examples (``attribute``, ``vote``).
ATTRIBUTION = argparse.ArgumentParser(add_help=False, parents=[SELECTION])
ATTRIBUTION.add_argument("--members", help="comma-separated member names (default: the members trained on the dataset "
                                             "whose whole network was trained; a member trained only on its top layer "
                                             "judges but explains only when named)")
ATTRIBUTION.add_argument("--methods", default="ig", help="comma-separated: ig, lime, shapley (default: ig)")
ATTRIBUTION.add_argument("--budget", choices=("fast", "full"),
                         help="fast (the default without a GPU: LIME and Shapley samples sized to the words; IG from 16 nodes placed "
                              "where the output changes, refined only when grossly incomplete) or full (the default "
                              "with a GPU: CoBA's sizes, IG 50 steps refined to 200)")
ATTRIBUTION.add_argument("--ig-steps", type=int, help="Integrated Gradients first-pass steps (default 50 full, 16 fast)")
ATTRIBUTION.add_argument("--lime-samples", type=int, help="LIME perturbation samples")
ATTRIBUTION.add_argument("--shapley-samples", type=int, help="Shapley value sampling permutations")
ATTRIBUTION.add_argument("--target", default="predicted",
                         help="class explained: predicted (default), label, or a label name")


def _example_ids(project, dataset, args: argparse.Namespace) -> list[int] | None:
    """``--limit``'s examples; ``None`` (every example of the ``--split`` splits) without it."""
    check_splits(project, dataset, args)
    return None if args.limit is None else selected_example_ids(project, dataset, args)


# --------------------------------------------------------------------------- train
@command("train")
def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        parents=[DATASET],
        help="fine-tune the classifier ensemble (resumes; trained members are reused)",
        description="Train one member per backbone on the dataset's train split; model selection on its dev "
        "split or a held-out fraction. Weights are saved as safetensors in the project folder.",
    )
    p.add_argument("--backbones", default="minilm-l6,minilm-l3,mpnet-base",
                   help="comma-separated backbone names (see 'counterbias models --backbones')")
    p.add_argument("--local-model", action="append", default=[], metavar="DIR",
                   help="add a local Hugging Face model folder as a member (repeatable)")
    p.add_argument("--preset", choices=["sample-cpu", "top-cpu", "quick-cpu", "fast-cpu", "paper"],
                   help="sample-cpu: each member on a sample of the train rows — MiniLMs fully fine-tuned on 800, "
                        "MPNet's top layer on up to 3,000 (minutes on a CPU, bounded whatever the dataset's size; "
                        "the default without a GPU); top-cpu: lower layers run once, top layer + head trained on "
                        "every row; quick-cpu: frozen encoder + cached features + trained head (fastest, least "
                        "accurate); fast-cpu: full fine-tuning, 2 epochs (the default with a GPU); paper: CoBA's")
    p.add_argument("--prefix", help="member name prefix (default: '<dataset>:')")
    p.add_argument("--epochs", type=int)
    p.add_argument("--max-length", type=int)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--max-train-rows", type=int,
                   help="subsample the train split (for a quick look; replaces the sample size of sample-cpu)")
    p.add_argument("--device", default="auto", help="auto (cuda, mps, cpu), cuda, cpu, ...")
    p.add_argument("--hypothesis-only", action="store_true",
                   help="also train a hypothesis-only member (NLI): its predictions become a statistics feature")
    p.add_argument("--overwrite", action="store_true", help="retrain members that already exist")
    p.set_defaults(run=_run_train)


def _run_train(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.models import (
        EnsembleConfig,
        MemberSpec,
        hypothesis_only_member,
        train_ensemble,
        train_member,
        train_preset,
    )
    from engine.progress import scaled
    from engine.store import Project

    from engine.models.device import check_device_name

    args.device = check_device_name(args.device)  # CB512 before anything is opened
    if args.preset is None:
        from engine.models.device import default_preset

        args.preset = default_preset()
    overrides = {k: v for k, v in {"epochs": args.epochs, "max_length": args.max_length, "batch_size": args.batch_size,
                                   "max_train_rows": args.max_train_rows, "device": args.device}.items() if v is not None}
    local = _local_members(args.local_model)  # checked (CB502, CB508, CB510, CB511) before the project is opened
    backbones = csv_list(args.backbones)
    _check_member_count(backbones, local)
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        prefix = args.prefix if args.prefix is not None else f"{dataset.name}:"
        members = [MemberSpec(f"{prefix}{b}", b, {}, train_preset(args.preset, b, **overrides)) for b in backbones]
        for name, params in local:
            members.append(MemberSpec(f"{prefix}{name}", "local-dir", params,
                                      train_preset(args.preset, "local-dir", params, **overrides)))
        if args.hypothesis_only and dataset.task != "pair":
            raise CliUsageError(f"Dataset {dataset.name!r} is not a premise/hypothesis dataset.",
                                "Leave out --hypothesis-only for single-text data.")
        share = 0.85 if args.hypothesis_only else 1.0
        result = train_ensemble(project, dataset.id, EnsembleConfig(tuple(members)), overwrite=args.overwrite,
                                progress=scaled(progress, 0, share), cancel=cancel)
        trained = list(result.members)
        if args.hypothesis_only:
            # Not a voter: its predictions become the hyp_only_pred statistics feature.
            spec = hypothesis_only_member(f"{prefix}hypothesis-only", csv_list(args.backbones)[0], preset=args.preset,
                                          **overrides)
            trained.append(train_member(project, dataset.id, spec, overwrite=args.overwrite,
                                        progress=scaled(progress, share, 1), cancel=cancel))
    print(json.dumps({
        "dataset": dataset.name,
        "threshold": result.threshold,
        "preset": args.preset,
        "members": [{"name": m.model.name, "backbone": m.model.backbone, "preset": m.model.preset,
                     "dev_accuracy": round(m.dev_accuracy, 4),
                     "reused": m.skipped, "seconds": round(m.seconds, 1)} for m in trained],
    }, indent=2))
    return EXIT_OK


def _local_members(folders: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """``(member name suffix, local-dir params)`` of each ``--local-model`` folder, checked before training."""
    from engine.models.hf import check_model_folder

    out = []
    for folder in folders:
        path = Path(folder).expanduser().resolve()
        check_model_folder(path, what=f"--local-model {folder}")
        out.append((path.name, {"path": str(path)}))
    return out


def _check_member_count(backbones: list[str], local: list[tuple[str, dict[str, Any]]]) -> None:
    """The majority vote needs an odd number of members: backbones and local models counted together."""
    from engine.models import EnsembleConfigError

    total = len(backbones) + len(local)
    if total % 2 == 0 or total == 0:
        parts = f"{len(backbones)} backbone{'s' if len(backbones) != 1 else ''} ({', '.join(backbones) or 'none'})"
        if local:
            parts += f" + {len(local)} --local-model folder{'s' if len(local) != 1 else ''}"
        raise EnsembleConfigError(
            f"An ensemble needs an odd number of members for a majority vote; {parts} make {total}.",
            "Name one backbone more or fewer with --backbones, e.g. --backbones minilm-l6,minilm-l3 with one "
            "--local-model (see 'counterbias models --backbones').",
        )


# --------------------------------------------------------------------------- attribute
@command("attribute")
def _add_attribute(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "attribute",
        parents=[DATASET, ATTRIBUTION],
        help="word importance (IG, LIME, Shapley) per member, cached in the project",
        description="Scores every word of the canonical segmentation for the explained class. "
        "Cached per (member, method, settings, example): a rerun computes only what is missing.",
    )
    p.set_defaults(run=_run_attribute)


def _run_attribute(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.attribution import attribute_ensemble
    from engine.store import Project

    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        runs = attribute_ensemble(project, _members(project, dataset, args.members), dataset.id,
                                  methods=_method_settings(args), target=args.target,
                                  example_ids=_example_ids(project, dataset, args), splits=args.split,
                                  progress=progress, cancel=cancel)
    print(json.dumps([{"member": r.model_name, "method": r.method, "requested": r.requested, "computed": r.computed,
                       "cached": r.cached, "seconds": round(r.seconds, 1)} for r in runs], indent=2))
    return EXIT_OK


# --------------------------------------------------------------------------- vote
@command("vote")
def _add_vote(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "vote",
        parents=[DATASET, ATTRIBUTION],
        help="majority vote into principal and spurious words (attributes what is missing)",
        description="Top-K words per member and method; a member votes for a word its methods agree on "
        "(--combine); with the majority rule a word with at least (|M|+1)/2 votes is principal, other voted "
        "words are spurious (--rule picks another way to combine the scores). "
        "Words of the chosen lists join the spurious words.",
    )
    p.add_argument("-k", type=int, default=5, help="top-K words per member and method (default 5)")
    p.add_argument("--combine", default="majority", help="how a member's methods combine: any, majority, all")
    p.add_argument("--rule", default=None,
                   help="vote rule: majority, weighted-majority, rank-mean, score-mean, margin, z-prior, z-tiebreak "
                        "(default: the engine's; see benchmarks/principal_words.py for how they compare)")
    p.add_argument("--prior-weight", type=float, default=None, help="weight of the label prior for z-prior (0-1)")
    p.add_argument("--wordlist", action="append", default=[], help="bundled list joining W_s, e.g. gender (repeatable)")
    p.add_argument("--words", type=Path, help="a file of your own words (one per line) joining W_s")
    p.add_argument("--top", type=int, default=20, help="rows of the dataset-level tables (default 20)")
    p.add_argument("--out", type=Path, help="JSONL of per-example principal and spurious words")
    p.set_defaults(run=_run_vote)


def _rule_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--rule`` / ``--prior-weight`` as VoteSettings keywords (unset: the engine's defaults)."""
    out: dict[str, Any] = {}
    if args.rule:
        out["rule"] = args.rule
    if args.prior_weight is not None:
        out["prior_weight"] = args.prior_weight
    return out


def _run_vote(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.attribution import VoteSettings, find_principal_words, load_votes, read_wordlist
    from engine.store import Project

    user_words = read_wordlist(args.words) if args.words else ()
    if args.out:
        from engine.io.output import check_output_path, open_output

        check_output_path(args.out, project=args.project)  # before anything is attributed or voted
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        run = find_principal_words(
            project, dataset.id, _members(project, dataset, args.members), methods=_method_settings(args),
            vote=VoteSettings(k=args.k, combine=args.combine, **_rule_options(args)), wordlists=args.wordlist,
            user_words=user_words,
            target=args.target, example_ids=_example_ids(project, dataset, args), splits=args.split, top=args.top,
            progress=progress, cancel=cancel,
        )
        if args.out:
            with open_output(args.out, project=args.project, what="the votes") as fh:
                for (example_id, field), vote in sorted(load_votes(project, run.vote_set_id).items()):
                    fh.write(json.dumps({"example_id": example_id, "field": field, "principal": list(vote.principal),
                                         "spurious": list(vote.spurious), "votes": vote.votes},
                                        ensure_ascii=False) + "\n")
    print(json.dumps({"dataset": dataset.name, "vote_set": run.vote_set_id, "reused": run.reused,
                      **run.summary.to_dict()}, indent=2, ensure_ascii=False))
    return EXIT_OK


# --------------------------------------------------------------------------- models
@command("models")
def _add_models(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list trained members (or available backbones) with their accuracy")
    p.add_argument("project", type=Path, nargs="?", help="project file (.cbproj); without it, list the backbones")
    p.add_argument("--backbones", action="store_true", help="list the backbone registry instead")
    p.set_defaults(run=_run_models)


def _run_models(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.models import available_backbones, list_models
    from engine.store import Project

    if args.backbones or args.project is None:
        print(json.dumps(available_backbones(), indent=2))
        return EXIT_OK
    with Project.open(args.project) as project:
        rows = [{"name": m.name, "backbone": m.backbone, "dataset_id": m.dataset_id,
                 "inputs": m.params.get("spec", {}).get("inputs", "auto"),
                 "preset": m.preset, "training": m.training_summary, "dev_accuracy": m.metrics.get("dev_accuracy")}
                for m in list_models(project)]
    print(json.dumps(rows, indent=2))
    return EXIT_OK
