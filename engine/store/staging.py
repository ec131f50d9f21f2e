"""Imports that commit as they go, and the bookkeeping that keeps them all-or-nothing.

An import writes its rows in many short transactions (:func:`engine.store.writer.write_stream`),
so that the project's single writer can run other writes in between. Until it finishes it is
recorded in the ``imports`` table: the dataset it writes to and the first member position it
added. Then:

* a new dataset is created with ``state = 'importing'``, which every listing and look-up hides;
  rows appended to an existing dataset sit at member positions from ``first_position`` on,
  which readers stop before (:data:`HIDDEN_FROM_SQL`);
* :func:`finish` makes the rows visible and drops the record in one transaction;
* :func:`discard` (a failed or cancelled import) deletes what was written, in short bulk
  transactions too, and then the record (and the new dataset);
* :func:`sweep`, run when a project is opened, discards the imports whose process died
  (``kill -9``, a power cut). A live import holds a shared lock on :data:`LOCK_NAME` in the
  project's files folder for as long as it runs, so an open in another process (or another
  :class:`~engine.store.Project` in this one) never removes an import that is still going.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ProjectError
from engine.store.schema import now
from engine.store.writer import StoreWriter, run_in_steps

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no other process is guarded against
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

#: Lock file (in the project's files folder) that running imports hold shared.
LOCK_NAME = "imports.lock"

#: SQL for the first member position of dataset ``?`` that readers must not see yet (rows an
#: unfinished import appended); a very large number when no import writes to it.
HIDDEN_FROM_SQL = "COALESCE((SELECT MIN(first_position) FROM imports WHERE dataset_id = ?), 9223372036854775807)"

_SWEEP_STEP = 20_000


@dataclass(frozen=True)
class Staged:
    """An import under way.

    Attributes
    ----------
    import_id
        Its row in ``imports``.
    dataset_id
        The dataset it writes to (new and hidden, or the one appended to).
    first_position
        The member position its first row takes.
    """

    import_id: int
    dataset_id: int
    first_position: int


def begin(conn: sqlite3.Connection, dataset_id: int) -> Staged:
    """Record an import into ``dataset_id`` (inside a write task).

    Raises
    ------
    ProjectError
        If another import is already writing to that dataset.
    """
    busy = conn.execute(
        "SELECT d.name FROM imports i JOIN datasets d ON d.id = i.dataset_id WHERE i.dataset_id = ?", (dataset_id,)
    ).fetchone()
    if busy:
        raise ProjectError(
            f"Rows are already being imported into {busy[0]!r}.",
            "Wait for that import to finish (or cancel it), then import again.",
        )
    first = conn.execute(
        "SELECT COALESCE(MAX(position) + 1, 0) FROM dataset_members WHERE dataset_id = ?", (dataset_id,)
    ).fetchone()[0]
    cursor = conn.execute(
        "INSERT INTO imports (dataset_id, first_position, started_at) VALUES (?, ?, ?)", (dataset_id, first, now())
    )
    return Staged(int(cursor.lastrowid), dataset_id, int(first))


def finish(conn: sqlite3.Connection, staged: Staged) -> None:
    """Make an import's rows visible (inside the write task that also updates the dataset row)."""
    conn.execute("UPDATE datasets SET state = 'ready' WHERE id = ?", (staged.dataset_id,))
    conn.execute("DELETE FROM imports WHERE id = ?", (staged.import_id,))


def running(conn: sqlite3.Connection, dataset_id: int) -> bool:
    """Whether an unfinished import writes to ``dataset_id``."""
    return conn.execute("SELECT 1 FROM imports WHERE dataset_id = ?", (dataset_id,)).fetchone() is not None


def discard_step(conn: sqlite3.Connection, import_id: int, limit: int) -> int:
    """Delete up to ``limit`` of an import's rows, last first; at the end, its record.

    Returns
    -------
    int
        How much was deleted (0 once nothing of the import is left).
    """
    row = conn.execute("SELECT dataset_id, first_position FROM imports WHERE id = ?", (import_id,)).fetchone()
    if row is None:
        return 0
    dataset_id, first = row
    members = conn.execute(
        "SELECT position, example_id FROM dataset_members WHERE dataset_id = ? AND position >= ? "
        "ORDER BY position DESC LIMIT ?",
        (dataset_id, first, max(1, int(limit))),
    ).fetchall()
    if not members:
        conn.execute("DELETE FROM imports WHERE id = ?", (import_id,))
        conn.execute("DELETE FROM datasets WHERE id = ? AND state = 'importing'", (dataset_id,))
        return 1
    conn.execute("DELETE FROM dataset_members WHERE dataset_id = ? AND position >= ?", (dataset_id, members[-1][0]))
    # Rows the import created; nothing else can hold them, as no reader ever saw them.
    conn.execute(
        "DELETE FROM examples WHERE id IN (SELECT value FROM json_each(?)) "
        "AND NOT EXISTS (SELECT 1 FROM dataset_members m WHERE m.example_id = examples.id)",
        (json.dumps([m[1] for m in members]),),
    )
    return len(members)


def discard(writer: StoreWriter, staged: Staged) -> None:
    """Delete everything an unfinished import wrote, in short bulk transactions."""
    run_in_steps(writer, lambda conn, limit: discard_step(conn, staged.import_id, limit))


@contextlib.contextmanager
def import_lock(lock_path: Path) -> Iterator[None]:
    """Hold the shared import lock while an import runs (waits while an open sweeps)."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # releases the lock


def sweep(conn: sqlite3.Connection, lock_path: Path) -> int:
    """Discard the imports left behind by a process that died (run when a project is opened).

    Nothing is removed while any import of this file is running (its lock is held), and a
    failure to remove is logged, not raised: leftovers stay hidden and the next open retries.

    Parameters
    ----------
    conn
        A writing connection in autocommit mode (the open's own).
    lock_path
        The project's import lock file.

    Returns
    -------
    int
        The number of imports removed.
    """
    leftovers = [int(r[0]) for r in conn.execute("SELECT id FROM imports ORDER BY id")]
    if not leftovers:
        return 0
    with _exclusive(lock_path) as free:
        if not free:
            return 0
        try:
            for import_id in leftovers:
                while True:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        done = discard_step(conn, import_id, _SWEEP_STEP)
                        conn.execute("COMMIT")
                    except BaseException:
                        if conn.in_transaction:  # SQLite has already rolled back after a full disk
                            conn.execute("ROLLBACK")
                        raise
                    if not done:
                        break
        except sqlite3.Error as exc:
            log.warning("could not remove an unfinished import from %s: %s", lock_path, exc)
            return 0
    return len(leftovers)


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[bool]:
    """Try the import lock exclusively: ``True`` when no import of this file is running."""
    if fcntl is None or not lock_path.exists():  # no import ever took the lock: none runs
        yield True
        return
    fd = os.open(lock_path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
        else:
            yield True
    finally:
        os.close(fd)
