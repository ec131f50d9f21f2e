"""The single writer of a project file.

Workers compute; one thread per open project writes. Every write is a task ``fn(conn)``
that runs on the writer thread inside one ``BEGIN IMMEDIATE … COMMIT`` transaction (or is
rolled back entirely if it raises). No connection is shared across threads: the writer's
connection lives and dies on the writer thread.

Tasks run in the order they were submitted, with one exception: *bulk* tasks (the short
slices that a long write is cut into by :func:`write_stream` and :func:`run_in_steps`) wait
behind every ordinary task that is queued. A long write therefore never holds the writer for
more than one slice (about :data:`SLICE_SECONDS`) at a time, and a one-row write from the GUI
thread waits for at most the slice that is running, not for a whole import. A slice of
:func:`write_stream` even stops early, after a few rows, when an ordinary task arrives: it
commits what it wrote and returns :class:`Resume`, and the writer runs the ordinary task,
then the rest of the slice (before any later bulk task), and the thread producing the rows
can step aside meanwhile (:meth:`StoreWriter.wait_for_ordinary`), so that the ordinary task
does not compete with it for the interpreter lock. For the same reason the writer
never copies the write-ahead log back into the database file itself (a checkpoint of a busy
log can take tens of milliseconds): a helper thread with its own connection does that,
without blocking the writer.

Another *process* may be writing the same file (a second CLI import, the GUI and a CLI run).
The writer then waits for the file's write lock instead of failing: it reports "waiting for
the project (another process is writing)" through :attr:`StoreWriter.on_wait`, keeps waiting
for as long as the other process makes progress (commits), and gives up with a named
:class:`~engine.errors.ProjectBusyError` only after :data:`BUSY_PATIENCE` seconds without any.
While it waits it holds :data:`WAIT_LOCK_NAME` (a file lock in the project's files folder), and a writer
in the other process pauses its *bulk* slices while that lock is held, so a long import hands
the file over between two slices instead of starving the waiter. Full disks, read-only files
and locks are raised as named errors (:mod:`engine.store.failures`), never as raw
``sqlite3.OperationalError``.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, wait
from pathlib import Path
from typing import Any, TypeVar

from engine.store.failures import busy_error, is_busy, named_storage_error

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no cross-process turn-taking
    fcntl = None  # type: ignore[assignment]

T = TypeVar("T")

log = logging.getLogger(__name__)

#: Wall-clock seconds of write work one bulk transaction aims at.
SLICE_SECONDS = 0.010
#: Least seconds between two checkpoints of the write-ahead log.
CHECKPOINT_EVERY = 0.5
#: Rows a slice of :func:`write_stream` writes between two looks for waiting ordinary tasks.
PIECE_ROWS = 256

#: Seconds a writer keeps waiting for another process's write lock while that process commits nothing.
BUSY_PATIENCE = 60.0
#: Seconds one attempt at the write lock waits inside SQLite before the writer looks around.
BUSY_STEP = 0.25
#: File (in the project's files folder) that a writer waiting for the write lock holds.
WAIT_LOCK_NAME = "writer-waiting.lock"
#: Least seconds between two "waiting for the project" reports of one writer.
SAY_WAITING_EVERY = 10.0
#: Most seconds a bulk slice pauses for a writer of another process that waits.
YIELD_AT_MOST = 2.0

_NORMAL, _BULK, _LAST = 0, 1, 2
_STOP = object()


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode with the pragmas every connection uses."""
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 30000")
    if readonly:
        conn.execute("PRAGMA query_only = ON")
    else:
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def connect_file_readonly(path: Path, *, immutable: bool = False) -> sqlite3.Connection:
    """Open ``path`` so that SQLite cannot write to it, nor create files beside it.

    ``mode=ro`` reads a database whose ``-wal``/``-shm`` files exist or can be created;
    ``immutable=1`` (for a read-only folder where they cannot) reads the main file alone and
    takes no locks, so it is right only when no other process writes the file.
    """
    from urllib.parse import quote

    uri = f"file:{quote(str(Path(path).absolute()))}?mode=ro" + ("&immutable=1" if immutable else "")
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30.0)
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA query_only = ON")
    return conn


def wait_lock_path(path: Path) -> Path:
    """The lock file a writer holds while it waits for ``path``'s write lock."""
    path = Path(path)
    return path.with_name(path.stem + "_files") / WAIT_LOCK_NAME


class _WaitLock:
    """The cross-process "a writer is waiting" flag: a file lock in the project's files folder.

    A waiting writer holds it exclusively (:meth:`hold`); a bulk slice asks :meth:`someone_waits`
    (a non-blocking shared lock attempt) and pauses while it is held. Where the folder is not
    writable, or the platform has no ``flock``, nothing is held and nobody pauses.
    """

    def __init__(self, path: Path) -> None:
        self.path = wait_lock_path(path)
        self._fd: int | None = None
        self._held = False

    def _open(self) -> int | None:
        if fcntl is None:
            return None
        if self._fd is None:
            try:
                self.path.parent.mkdir(exist_ok=True)
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError:
                return None
        return self._fd

    def hold(self) -> None:
        """Say that this writer waits (no-op if another writer already says so)."""
        fd = self._open()
        if fd is None or self._held:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._held = True
        except OSError:
            pass

    def release(self) -> None:
        """Stop saying that this writer waits."""
        if self._held and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            self._held = False

    def someone_waits(self) -> bool:
        """Whether a writer of another process (or another writer of this one) waits for the lock."""
        if fcntl is None or not self.path.exists():
            return False
        fd = self._open()
        if fd is None or self._held:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False

    def close(self) -> None:
        self.release()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class Resume:
    """What a bulk task returns when it stopped early: run ``fn(conn, *args)`` for the rest.

    The writer commits the work done so far, runs the ordinary tasks that are waiting, then
    calls the task again with ``args`` before any bulk task submitted after it; the task's
    future gets the result of the call that does not return a :class:`Resume`.
    """

    def __init__(self, *args: Any) -> None:
        self.args = args


class StoreWriter:
    """A thread that owns the only writing connection of one project file.

    Parameters
    ----------
    path
        The project's SQLite file (already created and migrated).
    on_wait
        Called (on the writer thread, at most every :data:`SAY_WAITING_EVERY` s) with a status line ("waiting for the
        project (another process is writing)…") while the writer waits for another process's
        write lock; default: a log warning.
    """

    def __init__(self, path: Path, *, on_wait: Callable[[str], None] | None = None) -> None:
        self.path = Path(path)
        self.on_wait: Callable[[str], None] = on_wait or (lambda message: log.warning("%s", message))
        self._wait_lock = _WaitLock(self.path)
        self._said_at = -SAY_WAITING_EVERY  # when on_wait was last called
        self._waited = 0.0  # seconds spent waiting for other processes, in all
        self._checkpointer = _Checkpointer(self.path)
        self._tasks: queue.PriorityQueue = queue.PriorityQueue()
        self._order = itertools.count()
        self._ordinary = 0  # ordinary tasks queued or running
        self._ordinary_lock = threading.Lock()
        self._no_ordinary = threading.Event()
        self._no_ordinary.set()
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name=f"store-writer:{self.path.name}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._start_error is not None:
            self._checkpointer.close()
            raise self._start_error

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """Queue ``fn(conn, *args, **kwargs)`` to run in one transaction; return its future."""
        return self._put(_NORMAL, fn, args, kwargs)

    def submit_bulk(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """Like :meth:`submit`, but the task waits behind every ordinary task queued.

        For one short slice of a long write; bulk tasks run in the order they were submitted.
        The task may return :class:`Resume` to yield the writer part-way.
        """
        return self._put(_BULK, fn, args, kwargs)

    def ordinary_waiting(self) -> bool:
        """Whether an ordinary task is queued or running (a bulk task then stops early)."""
        return not self._no_ordinary.is_set()

    def wait_for_ordinary(self, timeout: float = 0.1) -> None:
        """Block while ordinary tasks are queued or running, for up to ``timeout`` seconds.

        Called now and then by a thread that produces rows for bulk tasks (an import's
        parser), so that a one-row write from the GUI thread gets the interpreter lock and the
        writer without competing with it. Returns at once when no ordinary task is pending.
        """
        if not self._no_ordinary.is_set():
            self._no_ordinary.wait(timeout)

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(conn, *args, **kwargs)`` in one transaction and wait for its result."""
        self._refuse_own_thread()
        return self.submit(fn, *args, **kwargs).result()

    def run_bulk(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` as a bulk task (see :meth:`submit_bulk`) and wait for its result."""
        self._refuse_own_thread()
        return self.submit_bulk(fn, *args, **kwargs).result()

    def close(self) -> None:
        """Finish the queued tasks, then stop the thread and close the connection."""
        if self._thread.is_alive():
            self._tasks.put((_LAST, next(self._order), _STOP))
            self._thread.join()
        self._checkpointer.close()
        self._wait_lock.close()

    # ------------------------------------------------------------------ internals
    def _put(self, priority: int, fn: Callable[..., T], args: tuple, kwargs: dict) -> Future[T]:
        if not self._thread.is_alive():
            raise RuntimeError("the project writer is closed")
        future: Future[T] = Future()
        if priority == _NORMAL:
            with self._ordinary_lock:
                self._ordinary += 1
                self._no_ordinary.clear()
        self._tasks.put((priority, next(self._order), (future, fn, args, kwargs)))
        return future

    def _ordinary_done(self) -> None:
        with self._ordinary_lock:
            self._ordinary -= 1
            if not self._ordinary:
                self._no_ordinary.set()

    def _refuse_own_thread(self) -> None:
        if threading.current_thread() is self._thread:
            raise RuntimeError("a write task must not wait for another write task")

    def _loop(self) -> None:
        try:
            conn = connect(self.path)
            conn.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer thread does it
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_STEP * 1000)}")  # then _begin waits, visibly
        except BaseException as exc:  # reported to the constructor
            self._start_error = named_storage_error(exc, self.path, "opening the project for writing") or exc
            self._ready.set()
            return
        self._ready.set()
        try:
            while True:
                priority, order, item = self._tasks.get()
                if item is _STOP:
                    break
                future, fn, args, kwargs = item
                try:
                    self._run(conn, priority, order, future, fn, args, kwargs)
                finally:
                    if priority == _NORMAL:
                        self._ordinary_done()
        finally:
            conn.close()

    def _run(self, conn: sqlite3.Connection, priority: int, order: int, future: Future, fn: Callable[..., Any],
             args: tuple, kwargs: dict) -> None:
        if not (future.running() or future.set_running_or_notify_cancel()):
            return
        try:
            if priority == _BULK:
                self._let_waiting_writer_in()
            self._begin(conn)
            result = fn(conn, *args, **kwargs)
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            named = named_storage_error(exc, self.path, "writing to the project")
            if named is not None and named is not exc:
                named.__cause__ = exc
            future.set_exception(named or exc)
            return
        self._checkpointer.poke()
        if priority == _BULK and isinstance(result, Resume):
            self._tasks.put((priority, order, (future, fn, result.args, kwargs)))
        else:
            future.set_result(result)

    def _begin(self, conn: sqlite3.Connection) -> None:
        """``BEGIN IMMEDIATE``, waiting for another process's write lock while it makes progress.

        Raises
        ------
        engine.errors.ProjectBusyError
            After :data:`BUSY_PATIENCE` seconds in which the other process committed nothing.
        """
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
        started = last_progress = time.monotonic()
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        try:
            while True:
                self._wait_lock.hold()
                t = time.monotonic()
                if t - self._said_at >= SAY_WAITING_EVERY:
                    waited = self._waited + t - started
                    self._said_at = t
                    try:
                        self.on_wait("waiting for the project (another process is writing)"
                                     + (f", {waited:.0f} s in all so far" if waited >= 1 else ""))
                    except Exception:  # a broken status display must not fail the write
                        log.exception("on_wait failed")
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as exc:
                    if not is_busy(exc):
                        raise
                now_version = conn.execute("PRAGMA data_version").fetchone()[0]
                if now_version != version:  # the other process committed: it is alive, keep waiting
                    version, last_progress = now_version, time.monotonic()
                elif time.monotonic() - last_progress > BUSY_PATIENCE:
                    raise busy_error(self.path, time.monotonic() - last_progress)
        finally:
            self._waited += time.monotonic() - started
            self._wait_lock.release()

    def _let_waiting_writer_in(self) -> None:
        """Before a bulk slice: pause while a writer of another process waits for the lock."""
        deadline = time.monotonic() + YIELD_AT_MOST
        while self._wait_lock.someone_waits() and time.monotonic() < deadline:
            time.sleep(0.005)


class _Checkpointer:
    """A thread that copies the write-ahead log into the database file after writes.

    Runs ``PRAGMA wal_checkpoint(PASSIVE)`` on its own connection at most every
    :data:`CHECKPOINT_EVERY` seconds while writes happen; a passive checkpoint never blocks the
    writer (or readers), so the writer's transactions stay short.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"store-checkpoint:{path.name}", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """Note that a write was committed."""
        self._wake.set()

    def close(self) -> None:
        """Stop the thread (the last connection to close checkpoints what is left)."""
        self._stopping.set()
        self._wake.set()
        self._thread.join()

    def _loop(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait()
                if self._stopping.is_set():
                    return
                self._wake.clear()
                try:
                    conn = conn or connect(self.path)
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error as exc:  # a later checkpoint (or the last close) catches up
                    log.debug("checkpoint of %s skipped: %s", self.path, exc)
                if self._stopping.wait(CHECKPOINT_EVERY):
                    return
        finally:
            if conn is not None:
                conn.close()


class Pace:
    """How many units of work fit in one slice of about ``seconds`` (learnt as slices run).

    Parameters
    ----------
    seconds
        Wall-clock time one slice should take.
    first
        Units in a slice before any has been timed.
    most
        Upper bound on a slice.
    """

    def __init__(self, seconds: float = SLICE_SECONDS, *, first: int = 256, most: int = 100_000) -> None:
        self.seconds = seconds
        self.first = first
        self.most = most
        self._per_unit: float | None = None

    def size(self) -> int:
        """Units for the next slice."""
        per_unit = self._per_unit
        if per_unit is None:
            return self.first
        return max(16, min(self.most, int(self.seconds / max(per_unit, 1e-9))))

    def record(self, units: int, seconds: float) -> None:
        """Learn from a slice of ``units`` that took ``seconds``."""
        if units <= 0:
            return
        per_unit = seconds / units
        self._per_unit = per_unit if self._per_unit is None else 0.7 * self._per_unit + 0.3 * per_unit


def write_stream(
    writer: StoreWriter,
    write_rows: Callable[[sqlite3.Connection, Sequence[Any]], Any],
    batches: Iterable[Sequence[Any]],
    *,
    seconds: float | None = None,
    max_pending: int = 8,
) -> int:
    """Write ``batches`` of rows with ``write_rows(conn, rows)`` in short bulk transactions.

    The calling thread iterates ``batches`` (parsing, computing) and cuts each batch into
    slices sized so that writing one takes about ``seconds``; each slice is a bulk task of
    ``writer`` (see :meth:`StoreWriter.submit_bulk`), committed on its own, so the writer runs
    other tasks between slices. Slices are written in order, at most ``max_pending`` queued
    at a time, so reading and writing overlap without holding the file in memory.

    ``write_rows`` is called with pieces of :data:`PIECE_ROWS` rows; when an ordinary task
    is waiting, the slice commits after the current piece and lets it run first
    (:class:`Resume`), so ``write_rows`` must write exactly the rows it is given, in order.

    Rows are committed slice by slice. If ``batches`` or a slice raises, the slices not yet
    written are dropped, the running one finishes (or rolls back), and the exception is
    re-raised here: removing the slices already committed is the caller's job (an import
    does it with :func:`engine.store.staging.discard`).

    Returns
    -------
    int
        The number of rows written.
    """
    pace = Pace(seconds or SLICE_SECONDS)

    def write(conn: sqlite3.Connection, rows: Sequence[Any], start: int = 0) -> int | Resume:
        started = time.perf_counter()
        done = start
        while done < len(rows):
            piece = rows[done : done + PIECE_ROWS]
            write_rows(conn, piece)
            done += len(piece)
            if done < len(rows) and writer.ordinary_waiting():
                break
        pace.record(done - start, time.perf_counter() - started)
        return len(rows) if done == len(rows) else Resume(rows, done)

    pending: deque[Future[int]] = deque()
    written = 0
    try:
        for batch in batches:
            start = 0
            while start < len(batch):
                size = pace.size()
                pending.append(writer.submit_bulk(write, batch[start : start + size]))
                start += size
                while pending and (len(pending) > max_pending or pending[0].done()):
                    written += pending.popleft().result()
        while pending:
            written += pending.popleft().result()
    except BaseException:
        for future in pending:
            future.cancel()
        wait(pending)
        raise
    return written


def run_in_steps(
    writer: StoreWriter,
    step: Callable[[sqlite3.Connection, int], int],
    *,
    seconds: float | None = None,
) -> int:
    """Call ``step(conn, limit)`` in bulk transactions until it returns 0.

    ``step`` does at most ``limit`` units of work (e.g. deletes that many rows) and returns
    how many it did; ``limit`` is sized so that one step takes about ``seconds``. Must be
    called from outside the writer thread.

    Returns
    -------
    int
        The units done in all.
    """
    pace = Pace(seconds or SLICE_SECONDS)

    def timed(conn: sqlite3.Connection, limit: int) -> int:
        started = time.perf_counter()
        done = step(conn, limit)
        pace.record(done, time.perf_counter() - started)
        return done

    total = 0
    while done := writer.run_bulk(timed, pace.size()):
        total += done
    return total
