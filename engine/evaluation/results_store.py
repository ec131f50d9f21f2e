"""Evaluation results in the project: one row per (condition, classifier, seed, test set)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.store.schema import now

if TYPE_CHECKING:
    from engine.store import Project

__all__ = ["CellResult", "finished_keys", "load_results", "store_result"]


@dataclass(frozen=True)
class CellResult:
    """One trained classifier (condition, classifier, seed) scored on one test set."""

    condition: str
    condition_key: str
    classifier: str
    classifier_key: str
    seed: int
    test_set: str
    test_key: str
    role: str
    accuracy: float
    macro_f1: float
    n: int
    train_rows: int
    condition_spec: tuple = ()
    classifier_params: Any = None


def store_result(project: Project, cell: CellResult, run_id: int | None = None) -> None:
    """Write one result (replacing an earlier row of the same cell)."""

    def write(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO eval_results (run_id, condition, condition_key, condition_spec, classifier, "
            "classifier_key, classifier_params, seed, test_set, test_key, role, accuracy, macro_f1, n, train_rows, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, cell.condition, cell.condition_key, json.dumps(list(cell.condition_spec)), cell.classifier,
             cell.classifier_key, json.dumps(cell.classifier_params or {}), cell.seed, cell.test_set, cell.test_key,
             cell.role, cell.accuracy, cell.macro_f1, cell.n, cell.train_rows, now()),
        )

    project.writer.run(write)


def finished_keys(project: Project, condition_key: str, classifier_key: str, seed: int) -> set[str]:
    """Test keys already scored for this (condition, classifier, seed)."""
    return {r["test_key"] for r in project.db.query(
        "SELECT test_key FROM eval_results WHERE condition_key = ? AND classifier_key = ? AND seed = ?",
        [condition_key, classifier_key, seed])}


def load_results(project: Project, *, classifier: str | None = None) -> list[CellResult]:
    """Every stored result (optionally of one classifier), oldest first."""
    sql = "SELECT * FROM eval_results" + (" WHERE classifier = ?" if classifier else "") + " ORDER BY id"
    return [
        CellResult(r["condition"], r["condition_key"], r["classifier"], r["classifier_key"], r["seed"], r["test_set"],
                   r["test_key"], r["role"], r["accuracy"], r["macro_f1"], r["n"], r["train_rows"],
                   tuple(json.loads(r["condition_spec"])), json.loads(r["classifier_params"]))
        for r in project.db.query(sql, [classifier] if classifier else [])
    ]
