"""Before/after checks for the "nothing may be destroyed" tests (issue 52).

A hostile or careless command must leave the project's content and every file outside the
project exactly as they were. :func:`snapshot` records both; :func:`assert_unchanged` compares.

* the project's **content digest**: SHA-256 of the SQL dump of the database, read on a
  connection that cannot write (WAL checkpoints and page layout do not change it);
* its **integrity**: ``PRAGMA integrity_check`` is ``ok``;
* **every file under a folder** (default: the project's folder, i.e. the test's ``tmp_path``):
  SHA-256 of its bytes, its kind (file, link, FIFO, device) and its mode; the project file,
  its ``-wal``/``-shm`` and lock files are left out (opening a project may checkpoint the WAL or
  take a lock without changing any content).

Examples
--------
>>> before = snapshot(project_path)            # doctest: +SKIP
>>> ... run the hostile command ...
>>> assert_unchanged(before, snapshot(project_path))  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Snapshot", "assert_unchanged", "content_digest", "files_digest", "snapshot"]


def content_digest(project: Path) -> str:
    """SHA-256 of the SQL dump of ``project``, read without writing to it."""
    conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        h = hashlib.sha256()
        for line in conn.iterdump():
            h.update(line.encode("utf-8", "surrogatepass"))
            h.update(b"\n")
        return h.hexdigest()
    finally:
        conn.close()


def integrity(project: Path) -> str:
    """``PRAGMA integrity_check`` of ``project`` (``"ok"`` when sound)."""
    conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        return "; ".join(r[0] for r in conn.execute("PRAGMA integrity_check"))
    finally:
        conn.close()


def _skipped(rel: str, project_name: str) -> bool:
    if rel in (project_name, f"{project_name}-wal", f"{project_name}-shm", f"{project_name}-journal"):
        return True
    return rel.endswith(".lock") or "/locks/" in f"/{rel}"


def files_digest(root: Path, *, project: Path | None = None) -> dict[str, tuple[str, str, int]]:
    """Every entry under ``root``: relative path -> (kind, SHA-256 or link target, mode bits).

    Symbolic links are recorded, never followed; devices and FIFOs by their kind only.
    """
    out: dict[str, tuple[str, str, int]] = {}
    name = project.name if project is not None else ""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for entry in dirnames + filenames:
            full = Path(dirpath) / entry
            rel = full.relative_to(root).as_posix()
            if _skipped(rel, name):
                continue
            st = full.lstat()
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full), mode)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", "", mode)
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", hashlib.sha256(full.read_bytes()).hexdigest(), mode)
            elif stat.S_ISFIFO(st.st_mode):
                out[rel] = ("fifo", "", mode)
            elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                out[rel] = ("device", str(st.st_rdev), mode)
            else:
                out[rel] = ("other", "", mode)
    return out


@dataclass(frozen=True)
class Snapshot:
    """What :func:`snapshot` recorded."""

    content: str
    integrity: str
    files: dict[str, tuple[str, str, int]] = field(default_factory=dict)


def snapshot(project: Path, root: Path | None = None) -> Snapshot:
    """The project's content digest and integrity, and every file under ``root``.

    ``root`` defaults to the project's folder.
    """
    project = Path(project)
    return Snapshot(content_digest(project), integrity(project),
                    files_digest(Path(root) if root is not None else project.parent, project=project))


def assert_unchanged(before: Snapshot, after: Snapshot) -> None:
    """Assert the project's content, its integrity and every recorded file are as before."""
    assert after.integrity == "ok", after.integrity
    assert after.content == before.content, "the project's content changed"
    changed = sorted(k for k in before.files.keys() | after.files.keys() if before.files.get(k) != after.files.get(k))
    assert not changed, f"files changed, added or removed: {changed}"
