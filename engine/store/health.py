"""Checks of a project file's health, made by :meth:`engine.store.Project.open` before it accepts the file.

Every check here only reads (it runs on the open's connection that cannot write), so a file that
fails one is refused and left byte for byte as it was:

* :func:`check_pages`: SQLite's own check of every page and index: ``PRAGMA integrity_check`` for
  files up to :data:`FULL_CHECK_MAX_BYTES`, the faster ``PRAGMA quick_check`` (pages and records,
  not whether each index matches its table) above;
* :func:`check_columns`: every table holds the columns its schema version has, the expected columns
  derived from the migrations themselves (:func:`expected_columns`), never from a hand-kept list;
* :func:`check_json`: the JSON columns every listing parses (dataset labels and parameters, model
  parameters and metrics, …) hold JSON of the right shape.

:func:`stored_json` parses one stored JSON value for the readers, with a named error naming the
table, column and row when it cannot.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from pathlib import Path
from typing import Any

from engine.errors import ProjectColumnsError, ProjectCorruptError, StoredValueError
from engine.store import schema

__all__ = [
    "FULL_CHECK_MAX_BYTES",
    "SQLITE_CORRUPT",
    "JSON_COLUMNS",
    "check_columns",
    "check_json",
    "check_pages",
    "corrupt_error",
    "expected_columns",
    "stored_json",
]

#: SQLite's primary result code for a damaged file ("database disk image is malformed").
SQLITE_CORRUPT = 11

#: Files up to this size (main file plus write-ahead log) get the full ``integrity_check`` (about half a
#: second at this size); larger ones ``quick_check``, which skips matching indexes to their tables and
#: reads about 100 MB a second (measured: 35 MB, integrity_check 1.1 s, quick_check 0.3 s).
FULL_CHECK_MAX_BYTES = 16 << 20

#: JSON columns checked on open: ``(table, column, JSON type it must hold)``. Their tables stay small
#: (one row per dataset, model, run…) and every listing parses them.
JSON_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("datasets", "labels", "array"),
    ("datasets", "params", "object"),
    ("models", "params", "object"),
    ("models", "metrics", "object"),
    ("runs", "params", "object"),
    ("vote_sets", "params", "object"),
    ("corpora", "params", "object"),
)

_RESTORE_HINT = (
    "Open a backup of the project, or re-create the project and import the data again (the sqlite3 tool's "
    "'.recover' command, run on a copy of the file, may save its readable rows)."
)

#: How many problems ``integrity_check`` lists at most (the message names the first few).
_MAX_PROBLEMS = 20


def corrupt_error(path: Path, detail: str) -> ProjectCorruptError:
    """The named error for a project file SQLite finds damaged (``detail``: what SQLite said)."""
    return ProjectCorruptError(
        f"{path} is damaged: SQLite's check of the file failed ({detail}). The file was not changed.",
        _RESTORE_HINT,
    )


def check_pages(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a file whose pages or indexes SQLite finds damaged.

    Parameters
    ----------
    conn
        A connection to ``path`` that cannot write.
    path
        The project file (its size, and its ``-wal`` file's, choose the check).

    Raises
    ------
    ProjectCorruptError
        ``integrity_check``/``quick_check`` reported a problem, or reading a page failed.
    """
    size = _size(path) + _size(Path(f"{path}-wal"))
    pragma = "integrity_check" if size <= FULL_CHECK_MAX_BYTES else "quick_check"
    try:
        problems = [str(r[0]) for r in conn.execute(f"PRAGMA {pragma}({_MAX_PROBLEMS})")]
    except sqlite3.DatabaseError as exc:
        problems = [str(exc)]
    if problems != ["ok"]:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise corrupt_error(path, f"{pragma}: {shown}")


@functools.lru_cache(maxsize=None)
def expected_columns(version: int) -> dict[str, tuple[str, ...]]:
    """Each table's columns at schema ``version``, read from a fresh in-memory database built by the migrations.

    Examples
    --------
    >>> "state" in expected_columns(3)["datasets"], "state" in expected_columns(2)["datasets"]
    (True, False)
    """
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
        for script in schema.MIGRATIONS[:version]:
            for statement in schema._split_sql(script):
                conn.execute(statement)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: tuple(r[1] for r in conn.execute(f'PRAGMA table_info("{t}")')) for t in tables}
    finally:
        conn.close()


def check_columns(conn: sqlite3.Connection, path: Path, version: int) -> None:
    """Refuse a file in which a table lacks columns schema ``version`` gives it.

    Tables that are missing altogether are refused before (``Project.open``); columns the file
    has beyond the expected ones are left alone (no reader depends on their absence).

    Raises
    ------
    ProjectColumnsError
        Naming each table and its missing columns.
    """
    missing: list[str] = []
    for table, columns in sorted(expected_columns(version).items()):
        present = {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}
        if not present:
            continue  # a missing table is its own error
        lacking = [c for c in columns if c not in present]
        if lacking:
            missing.append(f"{table} ({', '.join(lacking)})")
    if missing:
        raise ProjectColumnsError(
            f"{path} is damaged: tables lack columns of schema {version}: {'; '.join(missing)}. "
            "The file was not changed.",
            _RESTORE_HINT,
        )


def check_json(conn: sqlite3.Connection, path: Path, version: int) -> None:
    """Refuse a file whose :data:`JSON_COLUMNS` hold a value that is not JSON of the right type.

    Raises
    ------
    StoredValueError
        Naming the first bad row of each column (table, column, row id).
    """
    tables = expected_columns(version)
    bad: list[str] = []
    for table, column, kind in JSON_COLUMNS:
        if column not in tables.get(table, ()):
            continue
        row = conn.execute(
            f'SELECT id, "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL AND "{column}" != \'\' '
            f'AND CASE WHEN json_valid("{column}") THEN json_type("{column}") != ? ELSE 1 END ORDER BY id LIMIT 1',
            (kind,),
        ).fetchone()
        if row is not None:
            bad.append(f"{table}.{column} of row {row[0]} ({_describe(row[1], kind)})")
    if bad:
        raise StoredValueError(
            f"{path} is damaged: stored values cannot be read: {'; '.join(bad)}. The file was not changed.",
            _RESTORE_HINT,
        )


def stored_json(value: Any, table: str, column: str, row_id: Any, *, default: Any = None) -> Any:
    """Parse a JSON value stored in ``table.column`` of row ``row_id``.

    Parameters
    ----------
    value
        The stored text (``None`` or ``""`` give ``default``).
    table, column, row_id
        Where it is stored (for the message).
    default
        What an empty value means.

    Raises
    ------
    StoredValueError
        The value is not JSON.

    Examples
    --------
    >>> stored_json('["neg", "pos"]', "datasets", "labels", 1)
    ['neg', 'pos']
    """
    if value is None or value == "":
        return default
    try:
        return json.loads(value)
    except (TypeError, ValueError) as exc:
        raise StoredValueError(
            f"The value stored in {table}.{column} of row {row_id} is not JSON ({exc}).",
            _RESTORE_HINT,
        ) from exc


def _describe(value: Any, kind: str) -> str:
    text = value if isinstance(value, str) else repr(value)
    shown = text if len(text) <= 40 else text[:37] + "..."
    try:
        json.loads(text)
    except (TypeError, ValueError):
        return f"not JSON: {shown!r}"
    return f"not a JSON {kind}: {shown!r}"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
