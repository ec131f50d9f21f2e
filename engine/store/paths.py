"""Paths a project stores or derives stay inside its own files folder; removals never leave it.

A project is a file people share. The ``models`` table stores each member's folder as a path
relative to ``<name>_files/``; folders of caches, indexes and retrievers are derived from names
and keys under the same folder. A crafted or damaged project could store ``../../victim``, an
absolute path, or ship a symbolic link that leads elsewhere, and a step that "cleans up" such a
folder would delete what it points at. Everything here refuses that:

* :func:`inside_project` turns a stored relative path into the folder it names, refusing empty
  and absolute paths, any ``..`` part (:class:`~engine.errors.StoredPathError`, CB150) and a
  path whose real location (symbolic links followed) leaves the files folder
  (:class:`~engine.errors.StoredLinkError`, CB151);
* :func:`safe_remove` removes a file or folder only when it lies strictly inside the files
  folder; a symbolic link is removed itself, never followed (CB152 refused, CB153 the
  operating system said no);
* :func:`check_stored_paths` checks every stored path of a project file (for opening it).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Protocol

from engine.errors import RemoveFailedError, RemoveOutsideError, StoredLinkError, StoredPathError


class ProjectLike(Protocol):
    """What this module reads of a project: its ``.cbproj`` path (an :class:`engine.store.Project` has it;
    this module is imported by the project's own open, so it does not import the class)."""

    path: Path

__all__ = ["check_stored_paths", "derived_folder", "inside_project", "is_inside", "safe_remove", "stored_paths"]

_HINT = ("Open a copy of the project you trust, or delete the member and train it again: a project only stores "
         "paths inside its own '_files' folder.")


def _files_dir(project: ProjectLike | Path) -> Path:
    """The files folder of ``project`` (a :class:`Project` or the ``.cbproj`` path), not created."""
    path = Path(getattr(project, "path", project))
    return path.with_name(path.stem + "_files")


def is_inside(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """Whether the real location of ``path`` lies strictly inside the real location of ``folder``."""
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return real != root and real.startswith(root.rstrip(os.sep) + os.sep)


def _lexical_problem(stored: str | None) -> str | None:
    """Why ``stored`` cannot name a folder inside the files folder (``None``: it can)."""
    if stored is None or not str(stored).strip():
        return "is empty (it would name the files folder itself)"
    text = str(stored)
    if "\x00" in text:
        return "holds a NUL character"
    if PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute() or PureWindowsPath(text).drive:
        return "is absolute"
    parts = PurePosixPath(text.replace("\\", "/")).parts
    if ".." in parts:
        return "climbs out with '..'"
    return None


def inside_project(project: ProjectLike | Path, stored: str | None, *, what: str = "stored path") -> Path:
    """The folder a stored relative path names, checked to lie inside the project's files folder.

    Parameters
    ----------
    project
        The open project (or its ``.cbproj`` path).
    stored
        A path relative to ``<name>_files/`` as the project stores it (``models/d_tiny-distilbert``).
    what
        What the path is, for the message (``"the folder of model 'x'"``).

    Returns
    -------
    Path
        ``<name>_files/<stored>`` (it need not exist).

    Raises
    ------
    engine.errors.StoredPathError
        ``stored`` is empty, absolute or has a ``..`` part (CB150).
    engine.errors.StoredLinkError
        A symbolic link on the way leads out of the files folder (CB151).
    """
    files = _files_dir(project)
    problem = _lexical_problem(stored)
    if problem is not None:
        raise StoredPathError(
            f"The project {Path(getattr(project, 'path', project)).name} refers to {what} {stored!r}, which "
            f"{problem}; it would point outside the project's folder {files}. Nothing was read, written or deleted.",
            _HINT,
        )
    candidate = files / str(stored).replace("\\", "/")
    if not is_inside(candidate, files):
        raise StoredLinkError(
            f"{what.capitalize()} {candidate} runs through a symbolic link to {os.path.realpath(candidate)}, "
            f"outside the project's folder {files}. Nothing was read, written or deleted.",
            "Replace the link by a real folder (or remove it), then run the step again.",
        )
    return candidate


def derived_folder(project: ProjectLike, *parts: str, what: str = "folder") -> Path:
    """``<name>_files/<parts...>``, checked like :func:`inside_project` before anything is created in it."""
    return inside_project(project, "/".join(parts), what=what)


def safe_remove(project: ProjectLike | Path, path: str | os.PathLike[str], *, missing_ok: bool = True) -> bool:
    """Remove a file, folder or symbolic link that lies strictly inside the project's files folder.

    The parent folders are resolved (links followed) but the last part never is: a link is
    removed itself, not what it points at, and :func:`shutil.rmtree` removes the links inside a
    folder as links.

    Parameters
    ----------
    project
        The project (or its ``.cbproj`` path).
    path
        The path to remove (a relative one is relative to the working directory, as
        ``project.files_dir`` is for a project opened by a relative path).
    missing_ok
        Return ``False`` for a path that does not exist (else :class:`RemoveFailedError`).

    Returns
    -------
    bool
        Whether something was removed.

    Raises
    ------
    engine.errors.RemoveOutsideError
        The path is the files folder itself or lies outside it (CB152; nothing removed).
    engine.errors.RemoveFailedError
        The operating system refused the removal (CB153).
    """
    files = _files_dir(project)
    path = Path(path)
    if not path.is_absolute():
        path = Path.cwd() / path  # joined, never normalised: '..' is resolved by the OS below
    if path.name in ("", ".", ".."):
        target = Path(os.path.realpath(path))
    else:
        target = Path(os.path.realpath(path.parent)) / path.name
    root = os.path.realpath(files)
    if str(target) == root or not str(target).startswith(root.rstrip(os.sep) + os.sep):
        raise RemoveOutsideError(
            f"Refused to remove {path}: it is not inside the project's folder {files} (it is {target}). "
            "Nothing was deleted.",
            "The project names a folder outside itself; open a copy you trust. Files outside a project are "
            "never removed by Counterbias Studio.",
        )
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        if missing_ok:
            return False
        raise RemoveFailedError(f"Cannot remove {target}: it does not exist.", "Nothing to do.") from None
    except OSError as exc:
        raise _failed(target, exc) from exc
    try:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(target)
        else:
            os.unlink(target)  # a file, or a link (removed itself, never followed)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _failed(target, exc) from exc
    return True


def _failed(target: Path, exc: OSError) -> RemoveFailedError:
    return RemoveFailedError(
        f"Cannot remove {target}: {exc.strerror or exc}.",
        "Close programs using the project's files and check you may write to its folder, then run the step again.",
    )


def stored_paths(conn: sqlite3.Connection) -> list[tuple[str, str | None]]:
    """Every path the project file stores, as ``(what, relative path)`` (reads only).

    Today that is the folder of each trained member (``models.path``); the folders of caches,
    indexes and retrievers are derived from names and keys, not stored.
    """
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "models" not in tables:
        return []
    return [(f"the folder of model {name!r}", path) for name, path in conn.execute("SELECT name, path FROM models")]


def check_stored_paths(source: Any, path: Path | None = None) -> None:
    """Refuse a project any of whose stored paths points outside its files folder (reads only).

    Parameters
    ----------
    source
        An open :class:`Project`, or a connection to the project file (then give ``path``).
    path
        The ``.cbproj`` file, when ``source`` is a connection.

    Raises
    ------
    engine.errors.StoredPathError, engine.errors.StoredLinkError
    """
    if isinstance(source, sqlite3.Connection):
        if path is None:
            raise TypeError("check_stored_paths(conn, path): the project file's path is needed")
        conn, project_path = source, Path(path)
    else:
        conn, project_path = source.db.conn, Path(source.path)
    for what, stored in stored_paths(conn):
        inside_project(project_path, stored, what=what)
