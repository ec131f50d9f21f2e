"""Bounds on what one LLM request may cost: a deadline, an answer-size cap, and a circuit breaker.

* **Deadline.** ``timeout_s`` of the :class:`~engine.llm.config.LLMConfig` bounds each HTTP
  request from the moment it is sent to the last byte of the answer (connecting, waiting for
  the headers and reading the body), not only the pause between two bytes: a server that drips
  one byte a second cannot hold a request for longer. The socket timeout stays the bound on a
  silence. A request past its deadline fails like any timeout (the ``openai`` client retries
  it within ``max_retries``), so one call takes at most about ``(1 + max_retries) * timeout_s``
  plus the client's backoff.
* **Answer cap.** An answer (headers excluded) may hold at most :func:`answer_byte_cap` bytes of
  its ``max_tokens``. The body is counted while it is read and reading stops at the cap, so an
  oversized answer is never held in memory whole; the request fails with
  :class:`~engine.llm.errors.AnswerTooLargeError` (not retried, never cached). The server is asked
  not to compress (``Accept-Encoding: identity``), so the bytes counted are the bytes decoded.
* **Prompt size.** A prompt of more than :data:`MAX_PROMPT_CHARS` characters is not sent
  (:func:`check_prompt`): the item fails with :class:`~engine.llm.errors.PromptTooLongError`.
* **Circuit breaker.** :class:`CircuitBreaker` counts calls that failed in a row the way a broken
  endpoint fails (5xx, timeouts, dropped connections, garbled or oversized answers: the errors whose
  ``breaks_circuit`` is set); at :data:`BREAKER_LIMIT` the run stops with
  :class:`~engine.llm.errors.EndpointFailingError`, as a refused key stops it
  (:class:`engine.llm.cache.CachedClient`). Any answer resets the count.
"""

from __future__ import annotations

import asyncio
import json
import time
from functools import lru_cache
from typing import Any

from engine.llm.base import FALLBACK_MAX_TOKENS, Failure
from engine.llm.errors import AnswerTooLargeError, EndpointFailingError, LLMError, PromptTooLongError

__all__ = ["BREAKER_LIMIT", "BYTES_PER_TOKEN", "ENVELOPE_BYTES", "MAX_EDIT_CHARS", "MAX_PROMPT_CHARS", "CircuitBreaker", "GuardedTransport",
           "answer_byte_cap", "check_prompt", "text_too_long"]

#: Bytes of answer allowed per token of ``max_tokens`` (a token is a few characters; JSON may escape
#: each as ``\\uXXXX``, six bytes).
BYTES_PER_TOKEN = 64
#: Bytes allowed on top for the JSON envelope (ids, usage, timings, an error body).
ENVELOPE_BYTES = 64 * 1024
#: Calls failing in a row, as a broken endpoint fails, that stop a run.
BREAKER_LIMIT = 5
#: Longest text an LLM edits whole (a review; the import's default cell limit): a longer one is skipped with its
#: reason, not read sentence by sentence for minutes.
MAX_EDIT_CHARS = 50_000
#: Longest prompt sent, in characters (about 125,000 tokens: more than the largest common context window).
MAX_PROMPT_CHARS = 500_000


def answer_byte_cap(max_tokens: int | None) -> int:
    """Most bytes an answer of at most ``max_tokens`` tokens may take (``None``: the fallback limit).

    Examples
    --------
    >>> answer_byte_cap(256)
    81920
    >>> answer_byte_cap(None) == answer_byte_cap(1024)
    True
    """
    tokens = int(max_tokens) if max_tokens else FALLBACK_MAX_TOKENS
    return ENVELOPE_BYTES + BYTES_PER_TOKEN * max(1, tokens)


def too_large(where: str, limit: int, max_tokens: int | None, *, received: int | None = None) -> AnswerTooLargeError:
    """The named error of an answer over ``limit`` bytes."""
    size = f"more than {limit:,} bytes" if received is None else f"{received:,} bytes"
    return AnswerTooLargeError(
        f"{where[:1].upper()}{where[1:]} sent an answer of {size}; at most {limit:,} bytes are accepted for max_tokens "
        f"{max_tokens or FALLBACK_MAX_TOKENS}. The answer was refused and not stored.",
        "The server ignores max_tokens or is not a chat-completions API: check its settings and the address; "
        "lower max_tokens only if the model rambles.",
    )


def text_too_long(text: str, limit: int | None = None) -> str | None:
    """Why ``text`` is too long for an LLM edit (``None`` when it is not): over ``limit`` characters
    (default :data:`MAX_EDIT_CHARS`).

    >>> text_too_long("x" * 60_000)
    'Text too long: 60,000 characters, the limit is 50,000.'
    """
    limit = MAX_EDIT_CHARS if limit is None else limit
    return f"Text too long: {len(text):,} characters, the limit is {limit:,}." if len(text) > limit else None


def check_prompt(messages: Any, limit: int = MAX_PROMPT_CHARS) -> None:
    """Refuse a prompt (its messages' text) longer than ``limit`` characters, before it is sent.

    Raises
    ------
    PromptTooLongError
        Naming the length and the limit; the item fails, the run goes on.
    """
    size = sum(len(m.get("content") or "") for m in messages)
    if size > limit:
        raise PromptTooLongError(
            f"Text too long: the prompt holds {size:,} characters, the limit is {limit:,}; it was not sent.",
            "Shorten this example (or import with a lower --max-cell-chars); the other examples are processed.",
        )


def _max_tokens_of(request: Any) -> int | None:
    """``max_tokens`` of a chat-completions request body, or ``None`` when it has none or is not JSON."""
    try:
        value = json.loads(request.content or b"{}").get("max_tokens")
    except (ValueError, AttributeError, TypeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


class GuardedTransport:
    """An HTTP transport that puts a deadline on each request and a cap on each answer's size.

    Parameters
    ----------
    inner
        The transport that sends (``httpx2.AsyncHTTPTransport`` or a wrapper of it).
    httpx2
        The imported module (imported lazily by the caller).
    deadline_s
        Seconds from sending a request to the last byte of its answer.
    where
        Who answers, for messages (``"the LLM server at http://..."``).
    """

    def __init__(self, inner: Any, httpx2: Any, *, deadline_s: float, where: str) -> None:
        self.inner = inner
        self.httpx2 = httpx2
        self.deadline_s = float(deadline_s)
        self.where = where

    async def handle_async_request(self, request: Any) -> Any:
        deadline = time.monotonic() + self.deadline_s
        max_tokens = _max_tokens_of(request)
        limit = answer_byte_cap(max_tokens)
        request.headers["Accept-Encoding"] = "identity"
        try:
            response = await asyncio.wait_for(self.inner.handle_async_request(request), self.deadline_s)
        except asyncio.TimeoutError:
            raise self._timeout(request) from None
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await response.aclose()
            raise self._too_large(request, limit, max_tokens, int(declared))
        stream = _stream_class(self.httpx2.AsyncByteStream)
        response.stream = stream(self, response.stream, request, deadline, limit, max_tokens)
        return response

    def _timeout(self, request: Any) -> Any:
        return self.httpx2.ReadTimeout(
            f"no complete answer from {self.where} within {self.deadline_s:g} s", request=request)

    def _too_large(self, request: Any, limit: int, max_tokens: int | None, received: int | None) -> LLMError:
        error = too_large(self.where, limit, max_tokens, received=received)
        error.request = request  # type: ignore[attr-defined]  # its retry-count header says how many were sent
        return error

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> GuardedTransport:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.inner.__aexit__(*exc)


class _GuardedStream:
    """The body of one answer, read until the request's deadline and up to its byte cap (mixed into an
    ``httpx2.AsyncByteStream`` by :func:`_stream_class`: the response checks the type)."""

    def __init__(self, guard: GuardedTransport, inner: Any, request: Any, deadline: float, limit: int,
                 max_tokens: int | None) -> None:
        self.guard = guard
        self.inner = inner
        self.request = request
        self.deadline = deadline
        self.limit = limit
        self.max_tokens = max_tokens
        self.received = 0

    async def __aiter__(self) -> Any:
        chunks = self.inner.__aiter__()
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise self.guard._timeout(self.request)
            try:
                chunk = await asyncio.wait_for(chunks.__anext__(), remaining)
            except StopAsyncIteration:
                return
            except asyncio.TimeoutError:
                raise self.guard._timeout(self.request) from None
            self.received += len(chunk)
            if self.received > self.limit:
                raise self.guard._too_large(self.request, self.limit, self.max_tokens, None)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


@lru_cache(maxsize=1)
def _stream_class(base: type) -> type:
    return type("GuardedStream", (_GuardedStream, base), {})


class CircuitBreaker:
    """Counts calls that failed in a row as a broken endpoint fails; says when a run must stop.

    Parameters
    ----------
    limit
        Failures in a row that open the breaker (0: never).

    Examples
    --------
    >>> from engine.llm.errors import ServerError
    >>> breaker = CircuitBreaker(2)
    >>> fail = Failure.from_error(ServerError("down", ""))
    >>> breaker.record(fail) is None, breaker.record(fail).code
    (True, 'CB715')
    """

    def __init__(self, limit: int = BREAKER_LIMIT) -> None:
        self.limit = int(limit)
        self.in_a_row = 0

    def record(self, outcome: Any) -> Failure | None:
        """Count ``outcome`` (a result resets the count); the failure that stops the run once ``limit`` is reached."""
        if not isinstance(outcome, Failure):
            self.in_a_row = 0
            return None
        if not getattr(outcome.to_error(), "breaks_circuit", False):
            return None  # a refused request, a bad parameter: says nothing about the endpoint
        self.in_a_row += 1
        if self.limit <= 0 or self.in_a_row < self.limit:
            return None
        error = EndpointFailingError(
            f"The LLM endpoint failed {self.in_a_row} calls in a row (each after its retries); the last: "
            f"[{outcome.code}] {outcome.message}",
            "The server is down or broken: check it (its log, the address, the model), then run the step again; "
            "what was done is kept and only the rest is sent.",
        )
        return Failure.from_error(error, outcome.attempts)
