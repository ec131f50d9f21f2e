"""The ``runs`` table: one row per job (kind, dataset, parameters, status, result), for provenance.

A job records itself with :func:`recorded_run`::

    with recorded_run(project, "train", dataset_id, {"ensemble": config.to_dict()}) as run:
        ...                      # run.id is the row's id (for rows that point at the run)
        run.result = summary     # JSON-ready; stored whatever the outcome
        run.message = "3 members trained"

The row is ``running`` while the body runs and is finished as ``done`` when the body returns,
``cancelled`` when it raises :class:`~engine.errors.Cancelled` or :class:`KeyboardInterrupt` (Ctrl+C,
and SIGTERM, which the CLI turns into one: :func:`engine.cli.main`), or ``failed`` (with the error)
on any other exception; the exception is re-raised. Writes go through the project's writer.

A row also records the process running it (``pid``, that process's start time ``pid_started``
and ``host``) and a ``heartbeat_at`` refreshed every :data:`HEARTBEAT_S` seconds. A run killed
outright (``kill -9``, a power cut) cannot finish its row; :func:`~engine.store.liveness.mark_interrupted`, run when
the project is opened (:mod:`engine.store.liveness`), finds ``running`` rows whose process is gone and marks them
``interrupted``. Steps resume by themselves: finished items are stored and LLM answers are
cached, so the next run of the step continues where the interrupted one stopped.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import Cancelled
from engine.store.liveness import HEARTBEAT_S, process_started
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.store.project import Project

__all__ = ["RunRecord", "recorded_run"]

log = logging.getLogger(__name__)

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
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(project, record.id, stop), name=f"run-{record.id}-heartbeat",
                            daemon=True)
    beat.start()
    try:
        try:
            yield record
        finally:
            stop.set()
            beat.join()
    except (Cancelled, KeyboardInterrupt) as exc:
        _finish_run(project, record.id, "cancelled", message=_joined(_cancel_reason(exc), record.message),
                    result=record.result)
        raise
    except BaseException as exc:
        reason = str(exc) or type(exc).__name__
        _finish_run(project, record.id, "failed", message=_joined(reason, record.message), result=record.result)
        raise
    _finish_run(project, record.id, "done", message=record.message, result=record.result)


def _cancel_reason(exc: BaseException) -> str:
    """Why a run was cancelled: the cancel token, Ctrl+C, or what the CLI's SIGTERM handler said."""
    if isinstance(exc, KeyboardInterrupt):
        return f"cancelled: {exc}" if str(exc) else "cancelled: interrupted (Ctrl+C)"
    return "cancelled by the user"


def _joined(reason: str, message: str) -> str:
    return f"{reason} ({message})" if message else reason


def _start_run(project: Project, kind: str, dataset_id: int | None, params: dict[str, Any]) -> int:
    """Record a running job in ``runs`` (through the project's writer) and return its id."""
    pid = os.getpid()
    pid_started, host = process_started(pid), socket.gethostname()

    def write(conn: sqlite3.Connection) -> int:
        stamp = now()
        cursor = conn.execute(
            "INSERT INTO runs (kind, dataset_id, params, status, started_at, pid, pid_started, host, heartbeat_at) "
            "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)",
            (kind, dataset_id, json.dumps(params, ensure_ascii=False, default=str), stamp, pid, pid_started, host,
             stamp),
        )
        return int(cursor.lastrowid)

    return project.writer.run(write)


def _heartbeat(project: Project, run_id: int, stop: threading.Event) -> None:
    """Refresh the run's ``heartbeat_at`` every :data:`HEARTBEAT_S` seconds until ``stop`` is set."""
    while not stop.wait(HEARTBEAT_S):
        try:
            project.writer.submit(
                lambda conn: conn.execute("UPDATE runs SET heartbeat_at=? WHERE id=?", (now(), run_id))
            ).result()
        except Exception as exc:  # a heartbeat must never fail the job it watches
            log.warning("could not refresh the heartbeat of run %d: %s", run_id, exc)


def _finish_run(project: Project, run_id: int, status: str, *, message: str = "", result: Any = None) -> None:
    """Close a ``runs`` row with ``done``, ``failed`` or ``cancelled``, a message and a JSON result."""

    def write(conn: sqlite3.Connection) -> None:
        conn.execute(
            "UPDATE runs SET status=?, message=?, result=?, finished_at=? WHERE id=?",
            (status, message[:MAX_MESSAGE],
             json.dumps(result, ensure_ascii=False, default=str) if result is not None else None, now(), run_id),
        )

    project.writer.run(write)
