"""Where output files may go, and how they are written: one guard and one atomic writer.

Every verb and dialog that writes a file the user named (exports, statistics CSVs, reports,
plots, vote JSONL) goes through :func:`check_output_path` and :func:`open_output` /
:func:`output_path`, so that no output option can destroy data:

* **a project is never a target**: the open project (``project=``), its ``-wal``/``-shm``/
  ``-journal`` files, its ``_files`` folder and anything inside it are refused, whatever the
  spelling (``sub/../p.cbproj``, a symbolic or hard link). Without ``project=`` too, any
  existing file that *is* a Counterbias project (read from its SQLite header, never written),
  its side files, and anything inside the ``_files`` folder of a project beside it are refused;
* **only regular files are replaced**: a device, FIFO or socket is refused before it is opened
  (a FIFO never blocks), a folder is refused, and a symbolic link is written through only when
  the caller asks (``follow_symlinks=True``): then the file it points to is replaced, and the
  link stays a link;
* **writes are atomic**: the data go to a hidden ``.<name>.<random>.part`` file beside the
  target, locked while it is written, synced and renamed over the target when complete; a
  failure leaves no part file. Part files of the same target left by a killed writer (their
  lock is free) are removed by the next write. A new file gets ``0o666 & ~umask`` (like any
  file the user's programs make); a replaced file keeps its permission bits.

Examples
--------
>>> with open_output("table.csv", project=project.path) as f:  # doctest: +SKIP
...     f.write("a,b\\r\\n")
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from engine.errors import (
    CounterbiasError,
    OutputInProjectFolderError,
    OutputIsFolderError,
    OutputIsProjectError,
    OutputIsSymlinkError,
    OutputNotAFileError,
    OutputWriteError,
)
from engine.store.failures import DISK_FULL_ERRNOS, disk_full_error
from engine.store.project import APP_ID

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: stale part files are not detected
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "PendingOutput",
    "check_output_path",
    "current_umask",
    "glob_escape",
    "is_project_file",
    "new_file_mode",
    "open_output",
    "output_path",
    "pending_output",
    "remove_stale_parts",
]

#: The first 16 bytes of every SQLite database.
SQLITE_HEADER = b"SQLite format 3\x00"
#: Files SQLite keeps beside a database.
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
FILES_SUFFIX = "_files"

#: What an OSError becomes: ``(error, target, part file or None) -> named error``.
ErrorFn = Callable[[OSError, Path, "Path | None"], CounterbiasError]


def _umask_now() -> int:
    """The umask, read without changing it where the system allows (Linux ``/proc``)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return -1


def _umask_at_import() -> int:
    value = _umask_now()
    if value >= 0:
        return value
    value = os.umask(0o022)  # set and restore once, at import, before any thread writes files
    os.umask(value)
    return value


_UMASK_AT_IMPORT = _umask_at_import()


def current_umask() -> int:
    """The process's umask (from ``/proc/self/status``; elsewhere the one at import)."""
    value = _umask_now()
    return value if value >= 0 else _UMASK_AT_IMPORT


def new_file_mode() -> int:
    """Permission bits of a new output file: ``0o666`` less the umask."""
    return 0o666 & ~current_umask()


# ---------------------------------------------------------------------------- what is a project


def is_project_file(path: str | Path) -> bool:
    """Whether ``path`` is a regular file holding a Counterbias project (reads 72 bytes, never writes).

    A SQLite file whose header does not (yet) carry the project's application id but that has a
    ``-wal`` file beside it counts too: its header may still be in the WAL.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        head = os.read(fd, 72)
    except OSError:
        return False
    finally:
        os.close(fd)
    if len(head) < 72 or not head.startswith(SQLITE_HEADER):
        return False
    app_id = int.from_bytes(head[68:72], "big")
    if app_id == APP_ID:
        return True
    return app_id == 0 and os.path.exists(f"{path}-wal") and _app_id_read_only(Path(path)) in (APP_ID, None)


def _app_id_read_only(path: Path) -> int | None:
    """``PRAGMA application_id`` on a read-only connection (``None`` when it cannot be read)."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except (sqlite3.Error, ValueError):
        return None
    try:
        return int(conn.execute("PRAGMA application_id").fetchone()[0])
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _project_of_files_folder(folder: Path) -> Path | None:
    """The project a ``<stem>_files`` folder belongs to, if one lies beside it."""
    stem = folder.name[: -len(FILES_SUFFIX)]
    if not stem:
        return None
    try:
        candidates = [folder.parent / stem, *folder.parent.glob(glob_escape(stem) + ".*")]
    except OSError:
        return None
    for candidate in candidates:
        if candidate.with_name(candidate.stem + FILES_SUFFIX) == folder or candidate.name == stem:
            if is_project_file(candidate):
                return candidate
    return None


def _refuse_project_targets(shown: Path, real: Path, project: Path | None) -> None:
    """Raise when ``real`` (the resolved target) is a project, a side file, or inside a ``_files`` folder."""
    hint = "Choose another file name, outside the project file and its _files folder."
    if project is not None:
        proj_real = _real(project)
        if real == proj_real or _same_file(real, project):
            raise OutputIsProjectError(f"{shown} is the open project {project.name}; writing there would destroy it.",
                                       hint)
        for suffix in SIDE_SUFFIXES:
            side = Path(f"{proj_real}{suffix}")
            if real == side or _same_file(real, side):
                raise OutputIsProjectError(
                    f"{shown} is the project's {suffix[1:]} file ({side.name}), part of its database; writing "
                    "there would destroy the project.", hint)
        folder = proj_real.with_name(proj_real.stem + FILES_SUFFIX)
        if real == folder or folder in real.parents:
            raise OutputInProjectFolderError(
                f"{shown} is {'the folder' if real == folder else 'inside the folder'} {folder.name} where the "
                f"project {project.name} keeps its models and indexes.", hint)
    if is_project_file(real):
        raise OutputIsProjectError(f"{shown} is a Counterbias Studio project; writing there would destroy it.", hint)
    for suffix in SIDE_SUFFIXES:
        if real.name.endswith(suffix) and is_project_file(real.with_name(real.name[: -len(suffix)])):
            raise OutputIsProjectError(
                f"{shown} is the {suffix[1:]} file of the project {real.name[: -len(suffix)]}; writing there "
                "would destroy the project.", hint)
    for folder in (real, *real.parents):
        if folder.name.endswith(FILES_SUFFIX):
            owner = _project_of_files_folder(folder)
            if owner is not None:
                raise OutputInProjectFolderError(
                    f"{shown} is {'the folder' if real == folder else 'inside the folder'} {folder.name} where the "
                    f"project {owner.name} keeps its models and indexes.", hint)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_output_path(path: str | Path, *, project: str | Path | None = None, follow_symlinks: bool = False) -> Path:
    """Refuse an output target that would destroy data; return the file to write.

    Parameters
    ----------
    path
        The output the user named.
    project
        The open project, if any: it, its side files and its ``_files`` folder are refused
        (any other project is recognised by its header).
    follow_symlinks
        Write through a symbolic link (the file it points to is replaced; it must pass the same
        checks). Without it a link is refused.

    Returns
    -------
    Path
        ``path`` itself, or the file a followed link points to.

    Raises
    ------
    OutputIsProjectError, OutputInProjectFolderError
        The target is a project, its ``-wal``/``-shm``/``-journal``, or its ``_files`` folder or inside it.
    OutputIsSymlinkError
        The target is a symbolic link and ``follow_symlinks`` is false.
    OutputIsFolderError, OutputNotAFileError
        The target is a folder, or a device, FIFO or socket.
    """
    shown = Path(path)
    target = shown
    project = Path(project) if project is not None else None
    try:
        st: os.stat_result | None = os.lstat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputWriteError(f"Cannot use {shown} as output: {exc.strerror or exc}.",
                               "Choose a file in a folder you can write to.") from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        _refuse_project_targets(shown, _real(target), project)  # a link to the project names the project
        if not follow_symlinks:
            raise OutputIsSymlinkError(
                f"{shown} is a symbolic link (to {os.readlink(target)}); it was left as it is.",
                "Choose another file name, or ask to write to the file the link points to"
                " (export: --follow-symlink).")
        target = _real(target)
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise OutputWriteError(f"Cannot follow the link {shown}: {exc.strerror or exc}.",
                                   "Choose another file name.") from None
        if st is not None and stat.S_ISLNK(st.st_mode):  # a loop: realpath gave up
            raise OutputIsSymlinkError(f"{shown} is a symbolic link that leads nowhere (a loop).",
                                       "Choose another file name.")
    _refuse_project_targets(shown, _real(target), project)
    if st is None or stat.S_ISREG(st.st_mode):
        return target
    if stat.S_ISDIR(st.st_mode):
        raise OutputIsFolderError(f"{shown} is a folder.", "Give a file name inside it, e.g. out.csv.")
    raise OutputNotAFileError(f"{shown} is {_kind(st.st_mode)}, not a regular file; it was left as it is.",
                              "Choose a regular file name.")


# ---------------------------------------------------------------------------- part files


def glob_escape(text: str) -> str:
    """``text`` with glob wildcards made literal."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _part_prefix(path: Path) -> str:
    return f".{path.name}."


def remove_stale_parts(path: str | Path) -> int:
    """Remove the part files of earlier writes to ``path`` that no running writer holds.

    Returns
    -------
    int
        How many were removed.
    """
    if fcntl is None:  # pragma: no cover
        return 0
    path = Path(path)
    removed = 0
    for part in path.parent.glob(glob_escape(_part_prefix(path)) + "*.part"):
        try:
            if not stat.S_ISREG(os.lstat(part).st_mode):
                continue
            fd = os.open(part, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live writer holds it
            continue
        else:
            part.unlink(missing_ok=True)
            removed += 1
        finally:
            os.close(fd)
    return removed


# ---------------------------------------------------------------------------- the atomic writer


@dataclass
class PendingOutput:
    """A part file being written; :func:`pending_output` renames it over ``target`` when complete."""

    #: The file that will be replaced (a followed link's destination).
    target: Path
    #: The hidden part file beside it.
    part: Path
    #: An open descriptor of the part file (locked; closed by :func:`pending_output`).
    fd: int
    #: Stale part files of earlier writes that were removed.
    removed_parts: int = 0


def _default_error(what: str) -> ErrorFn:
    def error(exc: OSError, target: Path, part: Path | None) -> CounterbiasError:
        if exc.errno in DISK_FULL_ERRNOS:
            return disk_full_error(target, f"writing {what}", kind="file")
        return OutputWriteError(f"Cannot write {what} {target}: {exc.strerror or exc}.",
                                "Choose a file in a folder that exists and that you can write to.")
    return error


@contextlib.contextmanager
def pending_output(path: str | Path, *, project: str | Path | None = None, follow_symlinks: bool = False,
                   make_parents: bool = False, what: str = "the file",
                   on_error: ErrorFn | None = None) -> Iterator[PendingOutput]:
    """Check ``path``, make a locked part file beside it, and rename it over the target on success.

    The body writes the part file (through ``pending.fd`` or by its name ``pending.part``). On
    leaving without an exception the part file is synced, the target checked again, given its
    permission bits (kept from a replaced file, ``0o666 & ~umask`` for a new one) and renamed over
    it. On any exception the part file is removed; an :class:`OSError` becomes ``on_error(exc,
    target, part)`` (default: :class:`~engine.errors.DiskFullError` for a full disk,
    :class:`~engine.errors.OutputWriteError` otherwise).

    Raises
    ------
    OutputPathError
        See :func:`check_output_path`.
    """
    error = on_error or _default_error(what)
    target = check_output_path(path, project=project, follow_symlinks=follow_symlinks)
    try:
        if make_parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        removed = remove_stale_parts(target)
        fd, name = tempfile.mkstemp(prefix=_part_prefix(target), suffix=".part", dir=target.parent)
    except OSError as exc:
        raise error(exc, target, None) from exc
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)
    pending = PendingOutput(target=target, part=Path(name), fd=fd, removed_parts=removed)
    try:
        yield pending
        os.fsync(fd)
        check_output_path(target, project=project)  # again: nothing may have taken its place meanwhile
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode) & 0o777
        except FileNotFoundError:
            mode = new_file_mode()
        os.fchmod(fd, mode)
        os.replace(name, target)  # still locked: no other writer takes it for a stale part
    except BaseException as exc:
        failure = error(exc, target, pending.part) if isinstance(exc, OSError) else None
        pending.part.unlink(missing_ok=True)
        if failure is not None:
            raise failure from exc
        raise
    finally:
        os.close(fd)
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    """Make the rename durable (best effort: not every system can sync a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def open_output(path: str | Path, mode: str = "w", *, project: str | Path | None = None,
                follow_symlinks: bool = False, make_parents: bool = False, what: str = "the file",
                encoding: str | None = "utf-8", newline: str | None = None,
                on_error: ErrorFn | None = None) -> Iterator[IO[Any]]:
    """Open an output file for writing, atomically: see :func:`pending_output`.

    ``mode`` is ``"w"`` (text, ``encoding`` and ``newline`` as for :func:`open`) or ``"wb"``.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', not {mode!r}")
    with pending_output(path, project=project, follow_symlinks=follow_symlinks, make_parents=make_parents,
                        what=what, on_error=on_error) as pending:
        options: dict[str, Any] = {} if mode == "wb" else {"encoding": encoding, "newline": newline}
        with os.fdopen(os.dup(pending.fd), mode, **options) as handle:
            yield handle


@contextlib.contextmanager
def output_path(path: str | Path, *, project: str | Path | None = None, follow_symlinks: bool = False,
                make_parents: bool = False, what: str = "the file",
                on_error: ErrorFn | None = None) -> Iterator[Path]:
    """The name of a part file to write by name (e.g. for a library that wants a file name), atomically.

    See :func:`pending_output`; the writer must write into the existing file, not replace it.
    """
    with pending_output(path, project=project, follow_symlinks=follow_symlinks, make_parents=make_parents,
                        what=what, on_error=on_error) as pending:
        yield pending.part
