"""CLI verbs of CoBA generation: ``generate``, ``verify``, ``candidates``, ``decide`` and ``augment``.

``generate`` runs whole datasets against any OpenAI-compatible endpoint (e.g. vLLM on a GPU
server) and resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json

from engine.cli.args import (
    DATASET,
    LLM,
    PROJECT,
    csv_list,
    llm_config_from_args,
)
from engine.cli.commands import command
from engine.cli.generate_methods import add_generate_verb
from engine.cli.progress import StderrProgress
from engine.errors import EXIT_OK
from engine.progress import CancelToken


@command("generate")
def _add_generate(sub: argparse._SubParsersAction) -> None:
    add_generate_verb(
        sub, "generate", "coba-edit",
        help="make counterbias candidates: CoBA (edit or reconstruct), CORE, a plain LLM edit, variation theory",
        description="--method picks how (default coba-edit, which needs a vote: principal/spurious words). Each "
        "example gets N candidates per target label; every step is stored; failures are recorded per candidate "
        "and retried by the next run. Options of another method are refused.")


@command("verify")
def _add_verify(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify", parents=[DATASET, LLM],
        help="run every verification check on the candidates again (ensemble, heuristics; --llm-judge adds the LLM)",
        description="Stores each check's verdict and reason with the candidate and recomputes whether it passes "
        "the accept rule. Checks: " + ", ".join(_check_names()) + ".",
    )
    p.add_argument("--status", default="proposed", help="candidates with these statuses (default proposed; 'all')")
    p.add_argument("--judge", help="comma-separated ensemble members (default: the members of the newest vote "
                   "and those that only judge; 'none' for the string checks only)")
    p.add_argument("--llm-judge", action="store_true",
                   help="also ask the LLM (the LLM options below) which label each candidate expresses")
    p.add_argument("--require", help="comma-separated checks a passing candidate must not fail, besides the flip, "
                   "spurious-word and agreement checks (default: every other check)")
    p.add_argument("--flip", choices=("target", "away", "none"), default="target",
                   help="which ensemble flip the accept rule requires (default target)")
    p.add_argument("--min-member-prob", type=float, default=0.85,
                   help="every member's P(target) at least this (default 0.85; 0 turns the check off)")
    p.add_argument("--agreement", choices=("each", "best"), default=None,
                   help="whose P(target) --min-member-prob applies to: each member, or the member with the best dev "
                   "accuracy (default: the engine's)")
    p.add_argument("--max-residual-share", type=float, default=None,
                   help="the residual check fails a candidate with more than this share of its sentences still read "
                   "as the original label (default: the engine's, 0.2; 0: any such sentence)")
    p.add_argument("--max-untouched", type=int, default=None,
                   help="the untouched check fails an edit-mode candidate with more than this many sentences left as "
                   "written (default: off; 0: every sentence edited or removed — fewer, better candidates)")
    p.set_defaults(run=_run_verify)


def _check_names() -> list[str]:
    from engine.verification.checks import CHECKS

    return CHECKS.names()


def _run_verify(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from collections import Counter

    from engine.counterbias import CandidateFilter, candidate_rows, judge_candidates
    from engine.store import Project
    from engine.verification.checks import CHECKS

    required = None if args.require is None else tuple(csv_list(args.require))
    for name in required or ():
        CHECKS.get(name)  # an unknown name is a named error (CB930) listing the checks
    rule = CandidateFilter(require_flip=args.flip, min_member_prob=args.min_member_prob, checks=required,
                           **({"agreement": args.agreement} if args.agreement else {}),
                           **({"max_residual_share": args.max_residual_share}
                              if args.max_residual_share is not None else {}),
                           max_untouched=args.max_untouched)
    statuses = None if args.status == "all" else tuple(csv_list(args.status))
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        ids = [r["id"] for r in candidate_rows(project, dataset_id=dataset.id, statuses=statuses)
               if r["status"] != "failed"]
        members = _judge_members(project, dataset.id, args.judge)
        judge_candidates(project, ids, members, criteria=rule, progress=progress, cancel=cancel)
        llm = None
        if args.llm_judge and ids:
            from engine.verification.llm_judge import llm_judge_candidates

            llm = llm_judge_candidates(project, ids, llm_config_from_args(args), criteria=rule, progress=progress,
                                       cancel=cancel).summary()
        rows = [r for r in candidate_rows(project, dataset_id=dataset.id, statuses=statuses) if r["id"] in set(ids)]
    counts: dict[str, Counter] = {name: Counter() for name in CHECKS.names()}
    for r in rows:
        for name, verdict in (r["scores"].get("verdicts") or {}).items():
            counts.setdefault(name, Counter())[verdict.get("status", "skip")] += 1
    print(json.dumps({
        "candidates": len(rows), "passing": sum(bool(r["scores"].get("passes")) for r in rows),
        "members": members, "required": rule.required(), "llm_judge": llm,
        "checks": {name: dict(c) for name, c in counts.items()},
    }, indent=2, ensure_ascii=False))
    return EXIT_OK


def _judge_members(project, dataset_id: int, judge: str | None) -> list[str]:
    """``--judge`` (``none``: no member), else the members of the newest vote and those that only judge."""
    from engine.attribution.explainers import default_judges

    if judge is not None:
        return [] if judge == "none" else csv_list(judge)
    return default_judges(project, dataset_id)


@command("candidates")
def _add_candidates(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("candidates", parents=[DATASET],
                       help="list counterbias candidates (JSONL) with their scores and status")
    p.add_argument("--status", action="append", help="only this status (repeatable): proposed, accepted, rejected, failed")
    p.add_argument("--steps", action="store_true", help="include every intermediate step (triples, rewrites, raw answers)")
    p.set_defaults(run=_run_candidates)


def _run_candidates(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.counterbias import candidate_rows
    from engine.store import Project

    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        for row in candidate_rows(project, dataset_id=dataset.id, statuses=args.status):
            if not args.steps:
                row["meta"] = {k: v for k, v in row["meta"].items() if k not in ("fields",)}
            print(json.dumps(row, ensure_ascii=False))
    return EXIT_OK


@command("decide")
def _add_decide(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("decide", parents=[PROJECT],
                       help="accept or reject candidates by id, or accept every passing one")
    p.add_argument("decision", choices=("accept", "reject", "reset"))
    p.add_argument("ids", nargs="*", type=int, help="candidate ids")
    p.add_argument("--passing", metavar="DATASET",
                   help="instead of ids: every proposed candidate of DATASET whose judge scores pass the filter")
    p.set_defaults(run=_run_decide)


def _run_decide(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.counterbias import set_decision
    from engine.counterbias.review import passing_ids
    from engine.store import Project

    status = {"accept": "accepted", "reject": "rejected", "reset": "proposed"}[args.decision]
    with Project.open(args.project) as project:
        ids = list(args.ids)
        if args.passing:
            ids += passing_ids(project, project.dataset(args.passing).id)
        for cid in ids:
            set_decision(project, cid, status)
    print(json.dumps({"decision": status, "candidates": ids}))
    return EXIT_OK


@command("augment")
def _add_augment(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("augment", parents=[DATASET],
                       help="build the augmented dataset: originals plus accepted candidates (then 'export')")
    p.add_argument("--name", help="name of the new version (default '<dataset>+counterbias')")
    p.set_defaults(run=_run_augment)


def _run_augment(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.counterbias import build_augmented_dataset
    from engine.store import Project

    with Project.open(args.project) as project:
        result = build_augmented_dataset(project, project.dataset(args.dataset).id, args.name,
                                         progress=progress, cancel=cancel)
    print(json.dumps({"dataset": result.dataset.name, "original": result.original, "added": result.added}))
    return EXIT_OK
