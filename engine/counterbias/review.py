"""The analyst's decisions on candidates: accept, reject, edit, and undo.

Every decision is a row of ``decisions`` (an audit trail); the candidate's ``status`` and text
hold the current state. An edit keeps the generated text in ``meta.generated`` and stores the
analyst's text in the candidate (and marks it accepted). :func:`set_decision` returns the
previous state so that an undo (the GUI's ``QUndoStack``) can restore it exactly.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import CounterbiasError
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.llm.base import Usage
    from engine.llm.triple_format import Triple
    from engine.store.project import Project

__all__ = ["CandidateState", "ExampleTriples", "ORIGINAL_FIELDS", "ReviewError", "STATUSES", "SentenceTriples",
           "candidate_rows", "candidate_rows_with_originals", "edit_distance", "example_triples", "human_counterfactuals",
           "load_candidate", "passing_ids", "set_decision", "token_usage", "with_originals"]

#: Review states of a candidate (``failed`` ones cannot be decided on).
STATUSES = ("proposed", "accepted", "rejected")
_DECISION = {"accepted": "accept", "rejected": "reject", "proposed": "undo"}

#: The text fields of an example that a candidate's ``original`` holds (``None`` where the example has none).
ORIGINAL_FIELDS = ("text", "premise", "hypothesis")


class ReviewError(CounterbiasError):
    """A decision that cannot be recorded."""

    code = "CB810"


@dataclass(frozen=True)
class CandidateState:
    """What a decision changes: the status and the edited field's text."""

    status: str
    field: str
    text: str | None


def load_candidate(project: Project, candidate_id: int) -> dict[str, Any]:
    """One candidate row with ``scores`` and ``meta`` decoded.

    Raises
    ------
    ReviewError
        For an unknown id.
    """
    row = project.db.execute("SELECT * FROM candidates WHERE id = ?", [int(candidate_id)]).fetchone()
    if row is None:
        raise ReviewError(f"No candidate {candidate_id}.", "It may have been deleted; refresh the list.")
    cols = [d[0] for d in project.db.execute("SELECT * FROM candidates LIMIT 0").description]
    out = dict(zip(cols, row, strict=True))
    out["scores"] = json.loads(out["scores"] or "{}")
    out["meta"] = json.loads(out["meta"] or "{}")
    return out


def candidate_rows(project: Project, *, dataset_id: int | None = None, example_ids: Sequence[int] | None = None,
                   statuses: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Candidates (decoded), by example then id, optionally of a dataset's examples / some statuses."""
    where, params = [], []
    if dataset_id is not None:
        where.append("example_id IN (SELECT example_id FROM dataset_members WHERE dataset_id = ?)")
        params.append(int(dataset_id))
    if example_ids is not None:
        where.append("example_id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps([int(i) for i in example_ids]))
    if statuses is not None:
        where.append("status IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(statuses)))
    sql = "SELECT * FROM candidates" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY example_id, id"
    rows = []
    for r in project.db.query(sql, params):
        r = dict(r)
        r["scores"] = json.loads(r["scores"] or "{}")
        r["meta"] = json.loads(r["meta"] or "{}")
        rows.append(r)
    return rows


def edited_field(candidate: dict[str, Any]) -> str:
    """The text field a candidate changed (``text``, or ``hypothesis``/``premise``)."""
    generated = candidate["meta"].get("generated") or {}
    return next(iter(generated), "text")


def edit_distance(candidate: dict[str, Any], original: dict[str, Any]) -> float | None:
    """Word-level edit distance of a candidate's edited field (its current text) to the original's.

    ``None`` for a failed candidate (no text). The same measure is stored at generation in
    ``meta.edit_distance``; this one follows the analyst's edits.
    """
    from engine.text.distance import word_edit_distance

    field = edited_field(candidate)
    text = candidate.get(field)
    if candidate.get("status") == "failed" or text is None:
        return None
    return round(word_edit_distance(original.get(field) or "", text), 4)


def with_originals(project: Project, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Candidate rows joined with their originals, for the review's diffs, in the same order.

    Each row gains ``original`` (its example's :data:`ORIGINAL_FIELDS`), ``original_label`` and
    ``edit_distance`` (:func:`edit_distance`, following the analyst's edits). A row whose example
    is gone gets ``None`` for each.
    """
    ids = sorted({int(r["example_id"]) for r in rows})
    examples = {int(e["id"]): e for e in project.examples(ids)}
    human = human_counterfactuals(project, [e.get("text") or "" for e in examples.values()])
    out = []
    for r in rows:
        ex = examples.get(int(r["example_id"]), {})
        original = {f: ex.get(f) for f in ORIGINAL_FIELDS}
        out.append({**r, "original": original, "original_label": ex.get("label"),
                    "edit_distance": edit_distance(r, original),
                    "human": [h for h in human.get((ex.get("text") or "").strip(), [])
                              if h["target"] == r["target_label"]]})
    return out


def human_counterfactuals(project: Project, texts: Sequence[str]) -> dict[str, list[dict[str, str]]]:
    """``{original text: [{"text", "target", "source"}]}``: the human counterfactuals of ``texts`` among the
    project's imported demonstration pairs (``counterbias demos --import``), matched by the text as written."""
    wanted = sorted({t.strip() for t in texts if t and t.strip()})
    out: dict[str, list[dict[str, str]]] = {}
    for start in range(0, len(wanted), 500):
        part = wanted[start:start + 500]
        for row in project.db.execute(
                f"SELECT original, revised, target, source FROM demo_pairs WHERE original IN ({','.join('?' * len(part))}) "
                "ORDER BY id", part).fetchall():
            out.setdefault(row[0], []).append({"text": row[1], "target": row[2], "source": row[3]})
    return out


def passing_ids(project: Project, dataset_id: int) -> list[int]:
    """The undecided (proposed) candidates of a dataset that the accept rule passes, by id: what *accept all
    passing* accepts (``decide --passing``, the review tab's button)."""
    return [int(r["id"]) for r in candidate_rows(project, dataset_id=dataset_id, statuses=("proposed",))
            if r["scores"].get("passes")]


def candidate_rows_with_originals(project: Project, dataset_id: int) -> list[dict[str, Any]]:
    """A dataset's candidates (:func:`candidate_rows`) joined with their originals (:func:`with_originals`)."""
    return with_originals(project, candidate_rows(project, dataset_id=dataset_id))


def set_decision(project: Project, candidate_id: int, status: str, text: str | None = None) -> CandidateState:
    """Record a decision and return the state before it.

    Parameters
    ----------
    status
        ``"accepted"``, ``"rejected"`` or ``"proposed"`` (back to undecided).
    text
        A new text for the edited field (an edit; implies nothing about the status, which is
        given separately, normally ``"accepted"``).

    Raises
    ------
    ReviewError
        Unknown candidate or status, a failed candidate, or an empty edited text.
    """
    if status not in STATUSES:
        raise ReviewError(f"Unknown review status {status!r}.", f"Use one of: {', '.join(STATUSES)}.")
    candidate = load_candidate(project, candidate_id)
    if candidate["status"] == "failed":
        raise ReviewError(f"Candidate {candidate_id} failed to generate; there is nothing to decide on.",
                          "Generate again to retry it.")
    if text is not None and not text.strip():
        raise ReviewError("The edited text is empty.", "Write the text, or reject the candidate instead.")
    field = edited_field(candidate)
    before = CandidateState(candidate["status"], field, candidate[field])
    project.writer.run(_write, int(candidate_id), status, field, text)
    return before


def restore(project: Project, candidate_id: int, state: CandidateState) -> None:
    """Put a candidate back into an earlier state (undo), recorded as a decision."""
    project.writer.run(_write, int(candidate_id), state.status, state.field, state.text, undo=True)


def _write(conn: sqlite3.Connection, candidate_id: int, status: str, field: str, text: str | None,
           undo: bool = False) -> None:
    if field not in ("text", "premise", "hypothesis"):
        raise ReviewError(f"Unknown field {field!r}.", "This is a bug; please report it.")
    if text is not None:
        conn.execute(f"UPDATE candidates SET {field} = ? WHERE id = ?", (text, candidate_id))
    conn.execute("UPDATE candidates SET status = ? WHERE id = ?", (status, candidate_id))
    decision = "undo" if undo else ("edit" if text is not None else _DECISION[status])
    conn.execute("INSERT INTO decisions (candidate_id, decision, edited_text, decided_at) VALUES (?, ?, ?, ?)",
                 (candidate_id, decision, text, now()))


# ---------------------------------------------------------------------------- what the review shows


@dataclass(frozen=True)
class SentenceTriples:
    """One sentence of an example field, its stored triples and their categories.

    Attributes
    ----------
    field, index, sentence
        Where the sentence is (0-based index) and its text.
    triples
        The stored triples (empty: none extracted, or all removed).
    categories
        ``"principal"``, ``"spurious"`` or ``"normal"`` per triple: from the newest vote's
        W_p / W_s when the example has one, else as the last generation recorded, else
        ``"normal"``.
    edited
        Per triple, whether the analyst wrote it.
    """

    field: str
    index: int
    sentence: str
    triples: list[Triple]
    categories: list[str]
    edited: list[bool]


@dataclass(frozen=True)
class ExampleTriples:
    """An example's sentences with triples, and the principal / spurious words they were judged by."""

    example_id: int
    sentences: list[SentenceTriples]
    principal: dict[str, list[str]]
    spurious: dict[str, list[str]]

    @property
    def has_triples(self) -> bool:
        return any(s.triples for s in self.sentences)


def example_triples(project: Project, dataset_id: int, example_id: int) -> ExampleTriples:
    """Sentences, triples and triple categories of one example of a dataset version.

    Categories come from the newest vote on the dataset (or its parent) with
    :func:`engine.counterbias.manipulate.categorize`, as generation computes them (without
    its fallback for fields that have no principal triple).

    Raises
    ------
    ReviewError
        For an unknown example.
    """
    from engine.attribution.vote_store import latest_votes
    from engine.counterbias.manipulate import categorize
    from engine.counterbias.triple_store import load_triple_records
    from engine.text.sentences import split_sentences

    dataset = project.dataset(dataset_id)
    rows = project.examples([int(example_id)])
    if not rows:
        raise ReviewError(f"No example {example_id}.", "It may have been deleted; reopen the dataset.")
    row = rows[0]
    records = load_triple_records(project, int(example_id))
    votes = latest_votes(project, [d for d in (dataset.id, dataset.parent_id) if d is not None], [int(example_id)])
    sentences: list[SentenceTriples] = []
    principal: dict[str, list[str]] = {}
    spurious: dict[str, list[str]] = {}
    for name in dataset.text_fields:
        texts = split_sentences(row.get(name) or "")
        mine = [r for r in records if r.field == name]
        count = max(len(texts), max((r.sentence_index + 1 for r in mine), default=0))
        vote = votes.get((int(example_id), name))
        if vote is not None:
            principal[name], spurious[name] = list(vote.principal), list(vote.spurious)
        for index in range(count):
            here = [r for r in mine if r.sentence_index == index]
            triples = [r.triple for r in here]
            if vote is not None:
                categories = categorize(triples, vote.principal, vote.spurious)
            else:
                categories = [r.category or "normal" for r in here]
            sentences.append(SentenceTriples(name, index, texts[index] if index < len(texts) else "", triples,
                                             categories, [r.edited for r in here]))
    return ExampleTriples(int(example_id), sentences, principal, spurious)


def token_usage(project: Project, *, kinds: Sequence[str] = ("generate", "triples"),
                dataset_id: int | None = None) -> Usage:
    """Tokens sent to the LLM over the project's runs of ``kinds`` (from each run's ``result.usage``).

    Parameters
    ----------
    kinds
        Run kinds to count (generation and triple extraction by default).
    dataset_id
        Only runs on this dataset version (default: every run).
    """
    from engine.llm.base import Usage

    sql = "SELECT result FROM runs WHERE kind IN (SELECT value FROM json_each(?)) AND result IS NOT NULL"
    params: list[Any] = [json.dumps(list(kinds))]
    if dataset_id is not None:
        sql += " AND dataset_id = ?"
        params.append(int(dataset_id))
    total = Usage()
    for (raw,) in project.db.execute(sql, params).fetchall():
        try:
            usage = (json.loads(raw) or {}).get("usage")
        except (TypeError, ValueError):
            continue
        if isinstance(usage, dict):
            total = total + Usage.from_dict(usage)
    return total
