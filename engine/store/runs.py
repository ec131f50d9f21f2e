"""The ``runs`` table: one row per job (kind, dataset, parameters, status, result), for provenance."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

from engine.store.schema import now

if TYPE_CHECKING:
    from engine.store.project import Project

__all__ = ["finish_run", "start_run"]


def start_run(project: Project, kind: str, dataset_id: int | None, params: dict[str, Any]) -> int:
    """Record a running job in ``runs`` (through the project's writer) and return its id."""

    def write(conn: sqlite3.Connection) -> int:
        cursor = conn.execute(
            "INSERT INTO runs (kind, dataset_id, params, status, started_at) VALUES (?, ?, ?, 'running', ?)",
            (kind, dataset_id, json.dumps(params, ensure_ascii=False, default=str), now()),
        )
        return int(cursor.lastrowid)

    return project.writer.run(write)


def finish_run(project: Project, run_id: int, status: str, *, message: str = "", result: Any = None) -> None:
    """Close a ``runs`` row with ``done``, ``failed`` or ``cancelled``, a message and a JSON result."""

    def write(conn: sqlite3.Connection) -> None:
        conn.execute(
            "UPDATE runs SET status=?, message=?, result=?, finished_at=? WHERE id=?",
            (status, message[:2000],
             json.dumps(result, ensure_ascii=False, default=str) if result is not None else None, now(), run_id),
        )

    project.writer.run(write)
