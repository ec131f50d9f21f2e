"""One run per (dataset, step) at a time, across processes: a lock file per pair.

An LLM step (``triples``, ``generate``) that runs twice on the same dataset at once sends
most of its requests twice (neither run sees the other's answers in the cache in time). A run
therefore holds :func:`run_lock` for as long as it runs: an exclusive ``flock`` on
``<project>_files/locks/<step>-<dataset id>.lock``, which also records who holds it (process
id, host, start time, run id) so that a second run can say whom it waits for.

The operating system drops an ``flock`` when its process ends however it ends (``kill -9``
included), so a lock left by a dead process is free again: the next run simply takes it over.
Two :class:`~engine.store.Project` objects of one process exclude each other too (the lock
belongs to the open file, not the process).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import CounterbiasError
from engine.store.schema import now

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: runs are not guarded against each other
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from engine.store.project import Project

__all__ = ["LockFileError", "MemberBusyError", "RunBusyError", "RunLock", "VoteBusyError", "lock_path", "member_lock",
           "run_lock", "vote_lock"]


class RunBusyError(CounterbiasError):
    """Another run of the same step on the same dataset is still running."""

    code = "CB770"


class MemberBusyError(RunBusyError):
    """Another ``train`` is training (or reusing) a member of the same name right now."""

    code = "CB771"


class VoteBusyError(RunBusyError):
    """Another ``vote`` of the same members, settings and rows of the dataset is running right now."""

    code = "CB772"


class LockFileError(CounterbiasError):
    """The lock file of a step cannot be created (the project's folder cannot be written)."""

    code = "CB773"


class RunLock:
    """The lock a running step holds; :meth:`set_run` records its run id in the lock file."""

    def __init__(self, path: Path, fd: int, info: dict[str, Any]) -> None:
        self.path = path
        self.fd = fd
        self.info = info

    def set_run(self, run_id: int) -> None:
        """Write ``run_id`` into the lock file (for the message of a refused second run)."""
        self.info["run_id"] = run_id
        _write_info(self.fd, self.info)


def lock_path(project: Project, step: str, dataset_id: int) -> Path:
    """The lock file of ``step`` on dataset ``dataset_id``."""
    return project.files_dir / "locks" / f"{step}-{int(dataset_id)}.lock"


@contextlib.contextmanager
def run_lock(project: Project, step: str, dataset_id: int, *, dataset_name: str = "") -> Iterator[RunLock]:
    """Hold the lock of ``step`` on ``dataset_id`` while the ``with`` body runs.

    Parameters
    ----------
    project
        The open project.
    step
        ``"triples"``, ``"generate"``, ...
    dataset_id, dataset_name
        The dataset (the name is only used in the message).

    Yields
    ------
    RunLock

    Raises
    ------
    RunBusyError
        The lock is held by a live run (its run id, process and start time are named).
    """
    path = lock_path(project, step, dataset_id)
    with _hold(path, lambda: _busy(path, step, dataset_name or f"#{dataset_id}")) as lock:
        yield lock


@contextlib.contextmanager
def _hold(path: Path, busy: Any) -> Iterator[RunLock]:
    """Hold an exclusive ``flock`` on ``path`` (created); ``busy()`` is raised when it is held already."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise LockFileError(
            f"Cannot create the lock file {path}: {exc.strerror or exc}. Nothing was changed.",
            "Check that you may write to the project's folder (a read-only copy cannot run this step).",
        ) from exc
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise busy() from None
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started_at": now(), "run_id": None}
        _write_info(fd, info)
        yield RunLock(path, fd, info)
    finally:
        os.close(fd)  # releases the lock; the file stays (removing it would race a waiting run)


def _slug(text: str) -> str:
    """A file-name-safe form of ``text`` that stays unique (a digest is added)."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:40] or "x"
    return f"{readable}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


@contextlib.contextmanager
def member_lock(project: Project, names: Sequence[str]) -> Iterator[list[RunLock]]:
    """Hold the ``train`` lock of every member in ``names`` while the ``with`` body runs.

    A member's folder is keyed by its name alone, so two ``train`` runs that share a member name
    (whatever their datasets) would write the same folder; the second is refused up front, before
    it trains anything. The locks are taken in sorted order, each without waiting.

    Raises
    ------
    MemberBusyError
        A member is being trained by another run (the member, process and start time are named).
    """
    with contextlib.ExitStack() as stack:
        locks = []
        for name in sorted(set(names)):
            path = project.files_dir / "locks" / f"train-{_slug(name)}.lock"
            locks.append(stack.enter_context(_hold(path, lambda p=path, n=name: _member_busy(p, n))))
        yield locks


@contextlib.contextmanager
def vote_lock(project: Project, dataset_id: int, vote_key: str, *, dataset_name: str = "") -> Iterator[RunLock]:
    """Hold the lock of one vote (its members, settings and rows: ``vote_key``) on a dataset.

    Raises
    ------
    VoteBusyError
        The same vote is being computed by another run.
    """
    path = project.files_dir / "locks" / f"vote-{int(dataset_id)}-{_slug(vote_key)}.lock"
    dataset = dataset_name or f"#{dataset_id}"
    with _hold(path, lambda: _vote_busy(path, dataset)) as lock:
        yield lock


def _write_info(fd: int, info: dict[str, Any]) -> None:
    data = json.dumps(info).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _holder(path: Path) -> tuple[dict[str, Any], str, str]:
    """What the lock file at ``path`` says: its record, the run and the process holding it."""
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        info = {}
    run = f"run {info['run_id']}" if info.get("run_id") is not None else "a run still starting"
    who = f"process {info.get('pid', '?')} on {info.get('host', '?')}"
    return info, run, who


def _member_busy(path: Path, name: str) -> MemberBusyError:
    info, run, who = _holder(path)
    return MemberBusyError(
        f"Member {name!r} is being trained by another run ({run}, {who}, since "
        f"{info.get('started_at', 'an unknown time')}; lock {path}). Nothing was trained or changed.",
        "Wait for that run to finish (its members are then reused), or give this run other member names "
        "(--prefix).",
    )


def _vote_busy(path: Path, dataset: str) -> VoteBusyError:
    info, run, who = _holder(path)
    return VoteBusyError(
        f"The same vote on dataset {dataset} (members, methods, settings and rows) is being computed by another "
        f"run ({run}, {who}, since {info.get('started_at', 'an unknown time')}; lock {path}). Nothing was changed.",
        "Wait for it to finish, then run the vote again: it is then read from the project, not computed twice.",
    )


def _busy(path: Path, step: str, dataset: str) -> RunBusyError:
    info, run, who = _holder(path)
    return RunBusyError(
        f"A '{step}' run on dataset {dataset} is already running ({run}, {who}, since "
        f"{info.get('started_at', 'an unknown time')}; lock {path}).",
        "Wait for it to finish (or cancel it), then run the step again: what it answered is cached "
        "and not sent again. Two runs at once would send the same requests twice.",
    )
