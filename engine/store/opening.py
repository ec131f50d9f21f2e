"""The checks that come before a project file is opened: can it be written, is its header WAL, can a shared
read-only connection read it, and is it a project this build can open (:func:`check_project_file`, reads only)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from engine.errors import NotAProjectError, ProjectDamagedError, SchemaTooNewError
from engine.store import health, schema
from engine.store.writer import connect_file_readonly

__all__ = ["APP_ID", "can_read_shared", "check_project_file", "header_says_wal", "writable"]

#: Written to ``PRAGMA application_id`` of every project ('CBS1').
APP_ID = 0x43425331


def writable(path: Path) -> bool:
    """Whether SQLite can write ``path`` and create its ``-wal``/``-shm`` files beside it.

    ``os.access`` also answers "no" on a read-only disk (``EROFS``), for root too.
    """
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def header_says_wal(path: Path) -> bool:
    """Whether the SQLite header of ``path`` marks it as a write-ahead-log database."""
    with open(path, "rb") as f:
        header = f.read(20)
    return len(header) == 20 and header[18] == 2 and header[19] == 2


def can_read_shared(path: Path) -> bool:
    """Whether ``mode=ro`` can read ``path`` (its -shm file exists or can be created).

    If not (a WAL database in a read-only folder), only an ``immutable`` connection can read it.
    """
    try:
        conn = connect_file_readonly(path)
    except sqlite3.Error:
        return False
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return True
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def check_project_file(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a file that is not a project this build can open (reads only).

    Raises
    ------
    NotAProjectError, SchemaTooNewError, ProjectDamagedError
    ProjectCorruptError, ProjectColumnsError, StoredValueError
        From the checks of :mod:`engine.store.health` (pages, columns, JSON columns).
    StoredPathError, StoredLinkError
        A stored path leads out of the project's ``_files`` folder (:mod:`engine.store.paths`).
    """
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id != APP_ID:
        raise NotAProjectError(
            f"{path} is not a Counterbias Studio project.",
            "Choose a .cbproj file made by Counterbias Studio, or create a new project.",
        )
    version = schema.current_version(conn)
    if version > schema.SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"{path} was written by a newer Counterbias Studio (schema {version}, "
            f"this build knows {schema.SCHEMA_VERSION}).",
            "Update Counterbias Studio to open it.",
        )
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if version == 0 and tables:
        raise ProjectDamagedError(
            f"{path} is a Counterbias Studio project without its schema_version table (it holds "
            f"{len(tables)} other tables), so its schema cannot be known. The file was not changed.",
            "Open a backup of the project, or re-create the project and import the data again.",
        )
    expected = schema.tables_at(version)
    missing = sorted(expected - tables)
    if missing:
        raise ProjectDamagedError(
            f"{path} is missing tables of schema {version}: {', '.join(missing)}. The file was not changed.",
            "Open a backup of the project, or re-create the project and import the data again.",
        )
    health.check_pages(conn, path)
    health.check_columns(conn, path, version)
    health.check_json(conn, path, version)
    from engine.store.paths import check_stored_paths

    check_stored_paths(conn, path)  # a shared project's model paths may not lead out of its _files folder
