"""A dataset's patterns in the project: one row per (label, pattern), synthesized or the analyst's."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.patterns.scores import ScoredPattern
from engine.patterns.syntax import parse
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.store.project import Project

__all__ = ["StoredPattern", "delete_pattern", "load_patterns", "store_patterns"]


@dataclass(frozen=True)
class StoredPattern:
    """A stored pattern with its scores when stored."""

    id: int
    label: str
    pattern: str
    source: str
    precision: float | None
    recall: float | None
    f1: float | None
    matched: int | None
    matched_label: int | None
    params: dict[str, Any]


def store_patterns(project: Project, dataset_id: int, patterns: Sequence[ScoredPattern], *, source: str = "synthesized",
                   params: dict[str, Any] | None = None, replace: bool = False) -> list[int]:
    """Store scored patterns of a dataset (a pattern already stored for its label is updated).

    Parameters
    ----------
    replace
        Remove the dataset's earlier ``source`` patterns of the same labels first (a new
        synthesis replaces the last one; the analyst's patterns stay).
    """
    for p in patterns:
        parse(p.pattern)  # only valid patterns are stored

    def write(conn: sqlite3.Connection) -> list[int]:
        if replace:
            for label in {p.label for p in patterns}:
                conn.execute("DELETE FROM patterns WHERE dataset_id = ? AND label = ? AND source = ?",
                             (dataset_id, label, source))
        ids = []
        for p in patterns:
            conn.execute(
                "INSERT INTO patterns (dataset_id, label, pattern, source, precision, recall, f1, matched, "
                "matched_label, params, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (dataset_id, label, pattern) DO UPDATE SET source = excluded.source, "
                "precision = excluded.precision, recall = excluded.recall, f1 = excluded.f1, "
                "matched = excluded.matched, matched_label = excluded.matched_label, params = excluded.params",
                (dataset_id, p.label, p.pattern, source, p.precision, p.recall, p.f1, p.matched, p.matched_label,
                 json.dumps(params or {}), now()))
            ids.append(int(conn.execute("SELECT id FROM patterns WHERE dataset_id = ? AND label = ? AND pattern = ?",
                                        (dataset_id, p.label, p.pattern)).fetchone()[0]))
        return ids

    return project.writer.run(write)


def load_patterns(project: Project, dataset_id: int, label: str | None = None) -> list[StoredPattern]:
    """The dataset's stored patterns (of one label), best F1 first, the analyst's before ties."""
    sql = "SELECT * FROM patterns WHERE dataset_id = ?" + (" AND label = ?" if label is not None else "")
    rows = project.db.query(sql + " ORDER BY label, COALESCE(f1, 0) DESC, source = 'synthesized', id",
                            [dataset_id, label] if label is not None else [dataset_id])
    return [StoredPattern(int(r["id"]), r["label"], r["pattern"], r["source"], r["precision"], r["recall"], r["f1"],
                          r["matched"], r["matched_label"], json.loads(r["params"] or "{}")) for r in rows]


def delete_pattern(project: Project, dataset_id: int, pattern_id: int) -> bool:
    """Remove one stored pattern; whether it existed."""

    def write(conn: sqlite3.Connection) -> bool:
        return conn.execute("DELETE FROM patterns WHERE dataset_id = ? AND id = ?",
                            (dataset_id, pattern_id)).rowcount > 0

    return project.writer.run(write)
