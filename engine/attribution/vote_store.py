"""Store adapter of the vote: run it over a dataset from cached attributions, read it back.

:func:`find_principal_words` is the whole "ensemble word importance" step for the GUI/CLI:
attributions for every member x method (computed only where missing), then the pure vote of
:mod:`engine.attribution.vote` per example field, stored in ``word_votes`` under a
``vote_sets`` row whose key hashes everything that determines the result, so the same
request is answered from the store.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.attribution.cache import load_attributions
from engine.attribution.errors import MissingAttributionsError, VoteConfigError
from engine.attribution.jobs import AttributionRun, attribute_ensemble
from engine.attribution.method import MethodSettings, settings_key
from engine.attribution.registry import resolve_settings
from engine.attribution.vote import ExampleVote, VoteContext, VoteSettings, VoteSummary, summarize_votes, vote_example
from engine.attribution.vote_registry import PRIOR_RULES
from engine.attribution.word_prior import label_word_prior
from engine.attribution.wordlists import combine_wordlists
from engine.models.store import get_model
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.store import ExampleQuery, Project
from engine.store.locks import vote_lock
from engine.store.runs import recorded_run
from engine.store.schema import now

__all__ = ["DEFAULT_METHODS", "VoteRun", "find_principal_words", "latest_votes", "load_votes", "vote_context", "vote_summary", "vote_sets"]

#: Methods used when none are given: IG alone (deterministic, one batched pass per member).
DEFAULT_METHODS: tuple[str, ...] = ("ig",)


@dataclass(frozen=True)
class VoteRun:
    """Result of :func:`find_principal_words`.

    Attributes
    ----------
    vote_set_id, vote_key
        Where the per-example votes are stored.
    summary
        Dataset-level tables of principal and spurious words.
    attributions
        The attribution jobs run (with their cached/computed counts).
    reused
        True when the whole vote was already stored.
    seconds
        Wall time.
    """

    vote_set_id: int
    vote_key: str
    summary: VoteSummary
    attributions: tuple[AttributionRun, ...]
    reused: bool
    seconds: float


def member_weights(infos: Sequence[Any]) -> dict[str, float]:
    """Each member's dev accuracy above chance (``1 / number of labels``), at least 0.01; 1 when unknown."""
    out = {}
    for info in infos:
        accuracy = (getattr(info, "metrics", None) or {}).get("dev_accuracy")
        chance = 1.0 / max(len(getattr(info, "labels", []) or []), 2)
        out[info.name] = 1.0 if accuracy is None else max(float(accuracy) - chance, 0.01)
    return out


def vote_context(project: Project, infos: Sequence[Any], vote: VoteSettings, *, prior: Mapping[str, float] | None = None,
                 dataset_id: int | None = None) -> VoteContext:
    """What the vote rules read besides the scores: member weights and, for the prior rules, a word prior.

    Without ``prior``, a rule in :data:`~engine.attribution.vote_registry.PRIOR_RULES` gets the label
    prior of the members' training dataset (else of ``dataset_id``).
    """
    if prior is None and vote.rule in PRIOR_RULES:
        source = next((i.dataset_id for i in infos if getattr(i, "dataset_id", None) is not None), dataset_id)
        prior = label_word_prior(project, int(source)) if source is not None else None
    return VoteContext(member_weights=member_weights(infos), prior=prior)


def _vote_key(payload: Mapping[str, Any]) -> str:
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def find_principal_words(
    project: Project,
    dataset_id: int,
    model_names: Sequence[str],
    *,
    methods: Mapping[str, MethodSettings | Mapping[str, Any] | None] | Sequence[str] = DEFAULT_METHODS,
    vote: VoteSettings | None = None,
    wordlists: Sequence[str] = (),
    user_words: Iterable[str] = (),
    target: str = "predicted",
    example_ids: Sequence[int] | None = None,
    splits: Sequence[str] | None = None,
    compute: bool = True,
    top: int | None = 50,
    prior: Mapping[str, float] | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> VoteRun:
    """Ensemble word importance: attribute (cached), vote, store, summarise.

    Parameters
    ----------
    project
        The open project.
    dataset_id
        Dataset version to explain.
    model_names
        The members that explain (any number: the vote needs a strict majority of them unless
        ``vote.threshold`` says otherwise; see :func:`~engine.attribution.explainers.default_explainers`).
    methods
        Method names, or a mapping of method name -> settings (default: IG only).
    vote
        K, how methods combine, ranking, threshold (default :class:`VoteSettings`).
    wordlists, user_words
        Bundled list names (:func:`engine.attribution.wordlists.available_wordlists`) and extra
        words that join W_s wherever they occur.
    target
        Class to explain: ``"predicted"`` (default), ``"label"`` or a label name.
    example_ids, splits
        Restrict the examples (default: the whole dataset).
    compute
        Compute missing attributions (``False``: raise if any are missing).
    top
        Rows per dataset-level table.
    prior
        Normalised word -> z-statistic, for the vote rules that use a prior (``"z-prior"``,
        ``"z-tiebreak"``); ``None``: the dataset's label prior
        (:func:`~engine.attribution.word_prior.label_word_prior`, its train split). Members are weighted by their dev accuracy above chance
        (:func:`member_weights`) for the rules that weight members.
    progress, cancel
        Attribution gets 90 % of the progress range; checked per batch.

    Raises
    ------
    VoteConfigError
        No members or no methods.
    MissingAttributionsError
        With ``compute=False`` when some attributions are not stored.
    engine.store.locks.VoteBusyError
        The same vote (members, settings, rows) is being computed by another run.
    """
    started = time.perf_counter()
    cancel = ensure_token(cancel)
    vote = vote if vote is not None else VoteSettings()
    if not model_names:
        raise VoteConfigError("No ensemble members were given.", "Train an ensemble first (3 members by default).")
    plan = dict(methods) if isinstance(methods, Mapping) else {m: None for m in methods}
    if not plan:
        raise VoteConfigError("No attribution method was chosen.", "Enable at least one of ig, lime, shapley.")
    resolved = {m: resolve_settings(m, s) for m, s in plan.items()}
    infos = [get_model(project, n) for n in model_names]
    users = combine_wordlists(wordlists, user_words)
    ids = (
        [int(i) for i in example_ids]
        if example_ids is not None
        else [int(i) for i in project.example_ids(ExampleQuery(dataset_id, splits=tuple(splits) if splits else None))]
    )
    keys = {
        (info.name, m): settings_key(m, s, target=target, max_length=info.max_length)
        for info in infos
        for m, s in resolved.items()
    }
    payload = {
        "dataset_id": dataset_id,
        "model_ids": [i.id for i in infos],
        "models": [i.name for i in infos],
        "methods": {m: s.to_dict() for m, s in resolved.items()},
        "settings_keys": {f"{n}:{m}": k for (n, m), k in keys.items()},
        "vote": vote.to_dict(),
        "target": target,
        "wordlists": sorted(wordlists),
        "user_words": sorted(users),
        "examples": hashlib.sha256(json.dumps(ids).encode()).hexdigest()[:16],
    }
    context = vote_context(project, infos, vote, prior=prior, dataset_id=dataset_id)
    prior = context.prior
    if prior is not None and vote.rule != "majority":
        payload["prior"] = hashlib.sha256(json.dumps(sorted(prior.items())).encode()).hexdigest()[:16]
    vote_key = _vote_key(payload)
    existing = project.db.execute("SELECT id FROM vote_sets WHERE vote_key = ?", [vote_key]).fetchone()
    if existing:
        progress(1.0, "Vote already stored")
        set_id = int(existing[0])
        return VoteRun(set_id, vote_key, vote_summary(project, set_id, top=top), (), True, time.perf_counter() - started)

    # the same vote twice at once: the second is refused (CB772), not a UNIQUE vote_key failure
    with vote_lock(project, dataset_id, vote_key, dataset_name=project.dataset(dataset_id).name):
        existing = project.db.execute("SELECT id FROM vote_sets WHERE vote_key = ?", [vote_key]).fetchone()
        if existing:  # stored by a run that finished meanwhile
            set_id = int(existing[0])
            return VoteRun(set_id, vote_key, vote_summary(project, set_id, top=top), (), True,
                           time.perf_counter() - started)
        with recorded_run(project, "attribute", dataset_id, {"vote_key": vote_key, **payload}) as run:
            set_id, summary, runs = _attribute_and_vote(
                project, dataset_id, infos, resolved, keys, ids, vote, users, payload, vote_key, run.id,
                context=context, target=target, compute=compute, top=top, progress=progress, cancel=cancel,
            )
            run.result = {"vote_set_id": set_id, "examples": summary.n_examples}
    return VoteRun(set_id, vote_key, summary, tuple(runs), False, time.perf_counter() - started)


def _attribute_and_vote(
    project: Project,
    dataset_id: int,
    infos: list,
    resolved: dict[str, MethodSettings],
    keys: dict[tuple[str, str], str],
    ids: list[int],
    vote: VoteSettings,
    users: frozenset[str],
    payload: dict[str, Any],
    vote_key: str,
    run_id: int,
    *,
    context: VoteContext,
    target: str,
    compute: bool,
    top: int | None,
    progress: ProgressFn,
    cancel: CancelToken,
) -> tuple[int, VoteSummary, list[AttributionRun]]:
    runs: list[AttributionRun] = []
    if compute:
        runs = attribute_ensemble(
            project,
            [i.name for i in infos],
            dataset_id,
            methods=resolved,
            target=target,
            example_ids=ids,
            progress=scaled(progress, 0.0, 0.9),
            cancel=cancel,
        )
    cancel.raise_if_cancelled()
    progress(0.9, "Voting")
    stored = {
        (info.name, m): load_attributions(project, info.id, m, keys[(info.name, m)], ids) for info in infos for m in resolved
    }
    rows = project.examples(ids)
    labels = {int(r["id"]): r["label"] for r in rows}
    fields = infos[0].fields
    votes: list[tuple[int, str, ExampleVote]] = []
    for r in rows:
        ex = int(r["id"])
        for field in fields:
            scores: dict[str, dict[str, Any]] = {}
            words: list[str] = []
            for info in infos:
                for m in resolved:
                    got = stored[(info.name, m)].get((ex, field))
                    if got is None:
                        raise MissingAttributionsError(
                            f"No {m} attributions of example {ex} ({field}) for model {info.name!r}.",
                            "Run the attribution step first (or call with compute=True).",
                        )
                    if len(got.words) > len(words):
                        words = got.words
                    scores.setdefault(info.name, {})[m] = got.scores
            votes.append((ex, field, vote_example(words, scores, vote, user_words=users, context=context)))

    def write(conn: sqlite3.Connection) -> int:
        cursor = conn.execute(
            "INSERT INTO vote_sets (vote_key, dataset_id, run_id, params, created_at) VALUES (?, ?, ?, ?, ?)",
            (vote_key, dataset_id, run_id, json.dumps(payload), now()),
        )
        set_id = int(cursor.lastrowid)
        stamp = now()
        conn.executemany(
            "INSERT INTO word_votes (vote_set_id, example_id, field, principal, spurious, votes, member_words, user_words, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    set_id,
                    ex,
                    field,
                    json.dumps(list(v.principal), ensure_ascii=False),
                    json.dumps(list(v.spurious), ensure_ascii=False),
                    json.dumps(v.votes, ensure_ascii=False),
                    json.dumps({m: list(w) for m, w in v.member_words.items()}, ensure_ascii=False),
                    json.dumps(list(v.user_words), ensure_ascii=False),
                    stamp,
                )
                for ex, field, v in votes
            ],
        )
        return set_id

    set_id = project.writer.run(write)
    summary = summarize_votes(((v, labels.get(ex)) for ex, _, v in votes), top=top)
    progress(1.0, f"{len(summary.principal)} principal / {len(summary.spurious)} spurious words")
    return set_id, summary, runs


def _row_vote(row: Mapping[str, Any]) -> ExampleVote:
    return ExampleVote(
        principal=tuple(json.loads(row["principal"])),
        spurious=tuple(json.loads(row["spurious"])),
        votes=json.loads(row["votes"]),
        member_words={m: tuple(w) for m, w in json.loads(row["member_words"]).items()},
        user_words=tuple(json.loads(row["user_words"])),
    )


def load_votes(project: Project, vote_set_id: int, example_ids: Sequence[int] | None = None) -> dict[tuple[int, str], ExampleVote]:
    """Stored votes keyed by ``(example_id, field)``."""
    sql = "SELECT * FROM word_votes WHERE vote_set_id = ?"
    params: list[Any] = [vote_set_id]
    if example_ids is not None:
        sql += " AND example_id IN (SELECT value FROM json_each(?))"
        params.append(json.dumps([int(i) for i in example_ids]))
    return {(int(r["example_id"]), r["field"]): _row_vote(r) for r in project.db.query(sql, params)}


def vote_summary(project: Project, vote_set_id: int, *, top: int | None = 50) -> VoteSummary:
    """Dataset-level tables of a stored vote (counts per example field, split by gold label)."""
    rows = project.db.query(
        "SELECT v.*, e.label AS gold FROM word_votes v JOIN examples e ON e.id = v.example_id WHERE v.vote_set_id = ?",
        [vote_set_id],
    )
    return summarize_votes(((_row_vote(r), r["gold"]) for r in rows), top=top)


def vote_sets(project: Project, dataset_id: int | None = None) -> list[dict[str, Any]]:
    """Stored vote sets (newest first) with their parameters."""
    sql = "SELECT * FROM vote_sets"
    params: list[Any] = []
    if dataset_id is not None:
        sql += " WHERE dataset_id = ?"
        params.append(dataset_id)
    return [
        {**r, "params": json.loads(r["params"])} for r in project.db.query(sql + " ORDER BY id DESC", params)
    ]


def latest_votes(project: Project, dataset_ids: Sequence[int], example_ids: Sequence[int]) -> dict[tuple[int, str], ExampleVote]:
    """For each example field, its vote from the newest vote set on any of ``dataset_ids``.

    Vote sets cover the examples they were run on (a selection, or a whole dataset); this
    merges them so that every explained example has its most recent principal/spurious words.
    """
    sql = (
        "SELECT w.* FROM word_votes w JOIN vote_sets v ON v.id = w.vote_set_id "
        "WHERE v.dataset_id IN (SELECT value FROM json_each(?)) AND w.example_id IN (SELECT value FROM json_each(?)) "
        "ORDER BY w.vote_set_id DESC"
    )
    out: dict[tuple[int, str], ExampleVote] = {}
    for r in project.db.query(sql, [json.dumps([int(i) for i in dataset_ids]), json.dumps([int(i) for i in example_ids])]):
        out.setdefault((int(r["example_id"]), r["field"]), _row_vote(r))
    return out
