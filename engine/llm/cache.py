"""Response cache in the project file: an identical call is never sent twice.

The key of a call is the sha256 of the canonical JSON of ``(backend, model, messages,
params)`` (params after the backend's defaults are filled in). Entries live in the
project's ``llm_cache`` table: lookups read through :attr:`Project.db`, new entries are
written through :attr:`Project.writer`, one small transaction per response, *as each
response arrives*, so a crash or a cancel loses no finished call.

Failures are not cached: a failed item is sent again on the next run.

A failure that every other request would share (:attr:`~engine.llm.errors.LLMError.fatal`:
the key is refused, no server answers, the model is unknown) stops the batch at once: the
requests still in flight are cancelled, none is sent after it, and the named error is raised
(answers that arrived before are stored). The first request a client sends goes out alone,
so a wrong key or address costs one request, not one per concurrent slot.

Calls that fail in a row as a broken endpoint fails (HTTP 5xx, timeouts, garbled or oversized
answers, each after its retries) are counted by the client's
:class:`~engine.llm.guard.CircuitBreaker`, across its batches; at ``breaker_limit`` of them the run
stops the same way, with :class:`~engine.llm.errors.EndpointFailingError`. An answer resets the count.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.llm.base import (
    ChatBackend,
    ChatRequest,
    ChatResult,
    Failure,
    Outcome,
    ResultCallback,
    Usage,
    canonical_json,
)
from engine.errors import Cancelled
from engine.llm.errors import EndpointFailingError, LLMError
from engine.llm.guard import BREAKER_LIMIT, CircuitBreaker
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.store.project import Project

_LOOKUP_CHUNK = 500
#: Seconds the first request of a client goes out alone before the others follow.
LEAD_S = 1.0


def cache_key(backend: str, model: str, request: ChatRequest) -> str:
    """sha256 (hex) of the canonical JSON of ``(backend, model, messages, params)``.

    Examples
    --------
    >>> a = ChatRequest([{"role": "user", "content": "hi"}], {"temperature": 0, "max_tokens": 5})
    >>> b = ChatRequest([{"content": "hi", "role": "user"}], {"max_tokens": 5.0, "temperature": 0.0})
    >>> cache_key("local", "m", a) == cache_key("local", "m", b)
    True
    """
    payload = {"backend": backend, "model": model, "messages": list(request.messages), "params": request.params}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


@dataclass
class BatchResult:
    """What :meth:`CachedClient.chat_many` returns.

    Attributes
    ----------
    results
        One :class:`ChatResult` (``cached=True`` for hits) or :class:`Failure` per request.
    usage
        Tokens of the calls sent in this batch.
    cached_usage
        Tokens the cache hits cost when they were first made (saved now).
    sent
        Requests actually sent (identical requests in one batch are sent once).
    hits
        Requests answered from the cache.
    seconds
        Wall time of the batch.
    """

    results: list[Outcome]
    usage: Usage = field(default_factory=Usage)
    cached_usage: Usage = field(default_factory=Usage)
    sent: int = 0
    hits: int = 0
    seconds: float = 0.0

    @property
    def failures(self) -> list[int]:
        """Indexes of the failed requests."""
        return [i for i, r in enumerate(self.results) if isinstance(r, Failure)]

    def summary(self) -> dict[str, Any]:
        """Counts and token totals as a JSON-ready dict."""
        return {
            "requests": len(self.results),
            "sent": self.sent,
            "cache_hits": self.hits,
            "failed": len(self.failures),
            "usage": self.usage.to_dict(),
            "cached_usage": self.cached_usage.to_dict(),
            "seconds": round(self.seconds, 3),
        }


class CachedClient:
    """A backend behind the project's response cache.

    Parameters
    ----------
    backend
        Any :class:`~engine.llm.base.ChatBackend`.
    project
        The open project whose ``llm_cache`` table holds the responses.
    read, write
        Look up / store responses (both on by default).
    breaker_limit
        Calls failing in a row as a broken endpoint fails that stop the run (0: never; see the module doc).

    Attributes
    ----------
    total
        :class:`BatchResult`-style running totals over every batch of this client
        (``usage``, ``cached_usage``, ``sent``, ``hits``).
    """

    def __init__(self, backend: ChatBackend, project: Project, *, read: bool = True, write: bool = True,
                 breaker_limit: int = BREAKER_LIMIT) -> None:
        self.backend = backend
        self.breaker = CircuitBreaker(breaker_limit)
        self.project = project
        self.read = read
        self.write = write
        self.total = BatchResult(results=[])
        #: Whether a request of this client got an answer yet (until then, one goes out alone).
        self.answered = False

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def model(self) -> str:
        return self.backend.model

    def __repr__(self) -> str:
        return f"CachedClient({self.backend!r})"

    def key(self, request: ChatRequest) -> str:
        """The cache key of ``request`` once this backend's defaults are filled in."""
        return cache_key(self.backend.name, self.backend.model, request.with_defaults(self.backend.params))

    def lookup(self, keys: Iterable[str]) -> dict[str, ChatResult]:
        """Cached results for those of ``keys`` that are in the cache."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, ChatResult] = {}
        conn = self.project.db.conn
        for start in range(0, len(keys), _LOOKUP_CHUNK):
            chunk = keys[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, response in conn.execute(
                f"SELECT key, response FROM llm_cache WHERE key IN ({marks})", chunk
            ):
                try:
                    found[key] = ChatResult.from_dict(json.loads(response), cached=True)
                except (ValueError, TypeError, AttributeError):
                    continue  # a damaged entry is a miss; it is overwritten when stored again
        return found

    def chat(self, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any] | None = None) -> ChatResult:
        """One completion through the cache.

        Raises
        ------
        LLMError
            The named error of the failed call.
        """
        outcome = self.chat_many([ChatRequest(messages, params)]).results[0]
        if isinstance(outcome, Failure):
            raise outcome.to_error()
        return outcome

    def chat_many(
        self,
        requests: Sequence[ChatRequest],
        *,
        progress: ProgressFn = no_progress,
        cancel: CancelToken | None = None,
    ) -> BatchResult:
        """Answer ``requests`` from the cache, sending only the misses (each unique one once).

        Every response is stored as soon as it arrives.

        Raises
        ------
        LLMError
            A fatal failure (refused key, no server, unknown model) or the circuit breaker's
            :class:`~engine.llm.errors.EndpointFailingError`: the batch stopped there.
        Cancelled
            After every response that arrived before the cancel has been stored.
        """
        started = time.perf_counter()
        prepared = [r.with_defaults(self.backend.params) for r in requests]
        keys = [cache_key(self.backend.name, self.backend.model, r) for r in prepared]
        hits = self.lookup(keys) if self.read else {}
        results: list[Outcome | None] = [hits.get(k) for k in keys]
        miss_keys = list(dict.fromkeys(k for k, r in zip(keys, results) if r is None))
        first = {k: i for i, k in reversed(list(enumerate(keys)))}
        to_send = [prepared[first[k]] for k in miss_keys]
        total = max(len(prepared), 1)
        n_hits = len(prepared) - sum(1 for r in results if r is None)
        if prepared:
            progress(n_hits / total, f"{n_hits} answers from the cache")
        pending: list[Future] = []
        usage = Usage()

        def on_result(index: int, outcome: Outcome) -> None:
            nonlocal usage
            key = miss_keys[index]
            if isinstance(outcome, ChatResult):
                self.answered = True
                usage = usage + outcome.usage
                if self.write:
                    pending.append(self.project.writer.submit(_store, key, self.backend, to_send[index], outcome))

        def sub_progress(fraction: float, message: str = "") -> None:
            progress((n_hits + fraction * len(to_send)) / total, message)

        sent = self._send(to_send, on_result, sub_progress, cancel, pending)
        by_key = dict(zip(miss_keys, sent))
        final = [r if r is not None else by_key[k] for k, r in zip(keys, results)]
        batch = BatchResult(
            results=final,
            usage=usage,
            cached_usage=sum((r.usage for r in final if isinstance(r, ChatResult) and r.cached), Usage()),
            sent=len(to_send),
            hits=n_hits,
            seconds=time.perf_counter() - started,
        )
        self._add_to_total(batch)
        return batch

    def _send(
        self,
        to_send: list[ChatRequest],
        on_result: ResultCallback,
        progress: ProgressFn,
        cancel: CancelToken | None,
        pending: list[Future],
    ) -> list[Outcome]:
        """Send ``to_send`` through the backend; stop at the first fatal failure.

        Until this client has had an answer, the first request goes out alone for up to
        :data:`LEAD_S` seconds (a refused key or a wrong address answers faster than that).

        Raises
        ------
        LLMError
            The first fatal failure (see the module doc), after the stored answers are written.
        Cancelled
            ``cancel`` was set.
        """
        user = ensure_token(cancel)
        stop = _StopToken(user)
        fatal: list[Failure] = []

        def watch(index: int, outcome: Outcome) -> None:
            on_result(index, outcome)
            tripped = self.breaker.record(outcome)
            if isinstance(outcome, Failure) and is_fatal(outcome):
                tripped = outcome
            if tripped is not None and not fatal:
                fatal.append(tripped)
                stop.cancel()  # the batch loop cancels what is in flight and sends nothing more

        lead = 0.0 if self.answered else LEAD_S
        try:
            try:
                out = self.backend.chat_many(to_send, progress=progress, cancel=stop, on_result=watch, lead_s=lead)
            except Cancelled:
                if not fatal or user.cancelled:
                    raise
            if fatal:
                raise _stopped(fatal[0])
        finally:
            for future in pending:
                future.result()  # stored before we return or re-raise
        return out

    def close(self) -> None:
        """Close the wrapped backend."""
        self.backend.close()

    def _add_to_total(self, batch: BatchResult) -> None:
        t = self.total
        t.usage = t.usage + batch.usage
        t.cached_usage = t.cached_usage + batch.cached_usage
        t.sent += batch.sent
        t.hits += batch.hits
        t.seconds += batch.seconds


def is_fatal(failure: Failure) -> bool:
    """Whether ``failure`` is one every other request of the run would share (see the module doc)."""
    return bool(getattr(failure.to_error(), "fatal", False))


def _stopped(failure: Failure) -> LLMError:
    """The named error of a fatal ``failure``, saying that the run stopped there."""
    error = failure.to_error()
    where = "there" if isinstance(error, EndpointFailingError) else "at this first failure"
    error.message = (f"{error.message} The run stopped {where}: no further request was sent; "
                     "answers received before are kept.")
    error.args = (error.message,)
    return error


class _StopToken(CancelToken):
    """A cancel token that is set when it is cancelled itself or when ``parent`` is."""

    def __init__(self, parent: CancelToken) -> None:
        super().__init__()
        self.parent = parent

    @property
    def cancelled(self) -> bool:
        return self._event.is_set() or self.parent.cancelled

    def raise_if_cancelled(self) -> None:
        if self.cancelled:
            raise Cancelled("cancelled by the user")


def _store(conn: sqlite3.Connection, key: str, backend: ChatBackend, request: ChatRequest, result: ChatResult) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO llm_cache (key, backend, model, request, response, usage, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            key,
            backend.name,
            backend.model,
            canonical_json({"messages": list(request.messages), "params": request.params}),
            json.dumps(result.to_dict(), ensure_ascii=False),
            json.dumps(result.usage.to_dict()),
            now(),
        ),
    )
