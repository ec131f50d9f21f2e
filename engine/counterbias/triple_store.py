"""The ``triples`` table: an example's triples per text field and sentence, and the analyst's edits.

Rows are written by the triple extraction job (:mod:`engine.counterbias.triples`, through
:func:`insert_triples` on the project's writer) and by :func:`replace_triples` when the
analyst edits a sentence's triples. Sentences are numbered as
:func:`engine.text.sentences.split_sentences` splits the field; each row records the splitter's
version it was numbered with (``splitter``), and rows of an older version are read with the
current numbering (:func:`engine.text.sentences.regroup`: a triple of a glued sentence that is now
two goes to the part that holds most of its words). An edit of an example's triples stores all its
rows with the current numbering.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import CounterbiasError
from engine.llm.triple_format import Triple
from engine.store.schema import now
from engine.text.sentences import SPLITTER_VERSION, regroup, split_sentences

if TYPE_CHECKING:
    from engine.store.project import Project

__all__ = [
    "UNDECIDED",
    "TripleEditError",
    "TripleRecord",
    "TriplesEdit",
    "current_rows",
    "examples_with_triples",
    "insert_triples",
    "load_triple_records",
    "load_triples",
    "replace_triples",
]

#: Candidate statuses that an edit of the triples makes stale (they are deleted).
UNDECIDED = ("proposed", "failed")


class TripleEditError(CounterbiasError):
    """An edit of an example's triples that cannot be stored."""

    code = "CB830"


@dataclass(frozen=True)
class TripleRecord:
    """One stored triple with where it is and what is known about it.

    Attributes
    ----------
    field, sentence_index, ord
        The text field, the sentence in it (0-based) and the triple's position in the sentence.
    triple
        The fact itself.
    category
        ``"principal"``, ``"spurious"``, ``"normal"`` as recorded by the last generation, or
        ``None`` (not generated yet, or edited since).
    edited
        Whether the analyst wrote this triple.
    """

    field: str
    sentence_index: int
    ord: int
    triple: Triple
    category: str | None
    edited: bool


@dataclass(frozen=True)
class TriplesEdit:
    """What :func:`replace_triples` did: triples stored, undecided candidates deleted."""

    stored: int
    discarded: list[int]


# ---------------------------------------------------------------------------- the extraction job's rows


def examples_with_triples(project: Project, ids: Iterable[int]) -> set[int]:
    """The examples of ``ids`` that have at least one stored triple."""
    ids = list(ids)
    found: set[int] = set()
    for start in range(0, len(ids), 900):
        chunk = ids[start : start + 900]
        marks = ",".join("?" * len(chunk))
        found.update(
            r[0]
            for r in project.db.conn.execute(
                f"SELECT DISTINCT example_id FROM triples WHERE example_id IN ({marks})", chunk
            )
        )
    return found


def insert_triples(
    conn: sqlite3.Connection,
    run_id: int,
    example_id: int,
    sentences: Iterable[tuple[str, int, Sequence[Triple]]],
) -> int:
    """Store an example's extracted triples (a writer function); returns the rows written.

    Parameters
    ----------
    conn
        The writer's connection.
    run_id
        The extraction run.
    example_id
        The example.
    sentences
        ``(field, sentence index, triples)`` per sentence.

    Notes
    -----
    Idempotent: when the example already has triples (another run stored them meanwhile),
    nothing is written.
    """
    if conn.execute("SELECT 1 FROM triples WHERE example_id = ? LIMIT 1", (example_id,)).fetchone():
        return 0
    stamp = now()
    rows = [
        (run_id, example_id, field, index, ord_, t.subject, t.predicate, t.object, stamp, SPLITTER_VERSION)
        for field, index, triples in sentences
        for ord_, t in enumerate(triples)
    ]
    conn.executemany(
        "INSERT INTO triples (run_id, example_id, field, sentence_index, ord, subject, predicate, object, created_at, "
        "splitter) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return len(rows)


# ---------------------------------------------------------------------------- reading


_COLUMNS = "id, field, sentence_index, ord, subject, predicate, object, category, edited, splitter"


def current_rows(db: Any, example_id: int) -> list[dict[str, Any]]:
    """An example's triple rows (``id``, ``field``, ``sentence_index``, ``ord``, parts, ``category``, ``edited``,
    ``old_index``), numbered as the current splitter numbers its sentences, in order of field, sentence and
    position. ``db``: a connection (the writer's) or the project's read side (``project.db``)."""
    rows = [dict(zip(_COLUMNS.split(", "), r, strict=True)) for r in db.execute(
        f"SELECT {_COLUMNS} FROM triples WHERE example_id = ? ORDER BY field, sentence_index, ord", [int(example_id)])]
    for row in rows:
        row["old_index"] = row["sentence_index"]
    old = [r for r in rows if int(r["splitter"]) < SPLITTER_VERSION]
    if old:
        found = db.execute("SELECT text, premise, hypothesis FROM examples WHERE id = ?", [int(example_id)]).fetchone()
        texts = dict(zip(("text", "premise", "hypothesis"), found or ("", "", ""), strict=True))
        for (field, version), mine in _groups(old).items():
            groups = regroup(texts.get(field) or "", version)
            if groups is None:
                continue
            sentences = split_sentences(texts.get(field) or "")
            for row in mine:
                row["sentence_index"] = _new_index(row, groups, sentences)
    rows.sort(key=lambda r: (r["field"], r["sentence_index"], r["old_index"] != r["sentence_index"], r["ord"]))
    return rows


def _groups(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault((row["field"], int(row["splitter"])), []).append(row)
    return out


def _new_index(row: dict[str, Any], groups: Sequence[Sequence[int]], sentences: Sequence[str]) -> int:
    """The current index of an older-numbered row: the part of its sentence holding most of its words."""
    index = int(row["sentence_index"])
    if index >= len(groups):  # past the old sentences: keep its distance to the end
        return index + (groups[-1][-1] - (len(groups) - 1) if groups else 0)
    parts = groups[index]
    words = {w.lower() for part in (row["subject"], row["object"]) for w in str(part).split()}

    def overlap(i: int) -> int:
        return len(words & {w.lower().strip(".,!?;:\"'()") for w in sentences[i].split()}) if i < len(sentences) else 0

    return max(parts, key=lambda i: (overlap(i), -i))


def load_triples(project: Project, example_id: int) -> dict[str, list[list[Triple]]]:
    """Stored triples of one example: ``{field: [sentence 0 triples, sentence 1 triples, …]}``."""
    out: dict[str, list[list[Triple]]] = {}
    for row in current_rows(project.db, example_id):
        sentences = out.setdefault(row["field"], [])
        while len(sentences) <= row["sentence_index"]:
            sentences.append([])
        sentences[row["sentence_index"]].append(Triple(row["subject"], row["predicate"], row["object"]))
    return out


def load_triple_records(project: Project, example_id: int) -> list[TripleRecord]:
    """Stored triples of one example with category and edit flag, by field, sentence and order."""
    return [
        TripleRecord(row["field"], int(row["sentence_index"]), int(row["ord"]),
                     Triple(row["subject"], row["predicate"], row["object"]), row["category"], bool(row["edited"]))
        for row in current_rows(project.db, example_id)
    ]


# ---------------------------------------------------------------------------- the analyst's edits


def replace_triples(
    project: Project,
    example_id: int,
    field: str,
    sentence_index: int,
    triples: Sequence[Triple | Sequence[str]],
) -> TriplesEdit:
    """Replace the triples of one sentence with the analyst's, and drop stale candidates.

    The new triples are stored as edited (``edited = 1``, no category until the next
    generation categorises them). Every *undecided* candidate of the example (``proposed``
    or ``failed``) was made from the old triples, so it is deleted with its decision
    history, in the same transaction; the next generation makes those slots again.
    Accepted and rejected candidates are kept.

    Parameters
    ----------
    project
        The open project.
    example_id
        The example.
    field
        ``"text"``, ``"premise"`` or ``"hypothesis"``.
    sentence_index
        The sentence of the field (0-based, as :func:`split_sentences` numbers them).
    triples
        The new triples, ``(subject, predicate, object)`` each; an empty list removes the
        sentence's triples.

    Returns
    -------
    TriplesEdit
        The number of triples stored and the ids of the deleted candidates.

    Raises
    ------
    TripleEditError
        Unknown example or field, a sentence index out of range, or a triple with an empty
        part or a ``|`` in a part.
    """
    if field not in ("text", "premise", "hypothesis"):
        raise TripleEditError(f"Unknown text field {field!r}.", "Use text, premise or hypothesis.")
    rows = project.examples([int(example_id)])
    if not rows:
        raise TripleEditError(f"No example {example_id}.", "It may have been deleted; reopen the dataset.")
    clean: list[Triple] = []
    for number, triple in enumerate(triples, start=1):
        parts = [str(p).strip() for p in triple]
        if len(parts) != 3 or not all(parts):
            raise TripleEditError(f"Triple {number} needs a subject, a predicate and an object.",
                                  "Fill in all three parts, or delete the triple.")
        if any("|" in p for p in parts):
            raise TripleEditError(f"Triple {number} contains '|', which separates the parts in prompts.",
                                  "Remove the '|' characters.")
        clean.append(Triple(*parts))
    current = current_rows(project.db, int(example_id))
    stored_max = max((r["sentence_index"] for r in current if r["field"] == field), default=None)
    limit = max(len(split_sentences(rows[0].get(field) or "")), -1 if stored_max is None else int(stored_max) + 1)
    if not 0 <= int(sentence_index) < limit:
        raise TripleEditError(f"Sentence {int(sentence_index) + 1} does not exist in the {field} of example "
                              f"{example_id} ({limit} sentences).", "Pick one of the example's sentences.")
    # rows numbered by an older splitter are stored with the numbering the analyst saw
    renumber = [(int(r["sentence_index"]), int(r["id"])) for r in current if int(r["splitter"]) < SPLITTER_VERSION]
    discarded = project.writer.run(_replace_triples, int(example_id), field, int(sentence_index), clean, renumber)
    return TriplesEdit(len(clean), discarded)


def _replace_triples(conn: sqlite3.Connection, example_id: int, field: str, sentence_index: int,
                     triples: Sequence[Triple], renumber: Sequence[tuple[int, int]] = ()) -> list[int]:
    conn.executemany(f"UPDATE triples SET sentence_index = ?, splitter = {SPLITTER_VERSION} WHERE id = ?", renumber)
    conn.execute("DELETE FROM triples WHERE example_id = ? AND field = ? AND sentence_index = ?",
                 (example_id, field, sentence_index))
    stamp = now()
    conn.executemany(
        "INSERT INTO triples (run_id, example_id, field, sentence_index, ord, subject, predicate, object, edited, "
        "created_at, splitter) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)",
        [(example_id, field, sentence_index, i, t.subject, t.predicate, t.object, stamp, SPLITTER_VERSION)
         for i, t in enumerate(triples)],
    )
    marks = ",".join("?" * len(UNDECIDED))
    stale = [int(r[0]) for r in conn.execute(
        f"SELECT id FROM candidates WHERE example_id = ? AND status IN ({marks})", (example_id, *UNDECIDED))]
    if stale:
        ids = json.dumps(stale)
        conn.execute("DELETE FROM decisions WHERE candidate_id IN (SELECT value FROM json_each(?))", (ids,))
        conn.execute("DELETE FROM candidates WHERE id IN (SELECT value FROM json_each(?))", (ids,))
    return stale
