"""The single writer of a project file.

Workers compute; one thread per open project writes. Every write is a task ``fn(conn)``
that runs on the writer thread inside one ``BEGIN IMMEDIATE … COMMIT`` transaction (or is
rolled back entirely if it raises). No connection is shared across threads: the writer's
connection lives and dies on the writer thread.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

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


class StoreWriter:
    """A thread that owns the only writing connection of one project file.

    Parameters
    ----------
    path
        The project's SQLite file (already created and migrated).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._tasks: queue.Queue = queue.Queue()
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name=f"store-writer:{self.path.name}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._start_error is not None:
            raise self._start_error

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """Queue ``fn(conn, *args, **kwargs)`` to run in one transaction; return its future."""
        if not self._thread.is_alive():
            raise RuntimeError("the project writer is closed")
        future: Future[T] = Future()
        self._tasks.put((future, fn, args, kwargs))
        return future

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(conn, *args, **kwargs)`` in one transaction and wait for its result."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("a write task must not wait for another write task")
        return self.submit(fn, *args, **kwargs).result()

    def close(self) -> None:
        """Finish the queued tasks, then stop the thread and close the connection."""
        if self._thread.is_alive():
            self._tasks.put(_STOP)
            self._thread.join()

    # ------------------------------------------------------------------ writer thread
    def _loop(self) -> None:
        try:
            conn = connect(self.path)
        except BaseException as exc:  # reported to the constructor
            self._start_error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            while True:
                item = self._tasks.get()
                if item is _STOP:
                    break
                future, fn, args, kwargs = item
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    result = fn(conn, *args, **kwargs)
                    conn.execute("COMMIT")
                except BaseException as exc:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    future.set_exception(exc)
                else:
                    future.set_result(result)
        finally:
            conn.close()


class _Raise:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_END = object()


def write_stream(
    writer: StoreWriter,
    consume: Callable[..., T],
    items: Any,
    *args: Any,
    maxsize: int = 4,
    **kwargs: Any,
) -> T:
    """Pipe ``items`` from the calling thread into one write transaction.

    The calling thread iterates ``items`` (parsing, computing) while the writer thread runs
    ``consume(conn, iterator, *args, **kwargs)`` over them in a single transaction, so the two
    overlap and the whole stream is committed or rolled back together. An exception raised
    while producing ``items`` is re-raised inside ``consume`` (rolling it back) and here.
    """
    channel: queue.Queue = queue.Queue(maxsize=maxsize)

    def drain():
        while True:
            item = channel.get()
            if item is _END:
                return
            if isinstance(item, _Raise):
                raise item.exc
            yield item

    future = writer.submit(consume, drain(), *args, **kwargs)

    def put(item: Any) -> bool:
        while True:
            try:
                channel.put(item, timeout=0.05)
                return True
            except queue.Full:
                if future.done():
                    return False

    try:
        for item in items:
            if not put(item):
                break
        put(_END)
    except BaseException as exc:
        if not put(_Raise(exc)):
            raise
    return future.result()
