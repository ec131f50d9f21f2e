"""Low-level storage failures (SQLite result codes, ``OSError`` numbers) as named errors.

SQLite and the operating system report a full disk, a read-only file and a locked file in
several ways: ``SQLITE_FULL`` ("database or disk is full"), ``ENOSPC`` / ``EFBIG`` / ``EDQUOT``
from a plain write (``EFBIG`` is what a file-size limit gives), ``SQLITE_READONLY`` ("attempt to
write a readonly database"), ``EROFS`` / ``EACCES``, ``SQLITE_BUSY`` ("database is locked").
:func:`named_storage_error` turns each into the one :class:`~engine.errors.CounterbiasError`
the user should see, or returns ``None`` for anything else (a bug, which stays a traceback).
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

from engine.errors import CounterbiasError, DiskFullError, ProjectBusyError, ProjectReadOnlyError

#: Primary SQLite result codes (the low byte of ``sqlite3.Error.sqlite_errorcode``).
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN = 5, 6, 8, 10, 13, 14

#: ``OSError`` numbers that mean "no room to write".
DISK_FULL_ERRNOS = frozenset(e for e in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", None)) if e)
#: ``OSError`` numbers that mean "not allowed to write here".
READ_ONLY_ERRNOS = frozenset((errno.EROFS, errno.EACCES, errno.EPERM))

_FULL_HINT = "Free some space on that disk (or move the file to a disk with room), then run it again. "
_FULL_KEPT = {
    "project": "The project is unchanged: rows written before the disk filled up are hidden, and removed "
    "the next time the project is opened with room to spare.",
    "file": "No partial file was left behind.",
}


def describe_bytes(n: int | None) -> str:
    """``1536`` -> ``"1.5 KiB"`` (``"unknown"`` for ``None``)."""
    if n is None:
        return "unknown"
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"  # pragma: no cover


def free_bytes(path: Path) -> int | None:
    """Free bytes on the disk holding ``path`` (its nearest existing folder), or ``None``."""
    folder = Path(path)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder if folder.is_dir() else folder.parent).free
    except OSError:
        return None


def disk_full_error(path: Path, action: str, *, needed: int | None = None, kind: str = "project") -> DiskFullError:
    """The named error for running out of room while ``action`` (e.g. "writing the export").

    ``kind`` is ``"project"`` or ``"file"`` (an export): what the hint says was kept.
    """
    free = free_bytes(path)
    detail = f"{describe_bytes(free)} free there" if free is not None else "free space unknown"
    if needed is not None:
        detail += f"; about {describe_bytes(needed)} more were needed"
    return DiskFullError(
        f"The disk is full (or a file-size limit was reached) while {action} at {path} ({detail}).",
        _FULL_HINT + _FULL_KEPT[kind],
    )


def read_only_error(path: Path, action: str) -> ProjectReadOnlyError:
    """The named error for a project file (or folder) that cannot be written."""
    return ProjectReadOnlyError(
        f"The project file {path} is read-only (it or its folder cannot be written), so {action} is not possible.",
        "Copy the project (with its _files folder) to a folder you can write to, or change the file's and "
        "folder's permissions; reading commands (info, export) work on it as it is.",
    )


def busy_error(path: Path, waited: float) -> ProjectBusyError:
    """The named error for another process holding the project's write lock without progress."""
    return ProjectBusyError(
        f"Another process kept {path} locked for writing and made no progress for {waited:.0f} s.",
        "Wait for the other program (an import, a training run…) to finish, or close it, then run this again.",
    )


def sqlite_code(exc: BaseException) -> int | None:
    """The primary SQLite result code of ``exc`` (``None`` if it is not an SQLite error)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(exc, sqlite3.Error) and isinstance(code, int):
        return code & 0xFF
    if isinstance(exc, sqlite3.OperationalError):  # no code recorded: read the message
        text = str(exc)
        if "database or disk is full" in text:
            return SQLITE_FULL
        if "readonly database" in text:
            return SQLITE_READONLY
        if "database is locked" in text:
            return SQLITE_BUSY
    return None


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` says another connection holds the lock (``SQLITE_BUSY``/``SQLITE_LOCKED``)."""
    return sqlite_code(exc) in (SQLITE_BUSY, SQLITE_LOCKED)


def named_storage_error(exc: BaseException, path: Path, action: str) -> CounterbiasError | None:
    """The named error for a storage failure ``exc`` met while ``action`` on ``path``, or ``None``.

    Parameters
    ----------
    exc
        What SQLite or the operating system raised.
    path
        The file being written (the project, or an export).
    action
        What was being done, for the message ("writing to the project", "writing the export").
    """
    if isinstance(exc, CounterbiasError):
        return exc
    code = sqlite_code(exc)
    if code == SQLITE_FULL:
        return disk_full_error(path, action)
    if code == SQLITE_IOERR and (free_bytes(path) or 0) < 1 << 20:  # EFBIG/EIO with no room left
        return disk_full_error(path, action)
    if code == SQLITE_READONLY:
        return read_only_error(path, action)
    if code in (SQLITE_BUSY, SQLITE_LOCKED):
        return ProjectBusyError(
            f"Another process holds a lock on {path}, so {action} is not possible now.",
            "Wait for the other program (an import, a training run…) to finish, or close it, then run this again.",
        )
    if isinstance(exc, OSError):
        if exc.errno in DISK_FULL_ERRNOS:
            return disk_full_error(path, action, kind="file")
    return None
