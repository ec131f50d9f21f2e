"""Verification of counterbias candidates: the ensemble as label judge, spurious words kept.

Per candidate (stored in ``candidates.scores``):

``judge``
    Each member's predicted label and probability of the target; the ensemble's majority
    label (ties: the highest mean probability); ``flipped`` (the majority predicts the target:
    counts towards the label-flip rate, LFR) and ``left_original`` (the majority no longer
    predicts the original label: soft LFR, SLFR).
``spurious_kept``
    Whether every spurious word of the original (``meta.keep_words``, found by form or lemma)
    still occurs in the candidate, and which are missing. Gendered words swapped on purpose
    are not required, nor words an edit released as opinion words of a sentence read as the
    original label (listed in ``released_spurious``).
``verdicts``
    ``{check name: {"status": "pass"|"fail"|"skip", "reason": ...}}`` of every registered
    check (:mod:`engine.verification.checks`: the flips, spurious words, the heuristics for
    LLM failure modes, the symbolic pattern, the LLM judge when it was run).
``passes``
    The candidate passes the filter (:class:`CandidateFilter`: no required check failed); the
    review shows failing candidates greyed out, and they are never accepted automatically.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.counterbias.manipulate import matched_words
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress

if TYPE_CHECKING:
    from engine.store.project import Project

__all__ = ["CandidateFilter", "released_words", "dataset_rating_sides", "dataset_vocabulary", "ensemble_labels", "flip_rates",
           "judge_candidates", "judge_members", "judged_by"]


#: Checks every accept rule requires by default besides the flip, spurious-word and agreement checks.
DEFAULT_CHECKS = ("prompt-echo", "prompt-leak", "refusal", "bare-label", "label-named", "commentary", "formatting",
                  "truncation", "copy", "coined-word", "repetition", "rating", "pattern", "llm-judge", "residual",
                  "untouched")


#: Default share of a candidate's sentences that may still read as the original label (the ``residual`` check).
#: The LLM sentence reader (bundled Qwen2.5-Coder-1.5B, each sentence alone) finds such a sentence in 78 % of 60 CAD
#: human revisions (median share 0.20; originals 0.70): at 0.2 the check passes 58 % of the human revisions and 3 %
#: of the originals, where "no sentence at all" passed 22 % of the human revisions and none of 14 fresh candidates.
RESIDUAL_SHARE = 0.2


@dataclass(frozen=True)
class CandidateFilter:
    """Which judged candidates pass.

    Parameters
    ----------
    require_flip
        ``"target"`` (the ensemble predicts the target: LFR, default), ``"away"`` (it no longer
        predicts the original label: SLFR) or ``"none"``.
    require_spurious
        Every spurious word must survive (default True).
    min_target_prob
        Mean member probability of the target at least this (default 0).
    min_member_prob
        Every member's probability of the target at least this (default 0.85): a candidate that
        one member reads as flipped and another as barely flipped is held back. Chosen on the
        32 candidates of ``benchmarks/coba_quality.py`` read one by one: with the flip alone, 6 of
        the 20 accepted read as flipped and fluent; with every member at 0.85 or more, 6 of 7
        (an in-sample choice: check it on your own data).
    agreement
        Whose probability ``min_member_prob`` applies to: ``"each"`` (every member) or ``"best"``
        (the member with the best dev accuracy; the other members still vote in the flip). ``"best"``
        accepted more good candidates among CAD's shortest reviews but passed half-flipped long
        ones that a weaker member held back, so ``"each"`` is the default.
    max_residual_share
        The ``residual`` check fails a candidate when more than this share of its sentences still
        read as the original label (LLM sentence reader, each sentence alone); default
        :data:`RESIDUAL_SHARE`. 0: a single such sentence fails it.
    max_untouched
        The ``untouched`` check fails an edit-mode candidate with more than this many sentences left as written
        (neither edited nor removed); ``None`` (default): off. A stricter rule for analysts who want fewer, better
        candidates (its measurements: ``benchmarks/RESULTS.md``, *Verification and the accept rule*).
    """

    require_flip: str = "target"
    require_spurious: bool = True
    min_target_prob: float = 0.0
    min_member_prob: float = 0.85
    agreement: str = "each"
    max_residual_share: float = RESIDUAL_SHARE
    max_untouched: int | None = None
    #: The other checks whose failure holds a candidate back (``None``: :data:`DEFAULT_CHECKS`).
    checks: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        from engine.verification.checks import AGREEMENTS, AcceptRuleError, UnknownAgreementError

        if self.agreement not in AGREEMENTS:
            raise UnknownAgreementError(f"No member agreement rule {self.agreement!r}.",
                                        f"Use one of: {', '.join(AGREEMENTS)}.")
        if not 0.0 <= self.max_residual_share <= 1.0:
            raise AcceptRuleError(f"max_residual_share {self.max_residual_share} is not a share.",
                                  "Use a value from 0 (no sentence left) to 1 (the check never fails).")
        if self.max_untouched is not None and self.max_untouched < 0:
            raise AcceptRuleError(f"max_untouched {self.max_untouched} is negative.",
                                  "Use a count of sentences, e.g. 0 (every sentence edited or removed), or leave it off.")

    def required(self) -> list[str]:
        """Names of the checks a passing candidate must not fail."""
        names = list(DEFAULT_CHECKS if self.checks is None else self.checks)
        flip = {"target": "label-flip", "away": "soft-flip"}.get(self.require_flip)
        extra = [flip] if flip else []
        extra += ["spurious-kept"] if self.require_spurious else []
        extra += ["member-agreement"] if self.min_member_prob > 0 else []
        return list(dict.fromkeys(extra + names))

    def passes(self, scores: dict[str, Any]) -> bool:
        judge = scores.get("judge") or {}
        verdicts = scores.get("verdicts")
        if isinstance(verdicts, dict):
            if any((verdicts.get(name) or {}).get("status") == "fail" for name in self.required()):
                return False
            return float(judge.get("target_prob", 1.0)) >= self.min_target_prob
        if self.require_flip == "target" and not judge.get("flipped"):
            return False
        if self.require_flip == "away" and not judge.get("left_original"):
            return False
        if self.require_spurious and not scores.get("spurious_kept", True):
            return False
        from engine.verification.checks import agreement_shortfall

        if agreement_shortfall(judge.get("members") or {}, self.min_member_prob, self.agreement)[0]:
            return False
        return float(judge.get("target_prob", 1.0)) >= self.min_target_prob


def _texts(rows: Sequence[dict[str, Any]], fields: Sequence[str]) -> list[Any]:
    if len(fields) == 1:
        return [rows_[fields[0]] or "" for rows_ in rows]
    return [tuple(r[f] or "" for f in fields) for r in rows]


def released_words(meta: dict[str, Any]) -> set[str]:
    """The spurious words (lower case) a candidate's edits released on purpose: opinion words of a sentence read as
    the original label (edit mode, ``edit_opinion``)."""
    return {str(w).lower() for f in meta.get("fields") or [] for e in f.get("edits") or []
            for w in e.get("released") or []}


def judged_by(candidate: Mapping[str, Any]) -> list[str]:
    """The members whose readings a candidate's stored scores hold (``scores.judge.members``), in their order.

    >>> judged_by({"scores": {"judge": {"members": {"a": {}, "b": {}}}}})
    ['a', 'b']
    >>> judged_by({"scores": {}}), judged_by({})
    ([], [])
    """
    return list(((candidate.get("scores") or {}).get("judge") or {}).get("members") or {})


def judge_members(project: Project, dataset_id: int | None, candidates: Iterable[Mapping[str, Any]] = (), *,
                  voted: Sequence[str] | None = None) -> list[str]:
    """The members that judge a dataset's candidates (again), by name, without repeats.

    The members that judged the first of ``candidates`` judged by any (:func:`judged_by`), then the
    dataset's default judges (:func:`~engine.attribution.explainers.default_judges`, given ``voted``):
    a member stored after the candidates were made — one still training then — judges them too.
    Only members still stored are named.

    Parameters
    ----------
    project
        The open project.
    dataset_id
        The dataset the candidates belong to (``None``: no default judges).
    candidates
        Candidate rows (with decoded ``scores``), e.g. the ones the review lists.
    voted
        The members of the vote the candidates come from, when the caller knows it.
    """
    from engine.attribution import explainers
    from engine.models.store import list_models

    judged = next((members for members in map(judged_by, candidates) if members), [])
    defaults = explainers.default_judges(project, int(dataset_id), voted) if dataset_id is not None else []
    stored = {m.name for m in list_models(project)}
    return [m for m in dict.fromkeys([*judged, *defaults]) if m in stored]


def judge_candidates(
    project: Project,
    candidate_ids: Sequence[int],
    members: Sequence[str],
    *,
    criteria: CandidateFilter | None = None,
    batch_size: int = 32,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> dict[int, dict[str, Any]]:
    """Judge candidates with the ensemble and store the scores (see the module doc).

    Returns
    -------
    dict
        ``{candidate id: scores}``.
    """
    from engine.models.predict import predict
    from engine.models.store import get_model

    token = ensure_token(cancel)
    rule = criteria or CandidateFilter()
    ids = [int(i) for i in candidate_ids]
    rows = [dict(r) for r in project.db.query(
        "SELECT * FROM candidates WHERE id IN (SELECT value FROM json_each(?)) AND status != 'failed' ORDER BY id",
        [json.dumps(ids)])]
    if not rows:
        return {}
    votes: dict[str, list[str]] = {}
    accuracy: dict[str, float | None] = {}
    target_probs: dict[str, np.ndarray] = {}
    labels: list[str] = []
    for k, name in enumerate(members):
        token.raise_if_cancelled()
        info = get_model(project, name)
        dev = (info.metrics or {}).get("dev_accuracy")
        accuracy[name] = round(float(dev), 4) if isinstance(dev, (int, float)) else None
        probs = predict(project, name, _texts(rows, info.fields), batch_size=batch_size, cancel=token)
        labels = list(info.labels)
        votes[name] = [labels[int(i)] for i in probs.argmax(axis=1)]
        target_probs[name] = np.array([probs[j, labels.index(r["target_label"])] if r["target_label"] in labels
                                       else 0.0 for j, r in enumerate(rows)])
        progress((k + 1) / (len(members) + 1), f"judge: {name}")
    originals = _originals(project, rows)
    labels = labels or _dataset_labels(project, rows)
    sides = dataset_rating_sides(project, rows)
    vocabulary = dataset_vocabulary(project, rows)
    results: dict[int, dict[str, Any]] = {}
    for j, row in enumerate(rows):
        meta = json.loads(row["meta"] or "{}")
        old = json.loads(row["scores"] or "{}")
        edited = list((meta.get("generated") or {}).keys()) or ["text", "premise", "hypothesis"]
        text = " ".join(row.get(f) or "" for f in edited)
        swapped = {str(a).lower() for f in meta.get("fields") or [] for a, _ in f.get("gender_swaps") or []}
        keep = [w for w in meta.get("keep_words") or [] if w.lower() not in swapped]  # swapped on purpose
        gone = [w for w in keep if w not in matched_words(text, keep)]
        released = released_words(meta)
        missing = [w for w in gone if w.lower() not in released]
        sha1 = hashlib.sha1(text.encode("utf-8")).hexdigest()
        scores: dict[str, Any] = {
            "spurious_kept": not missing,
            "missing_spurious": missing,
            "released_spurious": [w for w in gone if w.lower() in released],
            # which text these scores belong to (an analyst's edit is judged again)
            "judged_text_sha1": sha1,
        }
        if members:
            predicted = Counter(votes[m][j] for m in members)
            mean_target = float(np.mean([target_probs[m][j] for m in members]))
            top = max(predicted.values())
            tied = sorted(label for label, n in predicted.items() if n == top)
            majority = tied[0] if len(tied) == 1 else (row["target_label"] if row["target_label"] in tied else tied[0])
            scores["judge"] = {
                "members": {m: {"label": votes[m][j], "target_prob": round(float(target_probs[m][j]), 4),
                                **({"dev_accuracy": accuracy[m]} if accuracy.get(m) is not None else {})}
                            for m in members},
                "predicted": majority,
                "flipped": majority == row["target_label"],
                "left_original": majority != meta.get("original_label"),
                "target_prob": round(mean_target, 4),
            }
        if old.get("judged_text_sha1") == sha1:  # the same text: the LLM's answers hold
            scores.update({k: old[k] for k in ("llm_judge", "residual") if old.get(k)})
        scores["verdicts"] = verdicts_for(row, meta, scores, originals.get(int(row["example_id"]), {}), labels, rule,
                                          sides, vocabulary)
        scores["passes"] = rule.passes(scores)
        results[int(row["id"])] = scores
    project.writer.run(_store_scores, results)
    progress(1.0, f"judge: {len(results)} candidates")
    return results


def verdicts_for(row: dict[str, Any], meta: dict[str, Any], scores: dict[str, Any], original: dict[str, Any],
                 labels: Sequence[str], rule: CandidateFilter,
                 rating_sides: dict[str, str] | None = None,
                 vocabulary: frozenset[str] = frozenset()) -> dict[str, dict[str, str]]:
    """Every registered check's verdict on one candidate row (``{name: {"status", "reason"}}``).

    ``rating_sides``: which label goes with which end of a rating scale in the dataset
    (:func:`dataset_rating_sides`); ``None`` skips the rating check. ``vocabulary``: the dataset's words
    (:func:`dataset_vocabulary`), which the ``coined-word`` check accepts besides the English word list.
    """
    from engine.verification.checks import Subject, run_checks

    edited = list((meta.get("generated") or {}).keys()) or [f for f in ("text", "premise", "hypothesis")
                                                            if row.get(f) is not None]
    subject = Subject(
        original={f: original.get(f) or "" for f in edited}, new={f: row.get(f) or "" for f in edited},
        labels=list(labels) or [row["target_label"], str(meta.get("original_label") or "")],
        target=row["target_label"], original_label=str(meta.get("original_label") or ""), scores=scores, meta=meta,
        mode=str(meta.get("mode") or "edit"), rating_sides=rating_sides or {}, vocabulary=vocabulary)
    return {name: v.to_dict() for name, v in run_checks(subject, rule).items()}


def dataset_rating_sides(project: Project, rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The rating sides (:func:`~engine.attribution.word_prior.label_rating_sides`) of the dataset the
    candidates' originals first belong to; empty for pairs (NLI) or a dataset without ``text``."""
    from engine.attribution.word_prior import label_rating_sides

    found = _text_dataset(project, rows)
    return {} if found is None else label_rating_sides(project, found, field="text")


def dataset_vocabulary(project: Project, rows: Sequence[dict[str, Any]]) -> frozenset[str]:
    """The words (:func:`~engine.attribution.word_prior.label_vocabulary`) of the dataset the candidates' originals
    first belong to, which the ``coined-word`` check accepts; its last text field for pairs."""
    from engine.attribution.word_prior import label_vocabulary

    found = _first_dataset(project, rows)
    return frozenset() if found is None else label_vocabulary(project, found)


def _first_dataset(project: Project, rows: Sequence[dict[str, Any]]) -> int | None:
    if not rows:
        return None
    found = list(project.db.query(
        "SELECT d.id FROM datasets d JOIN dataset_members m ON m.dataset_id = d.id WHERE m.example_id = ? "
        "ORDER BY d.id LIMIT 1", [int(rows[0]["example_id"])]))
    return int(found[0]["id"]) if found else None


def _text_dataset(project: Project, rows: Sequence[dict[str, Any]]) -> int | None:
    found = _first_dataset(project, rows)
    return found if found is not None and "text" in project.dataset(found).text_fields else None


def _originals(project: Project, rows: Sequence[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    ids = sorted({int(r["example_id"]) for r in rows})
    return {int(r["id"]): dict(r) for r in project.db.query(
        "SELECT id, text, premise, hypothesis FROM examples WHERE id IN (SELECT value FROM json_each(?))",
        [json.dumps(ids)])}


def _dataset_labels(project: Project, rows: Sequence[dict[str, Any]]) -> list[str]:
    found = list(project.db.query(
        "SELECT d.labels FROM datasets d JOIN dataset_members m ON m.dataset_id = d.id WHERE m.example_id = ? "
        "ORDER BY d.id LIMIT 1", [int(rows[0]["example_id"])]))
    return list(json.loads(found[0]["labels"] or "[]")) if found else []


def _store_scores(conn: sqlite3.Connection, results: dict[int, dict[str, Any]]) -> None:
    conn.executemany("UPDATE candidates SET scores = ? WHERE id = ?",
                     [(json.dumps(s), cid) for cid, s in results.items()])


def flip_rates(scores: Sequence[dict[str, Any]]) -> dict[str, float]:
    """LFR and SLFR over judged candidates, plus the share keeping every spurious word."""
    judged = [s for s in scores if s.get("judge")]
    n = max(len(judged), 1)
    return {
        "n": len(judged),
        "lfr": sum(bool(s["judge"]["flipped"]) for s in judged) / n,
        "slfr": sum(bool(s["judge"]["left_original"]) for s in judged) / n,
        "spurious_kept": sum(bool(s.get("spurious_kept")) for s in judged) / n,
    }


def ensemble_labels(project: Project, members: Sequence[str], rows: Sequence[dict[str, Any]], *,
                    batch_size: int = 32, cancel: CancelToken | None = None) -> list[str]:
    """The ensemble's majority label of each row (``text`` or ``premise``/``hypothesis``).

    Ties go to the label with the highest mean probability among the tied ones. Used by
    generation to find half-flipped candidates before they are stored.
    """
    from engine.models.predict import predict
    from engine.models.store import get_model

    if not rows or not members:
        return []
    counts = [Counter() for _ in rows]
    mass = [Counter() for _ in rows]
    for name in members:
        info = get_model(project, name)
        probs = predict(project, name, _texts(rows, info.fields), batch_size=batch_size, cancel=cancel)
        labels = list(info.labels)
        for j in range(len(rows)):
            counts[j][labels[int(probs[j].argmax())]] += 1
            for k, label in enumerate(labels):
                mass[j][label] += float(probs[j, k])
    out = []
    for count, total in zip(counts, mass, strict=True):
        top = max(count.values())
        out.append(max((label for label, n in count.items() if n == top), key=lambda label: total[label]))
    return out
