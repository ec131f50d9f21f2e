"""Whether a recorded run's process still lives, and marking the dead ones ``interrupted``.

:func:`engine.store.runs.recorded_run` stores the process of each run (``pid``, that process's
start time ``pid_started``, ``host``) and refreshes ``heartbeat_at`` every :data:`HEARTBEAT_S`
seconds. :func:`mark_interrupted` runs when a project is opened (after the open has accepted
and migrated the file, so a refused file is never written).
"""

from __future__ import annotations

import json
import logging
import socket
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from engine.store.schema import now

__all__ = ["HEARTBEAT_S", "STALE_AFTER_S", "mark_interrupted", "process_alive", "process_started"]

log = logging.getLogger(__name__)

#: Seconds between two refreshes of a running row's ``heartbeat_at``.
HEARTBEAT_S = 60.0
#: A run on another host whose heartbeat is older than this (seconds) is taken as interrupted.
STALE_AFTER_S = 10 * HEARTBEAT_S


def process_started(pid: int) -> str | None:
    """When process ``pid`` started (an opaque stamp that tells a reused pid apart), or ``None``."""
    import psutil

    try:
        return repr(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return None


def process_alive(pid: int | None, started: str | None) -> bool:
    """Whether process ``pid`` runs and is the one that started at ``started``."""
    if pid is None:
        return False
    now_started = process_started(int(pid))
    return now_started is not None and (started is None or now_started == started)


def run_alive(pid: int | None, started: str | None, host: str | None, heartbeat_at: str | None) -> bool:
    """Whether the process of a ``running`` row still runs: on this host, the recorded pid with the same start
    time; on another host, a heartbeat younger than :data:`STALE_AFTER_S`."""
    if host in (None, socket.gethostname()):
        return process_alive(pid, started)
    stale = (datetime.now(timezone.utc) - timedelta(seconds=STALE_AFTER_S)).isoformat(timespec="seconds")
    return (heartbeat_at or "") >= stale


def mark_interrupted(path: Path, connect: Any) -> list[int]:
    """Mark ``running`` rows whose process is gone as ``interrupted`` (run when a project is opened).

    A row is kept ``running`` while its process lives: on this host, the recorded pid with the
    same start time; on another host (a shared folder), a heartbeat younger than
    :data:`STALE_AFTER_S`. Rows written before runs recorded their process are interrupted.
    Nothing is written when no row qualifies; a failure to write (a read-only file) is logged
    and the rows stay as they are until a later open.

    Parameters
    ----------
    path
        The project file (already checked and migrated by the open).
    connect
        ``connect(path) -> sqlite3.Connection`` (autocommit, writing).

    Returns
    -------
    list of int
        The ids marked.
    """
    try:
        with closing(connect(path)) as conn:
            rows = conn.execute(
                "SELECT id, pid, pid_started, host, heartbeat_at FROM runs WHERE status = 'running'"
            ).fetchall()
            gone = [int(run_id) for run_id, pid, started, run_host, beat in rows
                    if not run_alive(pid, started, run_host, beat)]
            if gone:
                conn.execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = ?, "
                    "message = 'interrupted: its process ended without finishing the run' || "
                    "COALESCE(' (' || message || ')', '') "
                    "WHERE status = 'running' AND id IN (SELECT value FROM json_each(?))",
                    (now(), json.dumps(gone)),
                )
            return gone
    except sqlite3.Error as exc:
        log.warning("could not mark interrupted runs in %s: %s", path, exc)
        return []
