"""Backend ``openai``: any OpenAI-compatible chat-completions server.

Works with OpenAI itself and with servers that speak its API (vLLM, Ollama, llama.cpp's
server, LM Studio, and :mod:`engine.llm.server`). The ``openai`` package is imported
lazily, inside the calls.

Behaviour
---------
* The API key comes from the environment variable named in the config, or the OS
  keyring (:mod:`engine.llm.keys`); it is never stored, logged or shown: ``repr`` and
  every error message are redacted.
* Requests run on an :class:`openai.AsyncOpenAI` client with at most ``concurrency`` in
  flight (an :class:`asyncio.Semaphore`), each bounded by ``timeout_s`` (a deadline, not only an idle timeout).
* Retries are the ``openai`` client's own (``max_retries`` of the config): it re-sends after
  HTTP 408, 409, 429 and 5xx, a timeout or a dropped connection (also one that breaks off
  mid-answer, or one past its deadline), with exponential backoff (0.5 s doubling up to 8 s, minus up to 25 % jitter),
  waiting what ``Retry-After`` / ``retry-after-ms`` asks when that is between 0 and 120 s;
  a server asking for longer is not retried (the item fails as retriable, for the next run).
  401/403, 404 and other 4xx are never retried.
* Connecting is bounded apart from answering: at most :data:`CONNECT_TIMEOUT_S` per attempt,
  and a refused or unresolvable connection is tried :data:`CONNECT_RETRIES` more time(s) after
  :data:`CONNECT_RETRY_DELAY_S`, never through the client's backoff (a run against a wrong
  address fails within a few seconds; see :class:`_FailFastConnect`).
* One case the client gets wrong for us, shown by
  ``tests/engine/llm/test_openai_backend.py::test_every_transient_fault_is_retried_until_the_batch_completes``:
  a ``200`` answer whose body is not a chat completion (an HTML error page from a proxy,
  cut-off JSON) is parsed only after the client's retry loop, so the client never re-sends
  it. This module re-sends such a request itself, at once, within the same ``max_retries``
  budget (a call never makes more than ``1 + max_retries`` requests in all).
* Each request has a deadline (``timeout_s``, from sending it to the answer's last byte) and each
  answer a size cap from its ``max_tokens``, counted while reading, so no more than the cap is held
  (:class:`~engine.llm.guard.GuardedTransport`); an oversized answer fails as
  :class:`~engine.llm.errors.AnswerTooLargeError` and is not retried.
* :meth:`OpenAIBackend.chat_many` never raises for one item: a failed item comes back as
  a :class:`~engine.llm.base.Failure` saying whether it is worth retrying and how many
  requests were sent for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from engine.llm.base import ChatRequest, ChatResult, Failure, Outcome, ResultCallback, Usage, timing_fields
from engine.llm.batch import gather_bounded, run_coroutine
from engine.llm.config import LLMConfig
from engine.llm.errors import (
    BadResponseError,
    EndpointUnreachableError,
    LLMAuthError,
    LLMError,
    LLMTimeoutError,
    ModelNotFoundError,
    RateLimitedError,
    RequestRejectedError,
    RuntimeMissingError,
    ServerError,
)
from engine.llm.guard import GuardedTransport, check_prompt
from engine.llm.keys import Secret, redact, resolve_api_key
from engine.llm.registry import register_backend
from engine.progress import CancelToken, ProgressFn, no_progress

log = logging.getLogger(__name__)

OPENAI_URL = "https://api.openai.com/v1"
#: Longest part of a server's error text quoted in a message.
MAX_QUOTE = 300
#: Seconds to wait for a connection to open (the answer itself may take ``timeout_s``).
CONNECT_TIMEOUT_S = 5.0
#: Extra attempts after a refused / unresolvable connection (never more than ``max_retries``).
CONNECT_RETRIES = 1
#: Pause before such an extra attempt (seconds).
CONNECT_RETRY_DELAY_S = 0.25


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise RuntimeMissingError(
            "The 'openai' package is not installed.", "Install it with: pip install openai"
        ) from exc
    return openai


@register_backend("openai")
class OpenAIBackend:
    """Chat completions from an OpenAI-compatible HTTP server.

    Parameters
    ----------
    config
        ``base_url`` (``None``: OpenAI), ``model``, ``api_key_env``, ``concurrency``,
        ``timeout_s``, ``max_retries`` (the client's retries), ``params``.

    Raises
    ------
    MissingAPIKeyError
        ``api_key_env`` names a variable that is unset and not in the keyring.
    """

    name = "openai"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.params = config.params
        self.model = config.model
        self.base_url = (config.base_url or OPENAI_URL).rstrip("/")
        self._key: Secret = resolve_api_key(config.api_key_env)

    def __repr__(self) -> str:
        key = f", api_key_env={self.config.api_key_env!r}" if self.config.api_key_env else ""
        return f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r}{key})"

    # ------------------------------------------------------------------ public API
    def chat(self, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any] | None = None) -> ChatResult:
        """One completion (with retries).

        Raises
        ------
        LLMError
            The named error of the last attempt.
        """
        request = ChatRequest(messages, params).with_defaults(self.params)

        async def main() -> ChatResult:
            async with self._client() as client:
                outcome = await self._call(client, request, raise_errors=True)
            assert isinstance(outcome, ChatResult)
            return outcome

        return run_coroutine(main)

    def chat_many(
        self,
        requests: Sequence[ChatRequest],
        *,
        progress: ProgressFn = no_progress,
        cancel: CancelToken | None = None,
        on_result: ResultCallback | None = None,
        lead_s: float = 0.0,
    ) -> list[Outcome]:
        """Run ``requests`` concurrently; one result or :class:`Failure` per request, in order.

        Runs in its own event loop (safe from a worker thread). ``on_result(index, outcome)``
        is called as each item finishes. ``lead_s``: see
        :meth:`~engine.llm.base.ChatBackend.chat_many`.

        Raises
        ------
        Cancelled
            When ``cancel`` is set (finished items were already reported).
        """
        prepared = [r.with_defaults(self.params) for r in requests]
        if not prepared:
            return []

        async def main() -> list[Outcome]:
            async with self._client() as client:
                return await gather_bounded(
                    prepared,
                    lambda req: self._call(client, req),
                    concurrency=self.config.concurrency,
                    progress=progress,
                    cancel=cancel,
                    on_result=on_result,
                    on_crash=self._crash_failure,
                    lead_s=lead_s,
                )

        return run_coroutine(main)

    def list_models(self) -> list[str]:
        """Model names the server offers (a quick connection and key check).

        Raises
        ------
        LLMError
        """

        async def main() -> list[str]:
            async with self._client() as client:
                try:
                    page = await client.models.list()
                except Exception as exc:
                    raise self._map_error(exc) from None
                return [m.id for m in getattr(page, "data", [])]

        return run_coroutine(main)

    def load(self, *, progress: ProgressFn = no_progress) -> None:
        """Nothing to load: the model runs on the server."""

    def close(self) -> None:
        """Nothing to release: each batch opens and closes its own client."""

    # ------------------------------------------------------------------ internals
    def _client(self) -> Any:
        openai = _import_openai()
        import httpx2

        timeout = httpx2.Timeout(float(self.config.timeout_s),
                                 connect=min(CONNECT_TIMEOUT_S, float(self.config.timeout_s)))
        transport = GuardedTransport(
            _FailFastConnect(httpx2.AsyncHTTPTransport(), openai, httpx2,
                             retries=min(CONNECT_RETRIES, self.config.max_retries)),
            httpx2, deadline_s=float(self.config.timeout_s), where=f"the LLM server at {self.base_url}")
        return openai.AsyncOpenAI(
            api_key=self._key.reveal(),
            base_url=self.base_url,
            timeout=timeout,
            max_retries=self.config.max_retries,
            http_client=openai.DefaultAsyncHttpxClient(transport=transport, timeout=timeout),
        )

    async def _call(self, client: Any, request: ChatRequest, *, raise_errors: bool = False) -> Outcome:
        """Send ``request`` (the client retries); re-send a garbled 200 answer within the same budget."""
        budget = self.config.max_retries
        sent = 0
        try:
            check_prompt(request.messages)
        except LLMError as exc:
            return self._give_up(exc, 0, raise_errors)
        while True:
            sender = client if sent == 0 else client.with_options(max_retries=budget - sent)
            try:
                raw = await sender.chat.completions.with_raw_response.create(
                    model=self.model, messages=list(request.messages), **request.sent_params()
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return self._give_up(self._map_error(exc), sent + _requests_sent(exc), raise_errors)
            sent += 1 + int(getattr(raw, "retries_taken", 0) or 0)
            try:
                return self._to_result(raw.parse())
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = exc if isinstance(exc, LLMError) else self._map_error(exc)
            if not isinstance(error, BadResponseError) or sent > budget:
                return self._give_up(error, sent, raise_errors)
            log.info("The LLM server sent an unusable answer; retry %d of %d", sent, budget)

    @staticmethod
    def _give_up(error: LLMError, attempts: int, raise_errors: bool) -> Outcome:
        if raise_errors:
            raise error
        return Failure.from_error(error, attempts)

    def _to_result(self, completion: Any) -> ChatResult:
        try:
            choice = completion.choices[0]
            text = choice.message.content
            if not isinstance(text, str):
                raise TypeError("no text content")
            usage = getattr(completion, "usage", None)
            return ChatResult(
                text=text,
                usage=Usage(int(getattr(usage, "prompt_tokens", 0) or 0),
                            int(getattr(usage, "completion_tokens", 0) or 0),
                            # vLLM and OpenAI say how much of the prompt came from their cache; a llama.cpp
                            # server adds its timings beside the usage
                            **timing_fields(_extra(completion, "timings"),
                                            getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens",
                                                    None))),
                model=str(getattr(completion, "model", "") or self.model),
                finish_reason=str(getattr(choice, "finish_reason", None) or "stop"),
            )
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            snippet = completion if isinstance(completion, str) else type(completion).__name__
            raise self._bad_response(f"it is not a chat completion ({type(exc).__name__}): {snippet!r}") from None

    def _bad_response(self, detail: str) -> BadResponseError:
        return BadResponseError(
            self._redact(f"The LLM server at {self.base_url} sent an unusable answer: {detail}"),
            "Check that the address points at an OpenAI-compatible API (usually ending in /v1). "
            "If this happens only now and then, run the step again: finished items are kept.",
        )

    def _crash_failure(self, exc: BaseException) -> Failure:
        log.exception("unexpected error in an LLM call")
        error = LLMError(self._redact(f"Unexpected error in an LLM call: {type(exc).__name__}: {exc}"),
                         "Run the step again; if it recurs, report it with the log.")
        return Failure.from_error(error)

    def _redact(self, text: str) -> str:
        return redact(text, self._key)

    def _server_text(self, exc: Any) -> str:
        body = getattr(exc, "body", None)
        if isinstance(body, dict):
            body = body.get("error", body)
            if isinstance(body, dict):
                body = body.get("message", body)
        text = str(body if body else getattr(exc, "message", exc))
        return self._redact(text[:MAX_QUOTE])

    def _map_error(self, exc: BaseException) -> LLMError:
        """Translate an ``openai``/``httpx`` exception into a named :class:`LLMError`."""
        openai = _import_openai()
        where = f"the LLM server at {self.base_url}"
        if isinstance(exc, openai.APITimeoutError):
            return LLMTimeoutError(
                f"No answer from {where} within {self.config.timeout_s:g} s.",
                "Raise the timeout, lower the concurrency, or check that the server is not overloaded.",
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f" ({type(cause).__name__})" if cause is not None else ""
            if cause is not None and "protocol" in type(cause).__name__.lower():
                return self._bad_response(f"the connection broke off mid-answer{detail}")
            return EndpointUnreachableError(
                self._redact(f"Could not reach {where}{detail}."),
                "Check that the server is running and the address (host, port, /v1) is right; "
                "to serve the bundled model run 'python -m engine serve-llm'.",
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            text = self._server_text(exc)
            if status in (401, 403):
                err: LLMError = LLMAuthError(
                    f"{where} refused the API key (HTTP {status}): {text}",
                    f"Check the key in the environment variable {self.config.api_key_env or '(none set)'} "
                    "and that it may use this model.",
                )
            elif status == 404:
                err = ModelNotFoundError(
                    f"{where} does not know model {self.model!r} or the address is wrong (HTTP 404): {text}",
                    "Check the model name (the server lists its models at <address>/models) and that the "
                    "address ends with /v1.",
                )
            elif status == 429:
                err = RateLimitedError(
                    f"{where} kept answering 'too many requests' (HTTP 429): {text}",
                    "Lower the concurrency, wait a while, or check the account's rate limits; "
                    "run the step again to finish the remaining items.",
                )
            elif status == 408:
                err = LLMTimeoutError(f"{where} timed out the request (HTTP 408).",
                                      "Run the step again, or lower the concurrency.")
            elif status >= 500 or status == 409:
                err = ServerError(
                    f"{where} failed (HTTP {status}): {text}",
                    "The server has a problem; run the step again later (finished items are kept).",
                )
            else:
                err = RequestRejectedError(
                    f"{where} rejected the request (HTTP {status}): {text}",
                    "The server may not support one of the parameters (seed, top_p, stop); remove it "
                    "from the LLM settings.",
                )
            return err
        if isinstance(exc, openai.APIResponseValidationError):
            return self._bad_response(self._server_text(exc))
        if isinstance(exc, ValueError):  # JSON that does not decode
            return self._bad_response(f"{type(exc).__name__}: {str(exc)[:MAX_QUOTE]}")
        if isinstance(exc, LLMError):
            return exc
        return LLMError(self._redact(f"LLM call failed: {type(exc).__name__}: {str(exc)[:MAX_QUOTE]}"),
                        "Run the step again; if it recurs, report it with the log.")


class _FailFastConnect:
    """An HTTP transport that turns a failed *connection* into an error the client does not retry.

    The ``openai`` client retries a connection error with its exponential backoff (up to
    about 8 s a wait, ``max_retries`` times), so a wrong address used to take most of a minute
    per batch. This transport tries a refused or unresolvable connection ``retries`` more
    time(s) after :data:`CONNECT_RETRY_DELAY_S`, a connect timeout not again, and then raises
    :class:`openai.APIConnectionError`, which the client passes on as it is. The number of
    connection attempts is kept on the error (``connect_attempts``).

    Parameters
    ----------
    inner
        The real transport (``httpx2.AsyncHTTPTransport``).
    openai, httpx2
        The imported modules (imported lazily by the caller).
    retries
        Extra attempts after a refused connection.
    """

    def __init__(self, inner: Any, openai: Any, httpx2: Any, *, retries: int) -> None:
        self.inner = inner
        self.openai = openai
        self.httpx2 = httpx2
        self.retries = retries

    async def handle_async_request(self, request: Any) -> Any:
        attempts = 0
        while True:
            attempts += 1
            try:
                return await self.inner.handle_async_request(request)
            except self.httpx2.ConnectTimeout as exc:
                raise self._error(request, attempts) from exc
            except self.httpx2.ConnectError as exc:
                if attempts > self.retries:
                    raise self._error(request, attempts) from exc
            await asyncio.sleep(CONNECT_RETRY_DELAY_S)

    def _error(self, request: Any, attempts: int) -> Any:
        error = self.openai.APIConnectionError(request=request)
        error.connect_attempts = attempts
        return error

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _FailFastConnect:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.inner.__aexit__(*exc)


def _extra(completion: Any, name: str) -> Any:
    """A field the server sent beside the OpenAI schema (the SDK keeps those in ``model_extra``), or ``None``."""
    extra = getattr(completion, "model_extra", None)
    if isinstance(extra, dict) and name in extra:
        return extra[name]
    return None


def _requests_sent(exc: BaseException) -> int:
    """Requests the client sent for the call that raised ``exc``: its retries plus one.

    The client numbers every request it sends in the ``x-stainless-retry-count`` header;
    its errors keep the last request. A failed connection counts its own attempts
    (:class:`_FailFastConnect`).
    """
    connects = getattr(exc, "connect_attempts", None)
    if isinstance(connects, int):
        return connects
    request = getattr(exc, "request", None)
    try:
        return int(request.headers.get("x-stainless-retry-count", "0")) + 1  # type: ignore[union-attr]
    except (AttributeError, TypeError, ValueError):
        return 1
