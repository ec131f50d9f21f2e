"""The ``runs`` table: one row per job (kind, dataset, parameters, status, result), for provenance.

A job records itself with :func:`recorded_run`::

    with recorded_run(project, "train", dataset_id, {"ensemble": config.to_dict()}) as run:
        ...                      # run.id is the row's id (for rows that point at the run)
        run.result = summary     # JSON-ready; stored whatever the outcome
        run.message = "3 members trained"

The row is ``running`` while the body runs and is finished as ``done`` when the body returns,
``cancelled`` when it raises :class:`~engine.errors.Cancelled`, or ``failed`` (with the error)
on any other exception; the exception is re-raised. Writes go through the project's writer.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import Cancelled
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.store.project import Project

__all__ = ["RunRecord", "recorded_run"]

#: Longest message stored in a run row (characters).
MAX_MESSAGE = 2000


@dataclass
class RunRecord:
    """The job's handle on its ``runs`` row while :func:`recorded_run` is open.

    Attributes
    ----------
    id
        The row's id.
    result
        What the job produced, JSON-ready (``None``: nothing); stored when the run finishes,
        however it finishes.
    message
        A one-line summary for people; on failure or cancel it follows the reason.
    """

    id: int
    result: Any = None
    message: str = ""


@contextmanager
def recorded_run(project: Project, kind: str, dataset_id: int | None, params: dict[str, Any]) -> Iterator[RunRecord]:
    """Record a job in ``runs`` for as long as the ``with`` body runs (see the module doc).

    Parameters
    ----------
    project
        The open project.
    kind
        ``"train"``, ``"attribute"``, ``"triples"``, ``"generate"``, …
    dataset_id
        The dataset version the job works on (``None``: none).
    params
        The job's parameters, JSON-ready (objects JSON does not know are stored as ``str``).

    Yields
    ------
    RunRecord
        Set its ``result`` and ``message`` in the body.

    Raises
    ------
    BaseException
        Whatever the body raised, after the row is finished as ``cancelled`` or ``failed``.
    """
    record = RunRecord(_start_run(project, kind, dataset_id, params))
    try:
        yield record
    except Cancelled:
        _finish_run(project, record.id, "cancelled", message=_joined("cancelled by the user", record.message),
                   result=record.result)
        raise
    except BaseException as exc:
        reason = str(exc) or type(exc).__name__
        _finish_run(project, record.id, "failed", message=_joined(reason, record.message), result=record.result)
        raise
    _finish_run(project, record.id, "done", message=record.message, result=record.result)


def _joined(reason: str, message: str) -> str:
    return f"{reason} ({message})" if message else reason


def _start_run(project: Project, kind: str, dataset_id: int | None, params: dict[str, Any]) -> int:
    """Record a running job in ``runs`` (through the project's writer) and return its id."""

    def write(conn: sqlite3.Connection) -> int:
        cursor = conn.execute(
            "INSERT INTO runs (kind, dataset_id, params, status, started_at) VALUES (?, ?, ?, 'running', ?)",
            (kind, dataset_id, json.dumps(params, ensure_ascii=False, default=str), now()),
        )
        return int(cursor.lastrowid)

    return project.writer.run(write)


def _finish_run(project: Project, run_id: int, status: str, *, message: str = "", result: Any = None) -> None:
    """Close a ``runs`` row with ``done``, ``failed`` or ``cancelled``, a message and a JSON result."""

    def write(conn: sqlite3.Connection) -> None:
        conn.execute(
            "UPDATE runs SET status=?, message=?, result=?, finished_at=? WHERE id=?",
            (status, message[:MAX_MESSAGE],
             json.dumps(result, ensure_ascii=False, default=str) if result is not None else None, now(), run_id),
        )

    project.writer.run(write)
