"""The annotation loop (variation theory): the analyst labels chosen examples and their counterfactuals.

An *annotation session* over a dataset holds out a stratified test split (the same split the
simulation uses, :func:`engine.active.simulation.simulate`); the rest is the pool. A selection
strategy (:data:`~engine.active.strategies.STRATEGIES`: ``random``, ``cluster``) picks the next
examples from what is not yet labelled; the analyst gives each a label (:func:`annotate`).
Counterfactuals of the labelled examples (:func:`make_counterfactuals`: pattern-keeping edits
whose patterns are synthesized from the analyst's labels so far, or plain LLM edits) are
candidates like any other, verified by the checks; the analyst accepts each with its target
label, fixes its label, or rejects it — a label given to a counterfactual is an annotation too.
:func:`retrain` fits the learner on every annotation (examples and counterfactuals) and stores
its macro-F1 on the held-out split, one point of the learning curve (:func:`learning_curve`).

Everything is stored in the project as it happens (tables ``annotations`` and
``annotation_scores``), so a session resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.active.errors import ActiveLearningError, PoolError
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.llm.config import LLMConfig
    from engine.store.project import Project

__all__ = ["Annotation", "AnnotationSetup", "CurvePoint", "SessionState", "annotate", "annotation_setup", "annotations",
           "learning_curve", "load_session", "make_counterfactuals", "next_batch", "remove_annotation", "retrain"]

#: Counterfactual makers the loop offers.
COUNTERFACTUAL_METHODS = ("vt", "llm")


@dataclass(frozen=True)
class AnnotationSetup:
    """The held-out split of a session: example ids of the pool and of the test split."""

    dataset_id: int
    pool_ids: tuple[int, ...]
    test_ids: tuple[int, ...]
    key: str


@dataclass(frozen=True)
class Annotation:
    """One label given by the analyst: to an example (``candidate_id`` None) or to a counterfactual of it."""

    id: int
    example_id: int
    candidate_id: int | None
    label: str
    strategy: str | None
    created_at: str


@dataclass(frozen=True)
class CurvePoint:
    """The learner's held-out score after a retraining on ``annotations`` examples (+ counterfactuals)."""

    annotations: int
    counterfactuals: int
    macro_f1: float
    accuracy: float
    test_size: int
    created_at: str


def annotation_setup(project: Project, dataset: int | str, *, test_split: str | None = None,
                     test_fraction: float = 0.3, split_seed: int = 0) -> AnnotationSetup:
    """The pool and held-out split of a dataset (stratified sample, or a named split).

    Raises
    ------
    PoolError
        No such split, or a pool or test split with fewer than two labels.
    """
    from engine.active.simulation import _split

    info = project.dataset(dataset)
    rows = [(int(r["id"]), str(r["label"]), r.get("split")) for r in project.iter_examples(info.id)]
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    labels = [r[1] for r in rows]
    pool, test = _split(ids, labels, [r[2] for r in rows], test_split, test_fraction, split_seed, info.name)
    if len({labels[i] for i in test}) < 2 or len(pool) < 2:
        raise PoolError(f"Dataset {info.name!r} is too small to hold out a test split with two labels.",
                        "Import more examples, or name a test split.")
    key = hashlib.sha256(ids[test].tobytes()).hexdigest()[:16]
    return AnnotationSetup(info.id, tuple(int(ids[i]) for i in pool), tuple(int(ids[i]) for i in test), key)


def annotations(project: Project, dataset_id: int) -> list[Annotation]:
    """The session's annotations in the order they were given."""
    return [Annotation(int(r["id"]), int(r["example_id"]), r["candidate_id"], r["label"], r["strategy"],
                       r["created_at"])
            for r in project.db.query("SELECT * FROM annotations WHERE dataset_id = ? ORDER BY id", [dataset_id])]


def annotate(project: Project, dataset_id: int, example_id: int, label: str, *, candidate_id: int | None = None,
             strategy: str | None = None) -> Annotation:
    """Store the analyst's label of an example, or of a counterfactual candidate of it (replacing an earlier one).

    Raises
    ------
    ActiveLearningError
        A label the dataset does not have, or a candidate of another example.
    """
    info = project.dataset(dataset_id)
    if label not in info.labels:
        raise ActiveLearningError(f"{label!r} is not a label of {info.name!r}.",
                                  f"Use one of: {', '.join(info.labels)}.")
    if candidate_id is not None:
        row = list(project.db.query("SELECT example_id FROM candidates WHERE id = ?", [candidate_id]))
        if not row or int(row[0]["example_id"]) != int(example_id):
            raise ActiveLearningError(f"Candidate {candidate_id} is not a counterfactual of example {example_id}.",
                                      "Label the candidates shown for this example.")

    def write(conn: sqlite3.Connection) -> int:
        conn.execute("DELETE FROM annotations WHERE dataset_id = ? AND example_id = ? AND IFNULL(candidate_id, 0) = ?",
                     (dataset_id, example_id, candidate_id or 0))
        cur = conn.execute("INSERT INTO annotations (dataset_id, example_id, candidate_id, label, strategy, created_at)"
                           " VALUES (?, ?, ?, ?, ?, ?)", (dataset_id, example_id, candidate_id, label, strategy, now()))
        return int(cur.lastrowid)

    new_id = project.writer.run(write)
    return next(a for a in annotations(project, dataset_id) if a.id == new_id)


def remove_annotation(project: Project, dataset_id: int, example_id: int, candidate_id: int | None = None) -> bool:
    """Forget a label (e.g. a rejected counterfactual); ``True`` when one was stored."""

    def write(conn: sqlite3.Connection) -> int:
        return conn.execute("DELETE FROM annotations WHERE dataset_id = ? AND example_id = ? "
                            "AND IFNULL(candidate_id, 0) = ?", (dataset_id, example_id, candidate_id or 0)).rowcount

    return bool(project.writer.run(write))


def next_batch(project: Project, setup: AnnotationSetup, *, strategy: str = "random", n: int = 5, seed: int = 0,
               progress: ProgressFn = no_progress, cancel: CancelToken | None = None) -> list[int]:
    """The next ``n`` pool examples the strategy would have the analyst label (labelled ones skipped).

    The strategy orders the whole pool (as in the simulation, so a session follows the order the
    simulation measured); the first ``n`` not yet labelled are returned.
    """
    from engine.active.learners import EmbedLogReg
    from engine.active.simulation import EMBEDDING_CACHE
    from engine.active.strategies import Pool, make_strategy

    token = ensure_token(cancel)
    if strategy.startswith("counterfactual"):
        strategy = strategy.replace("counterfactual", "random").replace("random-cluster", "cluster")
    chooser = make_strategy(strategy)
    info = project.dataset(setup.dataset_id)
    rows = {int(r["id"]): r for r in project.examples(list(setup.pool_ids))}
    ids = [i for i in setup.pool_ids if i in rows]
    texts = tuple(tuple(rows[i].get(f) or "" for f in info.text_fields) for i in ids)
    pool = Pool(tuple(ids), texts, tuple(str(rows[i]["label"]) for i in ids))
    if chooser.needs_vectors:
        progress(0.0, f"embedding {len(ids):,} pool examples")
        pool.vectors = EmbedLogReg(cache=project.files_dir / EMBEDDING_CACHE).features(pool.texts)
    token.raise_if_cancelled()
    done = {a.example_id for a in annotations(project, setup.dataset_id) if a.candidate_id is None}
    order = chooser.order(pool, len(pool), seed)
    progress(1.0, f"{strategy}: next {n} examples")
    return [pool.ids[k] for k in order if pool.ids[k] not in done][:n]


def make_counterfactuals(project: Project, dataset_id: int, example_ids: Sequence[int], llm_config: LLMConfig, *,
                         method: str = "vt", judge: Sequence[str] | None = None, progress: ProgressFn = no_progress,
                         cancel: CancelToken | None = None) -> dict[str, Any]:
    """Counterfactuals of labelled examples, made, stored and checked as candidates.

    ``judge``: the members that judge them (default: the dataset's default judges, as for every generation
    method — :func:`~engine.counterbias.verify.judge_members`; ``()``: none, and the label checks are not run).

    ``vt``: patterns are synthesized from the analyst's labels so far (stored with source
    ``annotations``); each example with a pattern of its label that matches it gets pattern-keeping
    edits (:func:`engine.counterbias.variation.generate_variations`), the others a plain LLM edit.
    ``llm``: a plain minimal LLM edit (:func:`engine.counterbias.guided.generate_guided`).

    Returns
    -------
    dict
        ``{"vt": [candidate ids], "llm": [candidate ids], "failed": n, "patterns": n}``.
    """
    from engine.counterbias.guided import GuidedSettings, generate_guided

    if method not in COUNTERFACTUAL_METHODS:
        raise ActiveLearningError(f"Unknown counterfactual method {method!r}.",
                                  f"Use one of: {', '.join(COUNTERFACTUAL_METHODS)}.")
    token = ensure_token(cancel)
    if judge is None:
        from engine.counterbias.verify import judge_members

        judge = judge_members(project, dataset_id)
    ids = list(dict.fromkeys(int(i) for i in example_ids))
    out: dict[str, Any] = {"vt": [], "llm": [], "failed": 0, "patterns": 0}
    rest = ids
    if method == "vt":
        from engine.counterbias.variation import VariationSettings, generate_variations, patterns_for
        from engine.patterns.match import Matcher

        out["patterns"] = _patterns_from_annotations(project, dataset_id, progress=scaled(progress, 0.0, 0.2),
                                                     cancel=token)
        settings = VariationSettings()
        examples = {int(r["id"]): dict(r) for r in project.examples(ids)}
        with_pattern = set(patterns_for(project, dataset_id, examples, Matcher(settings.soft)))
        vt_ids = [i for i in ids if i in with_pattern]
        rest = [i for i in ids if i not in with_pattern]
        if vt_ids:
            made = generate_variations(project, dataset_id, vt_ids, llm_config, settings=settings, judge=judge,
                                       progress=scaled(progress, 0.2, 0.6 if rest else 1.0), cancel=token)
            out["vt"], out["failed"] = list(made.created), len(made.failed)
    if rest:
        made = generate_guided(project, dataset_id, rest, llm_config, settings=GuidedSettings(method="llm"),
                               judge=judge, progress=scaled(progress, 0.6 if method == "vt" else 0.0, 1.0),
                               cancel=token)
        out["llm"], out["failed"] = list(made.created), out["failed"] + len(made.failed)
    progress(1.0, f"{len(out['vt']) + len(out['llm'])} counterfactuals, {out['failed']} failed")
    return out


def _patterns_from_annotations(project: Project, dataset_id: int, *, progress: ProgressFn,
                               cancel: CancelToken) -> int:
    """Synthesize patterns from the analyst's example labels; store them (source ``annotations``)."""
    from engine.patterns.store import store_patterns
    from engine.patterns.synthesis import synthesize

    labelled = [a for a in annotations(project, dataset_id) if a.candidate_id is None]
    labels = [a.label for a in labelled]
    if len(set(labels)) < 2:
        return 0
    texts = {int(r["id"]): str(r.get("text") or r.get("hypothesis") or "")  # a pair's patterns: its hypothesis's
             for r in project.examples([a.example_id for a in labelled])}
    found = []
    distinct = sorted(set(labels))
    for k, label in enumerate(distinct):
        found += synthesize([texts[a.example_id] for a in labelled], labels, label, min_support=1, top=3,
                            soft="forms", progress=scaled(progress, k / len(distinct), (k + 1) / len(distinct)),
                            cancel=cancel)
    store_patterns(project, dataset_id, found, source="annotations", params={"annotations": len(labelled)},
                   replace=True)
    return len(found)


def _training_rows(project: Project, dataset_id: int, fields: Sequence[str]) -> tuple[list, list, int, int]:
    given = annotations(project, dataset_id)
    examples = {int(r["id"]): r for r in project.examples(sorted({a.example_id for a in given}))}
    cand_ids = [a.candidate_id for a in given if a.candidate_id is not None]
    cands = {int(r["id"]): r for r in project.db.query(
        f"SELECT id, text, premise, hypothesis, status FROM candidates WHERE id IN ({','.join('?' * len(cand_ids))})",
        cand_ids)} if cand_ids else {}
    texts, labels, n_examples, n_cf = [], [], 0, 0
    for a in given:
        if a.candidate_id is None:
            texts.append(tuple(examples[a.example_id].get(f) or "" for f in fields))
            n_examples += 1
        else:
            c = cands.get(int(a.candidate_id))
            if c is None or c["status"] == "failed":
                continue
            texts.append(tuple(c.get(f) or examples[a.example_id].get(f) or "" for f in fields))
            n_cf += 1
        labels.append(a.label)
    return texts, labels, n_examples, n_cf


def retrain(project: Project, setup: AnnotationSetup, *, learner: str = "embed-lr", seed: int = 0,
            progress: ProgressFn = no_progress, cancel: CancelToken | None = None) -> CurvePoint:
    """Fit the learner on every annotation so far; store and return its held-out score.

    With fewer than two labels annotated the learner predicts the one label it saw.
    """
    from engine.active.learners import make_learner
    from engine.active.simulation import EMBEDDING_CACHE
    from engine.evaluation.experiment import score

    token = ensure_token(cancel)
    info = project.dataset(setup.dataset_id)
    fields = info.text_fields
    model_maker = make_learner(learner, **({"cache": project.files_dir / EMBEDDING_CACHE}
                                           if learner == "embed-lr" else {}))
    texts, labels, n_examples, n_cf = _training_rows(project, setup.dataset_id, fields)
    if not texts:
        raise ActiveLearningError("Nothing is labelled yet.", "Label a few examples first.")
    test = project.examples(list(setup.test_ids))
    test_texts = [tuple(r.get(f) or "" for f in fields) for r in test]
    progress(0.0, f"{model_maker.label}: features of {len(texts) + len(test_texts):,} texts")
    model_maker.prepare(texts + test_texts, progress=scaled(progress, 0.0, 0.8), cancel=token)
    token.raise_if_cancelled()
    model = model_maker.fit(texts, labels, seed)
    accuracy, f1 = score(model.predict(test_texts), [str(r["label"]) for r in test])
    key = f"{setup.key}-{hashlib.sha256(json.dumps([learner, seed]).encode()).hexdigest()[:8]}"
    point = CurvePoint(n_examples, n_cf, float(f1), float(accuracy), len(test_texts), now())

    def write(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO annotation_scores (dataset_id, setup_key, annotations, counterfactuals, macro_f1, "
                     "accuracy, test_size, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (setup.dataset_id, key, point.annotations, point.counterfactuals, point.macro_f1,
                      point.accuracy, point.test_size, point.created_at))

    project.writer.run(write)
    progress(1.0, f"macro-F1 {f1:.3f} on {len(test_texts)} held-out examples after {n_examples} labels"
                  + (f" + {n_cf} counterfactuals" if n_cf else ""))
    return point


def learning_curve(project: Project, setup: AnnotationSetup, *, learner: str = "embed-lr",
                   seed: int = 0) -> list[CurvePoint]:
    """The stored scores of this split and learner, oldest first."""
    key = f"{setup.key}-{hashlib.sha256(json.dumps([learner, seed]).encode()).hexdigest()[:8]}"
    return [CurvePoint(int(r["annotations"]), int(r["counterfactuals"]), float(r["macro_f1"]), float(r["accuracy"]),
                       int(r["test_size"]), r["created_at"])
            for r in project.db.query("SELECT * FROM annotation_scores WHERE dataset_id = ? AND setup_key = ? "
                                      "ORDER BY id", [setup.dataset_id, key])]


@dataclass(frozen=True)
class SessionState:
    """What an annotation session holds: its split, the labels given and the learning curve."""

    setup: AnnotationSetup
    annotations: tuple[Annotation, ...]
    curve: tuple[CurvePoint, ...]


def load_session(project: Project, dataset_id: int, *, learner: str = "embed-lr", progress: ProgressFn = no_progress,
                 cancel: CancelToken | None = None) -> SessionState:
    """The stored state of a dataset's annotation session (the split is computed; cheap to call again)."""
    ensure_token(cancel).raise_if_cancelled()
    progress(0.0, "reading the annotation session")
    setup = annotation_setup(project, dataset_id)
    state = SessionState(setup, tuple(annotations(project, dataset_id)),
                         tuple(learning_curve(project, setup, learner=learner)))
    progress(1.0, f"{len(state.annotations)} labels, {len(state.curve)} retrainings")
    return state
