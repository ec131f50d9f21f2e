"""A project: one SQLite file (WAL mode) plus a folder beside it for model weights.

Reads go through a per-thread read-only connection (:attr:`Project.db`, a
:class:`sqlite_utils.Database`); writes go through the project's single
:class:`~engine.store.writer.StoreWriter`. Datasets and rows of an import that has not finished
are hidden from every read here (see :mod:`engine.store.staging`).

Opening a project checks it on a connection that cannot write, and writes to the file only
once it is accepted, and only what is needed (switching to WAL, pending migrations, removing a
dead import): a refused file is never touched. A file that cannot be written (a read-only file
or folder, a read-only disk) opens *read-only*: every read works, and the first write raises
:class:`~engine.errors.ProjectReadOnlyError`.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from engine.errors import (
    DatasetNameTakenError,
    DatasetNotFoundError,
    NotAProjectError,
    ProjectError,
    ProjectNotFoundError,
    ReadOnlyMigrationError,
)
from engine.store import health, liveness, schema, staging
from engine.store.failures import named_storage_error, read_only_error, sqlite_code
from engine.store.opening import APP_ID, can_read_shared, check_project_file, header_says_wal, writable
from engine.store.records import DatasetInfo, ExampleQuery
from engine.store.writer import StoreWriter, connect, connect_file_readonly

log = logging.getLogger(__name__)

PROJECT_SUFFIX = ".cbproj"

EXAMPLE_COLUMNS = (
    "id",
    "dataset_id",
    "ext_id",
    "text",
    "premise",
    "hypothesis",
    "label",
    "split",
    "source",
    "method",
    "parent_id",
    "target_label",
    "created_at",
    "meta",
)

#: Columns of ``examples`` the dataset table may sort on.
SORTABLE = {"id", "ext_id", "text", "premise", "hypothesis", "label", "split", "source", "length"}


class Project:
    """An open project file.

    Use :meth:`create` or :meth:`open`; close with :meth:`close` (or a ``with`` block).
    """

    def __init__(self, path: Path, *, readonly: bool = False, immutable: bool = False) -> None:
        self.path = Path(path)
        #: Whether the file cannot be written here (opened read-only; writes raise).
        self.readonly = readonly
        self._immutable = immutable
        #: Where the writer reports that it waits for another process (see :class:`StoreWriter`).
        self.on_wait: Callable[[str], None] | None = None
        self._local = threading.local()
        self._writer: StoreWriter | None = None
        self._writer_lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def create(cls, path: str | Path, *, exist_ok: bool = False) -> Project:
        """Create a new project file (and its files folder) at ``path``.

        Raises
        ------
        ProjectError
            If a file already exists there and ``exist_ok`` is false.
        """
        path = Path(path)
        if path.exists() and not exist_ok:
            raise ProjectError(
                f"{path} already exists.", "Open it instead, or choose another file name."
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not os.access(path.parent, os.W_OK):
                raise read_only_error(path, "creating a project there")
            conn = connect(path)
        except (OSError, sqlite3.Error) as exc:
            raise named_storage_error(exc, path, "creating the project") or read_only_error(
                path, "creating a project there"
            ) from exc
        try:
            if not path.stat().st_size or schema.current_version(conn) == 0:
                conn.execute(f"PRAGMA application_id = {APP_ID}")
            sqlite_utils.Database(conn).enable_wal()
            schema.migrate(conn)
            conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('created_by', 'Counterbias Studio')"
            )
        finally:
            conn.close()
        return cls.open(path)

    @classmethod
    def open(cls, path: str | Path, *, readonly: bool = False) -> Project:
        """Open an existing project, running pending schema migrations.

        The file is checked without writing to it; a file that is refused is left byte for byte
        as it was. An import whose process died (see :func:`engine.store.staging.sweep`) is
        removed; a run whose process died is marked ``interrupted``
        (:func:`engine.store.liveness.mark_interrupted`). A file or folder that cannot be written opens
        read-only (:attr:`readonly`).

        Parameters
        ----------
        path
            The ``.cbproj`` file.
        readonly
            Open read-only even if the file could be written (nothing is migrated or swept).

        Raises
        ------
        ProjectNotFoundError, NotAProjectError, SchemaTooNewError, ProjectDamagedError
        ReadOnlyMigrationError
            A read-only file written by an older version (its schema must be upgraded first).
        """
        path = Path(path)
        if not path.is_file():
            raise ProjectNotFoundError(
                f"No project file at {path}.", "Check the path, or create a project with 'init'."
            )
        readonly = readonly or not writable(path)
        try:
            # Checked on a connection that cannot write; with no -wal file beside it the main file
            # is the whole database, and "immutable" reads it without creating -wal/-shm files.
            shared = Path(f"{path}-wal").exists() and (not readonly or can_read_shared(path))
            conn = connect_file_readonly(path, immutable=not shared)
            try:
                check_project_file(conn, path)
                version = schema.current_version(conn)
                leftovers = conn.execute("SELECT 1 FROM imports LIMIT 1").fetchone() if version >= 3 else None
            finally:
                conn.close()
            if readonly:
                if version < schema.SCHEMA_VERSION:
                    raise ReadOnlyMigrationError(
                        f"{path} was written by an older Counterbias Studio (schema {version}; this build needs "
                        f"{schema.SCHEMA_VERSION}) and is read-only, so it cannot be upgraded.",
                        "Copy the project (with its _files folder) to a folder you can write to and open the "
                        "copy, or make the file writable.",
                    )
                return cls(path, readonly=True, immutable=not can_read_shared(path))
            is_wal = header_says_wal(path)
            if not is_wal or version < schema.SCHEMA_VERSION or leftovers:
                conn = connect(path)
                try:
                    if not is_wal:
                        sqlite_utils.Database(conn).enable_wal()
                    schema.migrate(conn)
                    if leftovers:
                        staging.sweep(conn, _files_dir_of(path) / staging.LOCK_NAME)
                finally:
                    conn.close()
            liveness.mark_interrupted(path, connect)  # runs whose process is gone become resumable
        except sqlite3.DatabaseError as exc:
            named = named_storage_error(exc, path, "opening the project")
            if named is not None:
                raise named from exc
            if sqlite_code(exc) == health.SQLITE_CORRUPT:
                raise health.corrupt_error(path, str(exc)) from exc
            raise NotAProjectError(
                f"{path} is not a readable SQLite project ({exc}).",
                "Choose a .cbproj file made by Counterbias Studio.",
            ) from exc
        return cls(path)

    def close(self) -> None:
        """Flush pending writes and close this thread's connections."""
        with self._writer_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
        db = getattr(self._local, "db", None)
        if db is not None:
            db.conn.close()
            self._local.db = None

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ connections
    @property
    def db(self) -> sqlite_utils.Database:
        """This thread's read-only connection."""
        db = getattr(self._local, "db", None)
        if db is None:
            if self.readonly:
                conn = connect_file_readonly(self.path, immutable=self._immutable)
            else:
                conn = connect(self.path, readonly=True)
            db = sqlite_utils.Database(conn)
            self._local.db = db
        return db

    @property
    def writer(self) -> StoreWriter:
        """The project's single writer (started on first use).

        Raises
        ------
        ProjectReadOnlyError
            If the project was opened read-only.
        """
        if self.readonly:
            raise read_only_error(self.path, "writing to it")
        with self._writer_lock:
            if self._writer is None:
                self._writer = StoreWriter(self.path, on_wait=self._report_wait)
            return self._writer

    def _report_wait(self, message: str) -> None:
        if self.on_wait is not None:
            self.on_wait(message)
        else:
            log.warning("%s", message)

    @property
    def files_dir(self) -> Path:
        """Folder beside the project file for model weights and caches (created on demand)."""
        folder = _files_dir_of(self.path)
        folder.mkdir(exist_ok=True)
        return folder

    @property
    def import_lock_path(self) -> Path:
        """The lock file a running import holds (see :func:`engine.store.staging.import_lock`)."""
        return _files_dir_of(self.path) / staging.LOCK_NAME

    @property
    def models_dir(self) -> Path:
        """Project-relative folder for trained model weights."""
        folder = self.files_dir / "models"
        folder.mkdir(exist_ok=True)
        return folder

    @property
    def schema_version(self) -> int:
        return schema.current_version(self.db.conn)

    # ------------------------------------------------------------------ datasets
    def datasets(self) -> list[DatasetInfo]:
        """All dataset versions, oldest first (not those still being imported)."""
        return [
            DatasetInfo.from_row(r)
            for r in self.db.query("SELECT * FROM datasets WHERE state = 'ready' ORDER BY id")
        ]

    def dataset(self, ref: int | str) -> DatasetInfo:
        """A dataset version by id or name (not one still being imported).

        Raises
        ------
        DatasetNotFoundError
        """
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
            rows = list(self.db.query("SELECT * FROM datasets WHERE id = ? AND state = 'ready'", [int(ref)]))
        else:
            rows = []
        if not rows:
            rows = list(self.db.query("SELECT * FROM datasets WHERE name = ? AND state = 'ready'", [str(ref)]))
        if not rows:
            names = ", ".join(d.name for d in self.datasets()) or "none yet"
            raise DatasetNotFoundError(
                f"No dataset {ref!r} in {self.path.name}.", f"Use one of: {names}."
            )
        return DatasetInfo.from_row(rows[0])

    def unique_dataset_name(self, base: str) -> str:
        """``base``, or ``base (2)``, ``base (3)``… whichever is free (also of imports under way).

        ``base`` is first made an allowed name (:func:`engine.store.names.default_name`): a name derived
        from one stored before the naming rules ("sst2/train (z-filtered)") gets ``-`` for ``/``.
        """
        from engine.store.names import default_name

        base = default_name(base)
        taken = {r["name"] for r in self.db.query("SELECT name FROM datasets")}
        if base not in taken:
            return base
        n = 2
        while f"{base} ({n})" in taken:
            n += 1
        return f"{base} ({n})"

    def check_name_free(self, name: str) -> None:
        """Raise :class:`DatasetNameTakenError` if a dataset (or an import under way) is called ``name``, and
        :class:`~engine.errors.DatasetNameError` if no new dataset may be called so (:mod:`engine.store.names`)."""
        from engine.store.names import check_dataset_name

        check_dataset_name(name)
        row = self.db.execute("SELECT state FROM datasets WHERE name = ?", [name]).fetchone()
        if row and row[0] == "importing":
            raise DatasetNameTakenError(
                f"A dataset called {name!r} is being imported.",
                "Choose another name, or wait for that import to finish.",
            )
        if row:
            raise DatasetNameTakenError(
                f"A dataset called {name!r} already exists.", "Choose another name."
            )

    # ------------------------------------------------------------------ examples
    def example_ids(self, query: ExampleQuery) -> np.ndarray:
        """Ids of the examples matching ``query``, in its order (int64 array)."""
        sql, params = _ids_sql(query)
        cursor = self.db.conn.execute(sql, params)
        out = np.fromiter((r[0] for r in cursor), dtype=np.int64)
        return out

    def examples(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        """Example rows for ``ids``, in the order given (unknown ids are skipped)."""
        ids = [int(i) for i in ids]
        if not ids:
            return []
        found: dict[int, dict[str, Any]] = {}
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            marks = ",".join("?" * len(chunk))
            for row in self.db.query(f"SELECT * FROM examples WHERE id IN ({marks})", chunk):
                found[row["id"]] = row
        return [found[i] for i in ids if i in found]

    def iter_examples(self, dataset_id: int, *, batch_size: int = 5000) -> Iterator[dict[str, Any]]:
        """Every example of a dataset version in position order, streamed."""
        last = -1
        while True:
            rows = list(
                self.db.query(
                    "SELECT m.position AS _pos, e.* FROM dataset_members m "
                    "JOIN examples e ON e.id = m.example_id "
                    f"WHERE m.dataset_id = ? AND m.position > ? AND m.position < {staging.HIDDEN_FROM_SQL} "
                    "ORDER BY m.position LIMIT ?",
                    [dataset_id, last, dataset_id, batch_size],
                )
            )
            if not rows:
                return
            last = rows[-1]["_pos"]
            for row in rows:
                row.pop("_pos")
                yield row

    def label_counts(self, dataset_id: int) -> dict[str, int]:
        """Examples per label in a dataset version."""
        return {
            r["label"]: r["n"]
            for r in self.db.query(
                "SELECT e.label, COUNT(*) AS n FROM dataset_members m JOIN examples e "
                f"ON e.id = m.example_id WHERE m.dataset_id = ? AND m.position < {staging.HIDDEN_FROM_SQL} "
                "GROUP BY e.label ORDER BY e.label",
                [dataset_id, dataset_id],
            )
        }

    def split_counts(self, dataset_id: int) -> dict[str | None, int]:
        """Examples per split in a dataset version."""
        return {
            r["split"]: r["n"]
            for r in self.db.query(
                "SELECT e.split, COUNT(*) AS n FROM dataset_members m JOIN examples e "
                f"ON e.id = m.example_id WHERE m.dataset_id = ? AND m.position < {staging.HIDDEN_FROM_SQL} "
                "GROUP BY e.split ORDER BY e.split",
                [dataset_id, dataset_id],
            )
        }

    # ------------------------------------------------------------------ writes
    def add_derived_dataset(
        self,
        name: str,
        *,
        kind: str,
        parent_id: int,
        example_ids: Sequence[int],
        params: dict[str, Any] | None = None,
        source: str | None = None,
    ) -> DatasetInfo:
        """Store a new version made of existing examples (e.g. a filtered subset)."""
        parent = self.dataset(parent_id)
        ids = [int(i) for i in example_ids]

        def write(conn: sqlite3.Connection) -> int:
            dataset_id = insert_dataset(
                conn,
                name=name,
                kind=kind,
                parent_id=parent.id,
                task=parent.task,
                labels=parent.labels,
                source=source,
                params=params or {},
            )
            conn.executemany(
                "INSERT INTO dataset_members VALUES (?, ?, ?)",
                ((dataset_id, pos, eid) for pos, eid in enumerate(ids)),
            )
            conn.execute("UPDATE datasets SET row_count = ? WHERE id = ?", (len(ids), dataset_id))
            return dataset_id

        self.check_name_free(name)
        return self.dataset(self.writer.run(write))

    def delete_dataset(self, dataset_id: int) -> None:
        """Delete a dataset version and the example rows no other version holds.

        Raises
        ------
        ProjectError
            If it has derived versions, or rows are being imported into it.
        """

        def write(conn: sqlite3.Connection) -> None:
            if staging.running(conn, dataset_id):
                raise ProjectError(
                    f"Rows are being imported into dataset {dataset_id}.",
                    "Wait for the import to finish (or cancel it), then delete the dataset.",
                )
            children = conn.execute(
                "SELECT name FROM datasets WHERE parent_id = ?", (dataset_id,)
            ).fetchall()
            if children:
                raise ProjectError(
                    f"Dataset {dataset_id} has derived versions ({', '.join(c[0] for c in children)}).",
                    "Delete those first.",
                )
            conn.execute("DELETE FROM dataset_members WHERE dataset_id = ?", (dataset_id,))
            # Example rows that no other version holds go, with every result computed on them.
            conn.execute("DROP TABLE IF EXISTS temp.doomed")
            conn.execute(
                "CREATE TEMP TABLE doomed AS SELECT id FROM examples WHERE dataset_id = ? AND id NOT IN "
                "(SELECT example_id FROM dataset_members)",
                (dataset_id,),
            )
            doomed = "(SELECT id FROM temp.doomed)"
            conn.execute(f"DELETE FROM annotations WHERE dataset_id = ? OR example_id IN {doomed}", (dataset_id,))
            conn.execute("DELETE FROM annotation_scores WHERE dataset_id = ?", (dataset_id,))
            conn.execute(f"DELETE FROM decisions WHERE candidate_id IN (SELECT id FROM candidates WHERE example_id IN {doomed})")
            for table in ("candidates", "triples", "attributions", "word_votes", "retrievals"):
                conn.execute(f"DELETE FROM {table} WHERE example_id IN {doomed}")
            conn.execute(f"UPDATE examples SET parent_id = NULL WHERE parent_id IN {doomed}")
            conn.execute(f"DELETE FROM examples WHERE id IN {doomed}")
            conn.execute("DROP TABLE temp.doomed")
            # Vote sets summarise this version only; runs and models stay as provenance.
            conn.execute("DELETE FROM word_votes WHERE vote_set_id IN (SELECT id FROM vote_sets WHERE dataset_id = ?)", (dataset_id,))
            conn.execute("DELETE FROM vote_sets WHERE dataset_id = ?", (dataset_id,))
            conn.execute("DELETE FROM test_sets WHERE dataset_id = ?", (dataset_id,))  # results stay
            conn.execute("DELETE FROM al_results WHERE dataset_id = ?", (dataset_id,))
            conn.execute("DELETE FROM patterns WHERE dataset_id = ?", (dataset_id,))
            conn.execute("UPDATE runs SET dataset_id = NULL WHERE dataset_id = ?", (dataset_id,))
            conn.execute("DELETE FROM datasets WHERE id = ?", (dataset_id,))

        self.writer.run(write)

    def counts(self) -> dict[str, int]:
        """Row counts of the main tables (for ``info``)."""
        tables = ("datasets", "examples", "runs", "models", "attributions", "triples", "candidates", "decisions", "llm_cache")
        return {t: self.db[t].count for t in tables}


def insert_dataset(
    conn: sqlite3.Connection,
    *,
    name: str,
    kind: str,
    task: str,
    labels: Sequence[str],
    parent_id: int | None = None,
    source: str | None = None,
    params: dict[str, Any] | None = None,
    state: str = "ready",
) -> int:
    """Insert a ``datasets`` row inside a write task and return its id.

    ``state="importing"`` hides it from every listing until the import finishes
    (:func:`engine.store.staging.finish`).
    """
    cursor = conn.execute(
        "INSERT INTO datasets (name, kind, parent_id, task, labels, source, params, row_count, created_at, state) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
        (name, kind, parent_id, task, json.dumps(list(labels)), source, json.dumps(params or {}), schema.now(),
         state),
    )
    return int(cursor.lastrowid)


def _files_dir_of(path: Path) -> Path:
    return path.with_name(path.stem + "_files")


def _ids_sql(q: ExampleQuery) -> tuple[str, list[Any]]:
    where = ["m.dataset_id = ?", f"m.position < {staging.HIDDEN_FROM_SQL}"]
    params: list[Any] = [q.dataset_id, q.dataset_id]
    if q.labels is not None:
        where.append(f"e.label IN ({','.join('?' * len(q.labels))})")
        params.extend(q.labels)
    if q.splits is not None:
        where.append(f"e.split IN ({','.join('?' * len(q.splits))})")
        params.extend(q.splits)
    if q.search:
        needle = "%" + q.search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append(
            "(e.text LIKE ? ESCAPE '\\' OR e.premise LIKE ? ESCAPE '\\' OR e.hypothesis LIKE ? ESCAPE '\\')"
        )
        params.extend([needle] * 3)
    if q.example_ids is not None:
        where.append("m.example_id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(q.example_ids)))
    direction = "DESC" if q.descending else "ASC"
    if q.order_by == "position":
        order = f"m.position {direction}"
    elif q.order_by == "length":
        order = f"length(coalesce(e.text, '') || coalesce(e.hypothesis, '')) {direction}, m.position"
    elif q.order_by in SORTABLE:
        order = f"e.{q.order_by} {direction}, m.position"
    else:
        raise ValueError(f"cannot sort on {q.order_by!r}; use one of {sorted(SORTABLE)}")
    sql = (
        "SELECT m.example_id FROM dataset_members m JOIN examples e ON e.id = m.example_id "
        f"WHERE {' AND '.join(where)} ORDER BY {order}"
    )
    return sql, params
