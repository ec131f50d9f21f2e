"""The ``attributions`` table as a cache keyed by (model, method, settings key, example, field)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from engine.attribution.kernel import ExampleAttribution
from engine.store import Project
from engine.store.schema import now

__all__ = ["StoredScores", "cached_example_ids", "load_attributions", "write_attributions"]

_CHUNK = 900


@dataclass(frozen=True)
class StoredScores:
    """One stored row: the canonical words (prefix the model saw), their scores and the target."""

    words: list[str]
    scores: np.ndarray
    target: str | None


def _chunks(ids: Sequence[int]) -> Iterable[list[int]]:
    ids = [int(i) for i in ids]
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


def cached_example_ids(
    project: Project, model_id: int, method: str, settings_key: str, example_ids: Sequence[int], fields: Sequence[str]
) -> set[int]:
    """Examples among ``example_ids`` whose every field is already stored."""
    done: set[int] = set()
    need = len(fields)
    for chunk in _chunks(example_ids):
        marks = ",".join("?" * len(chunk))
        fmarks = ",".join("?" * need)
        rows = project.db.execute(
            f"SELECT example_id, COUNT(*) FROM attributions WHERE model_id = ? AND method = ? AND settings_key = ? "
            f"AND field IN ({fmarks}) AND example_id IN ({marks}) GROUP BY example_id",
            [model_id, method, settings_key, *fields, *chunk],
        ).fetchall()
        done.update(int(r[0]) for r in rows if r[1] >= need)
    return done


def write_attributions(
    conn: sqlite3.Connection, model_id: int, method: str, settings_key: str, results: Sequence[ExampleAttribution]
) -> int:
    """Insert results inside a write task (existing keys are left alone); return rows inserted."""
    stamp = now()
    rows = [
        (
            model_id,
            method,
            settings_key,
            r.example_id,
            f.field,
            json.dumps(f.words, ensure_ascii=False),
            json.dumps([round(float(x), 7) for x in f.scores]),
            r.target,
            stamp,
        )
        for r in results
        for f in r.fields
    ]
    before = conn.total_changes
    conn.executemany(
        "INSERT OR IGNORE INTO attributions (model_id, method, settings_key, example_id, field, words, scores, target, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return conn.total_changes - before


def load_attributions(
    project: Project, model_id: int, method: str, settings_key: str, example_ids: Sequence[int] | None = None
) -> dict[tuple[int, str], StoredScores]:
    """Stored scores keyed by ``(example_id, field)`` (all examples when ``example_ids`` is None)."""
    out: dict[tuple[int, str], StoredScores] = {}
    base = "SELECT example_id, field, words, scores, target FROM attributions WHERE model_id = ? AND method = ? AND settings_key = ?"
    if example_ids is None:
        batches: Iterable[tuple[str, list]] = [(base, [model_id, method, settings_key])]
    else:
        batches = (
            (f"{base} AND example_id IN ({','.join('?' * len(chunk))})", [model_id, method, settings_key, *chunk])
            for chunk in _chunks(example_ids)
        )
    for sql, params in batches:
        for ex, field, words, scores, target in project.db.execute(sql, params):
            out[(int(ex), field)] = StoredScores(json.loads(words), np.asarray(json.loads(scores), dtype=np.float64), target)
    return out
