"""Named errors of the LLM layer (codes ``CB7xx``).

Each says what went wrong and what the user can do. Messages never contain an API key:
every message built from a server's answer goes through :func:`engine.llm.keys.redact`.
"""

from __future__ import annotations

from engine.errors import CounterbiasError


class LLMError(CounterbiasError):
    """A language-model call or set-up failed."""

    code = "CB700"
    #: Whether sending the same request again later may succeed.
    retriable = False
    #: Whether every other request of the run would fail the same way (bad key, no server,
    #: unknown model): a run stops at the first such failure instead of sending the rest.
    fatal = False
    #: Whether the failure says the endpoint is broken (5xx, timeouts, dropped connections, garbled or
    #: oversized answers): :data:`engine.llm.guard.BREAKER_LIMIT` of them in a row stop a run.
    breaks_circuit = False


class EndpointUnreachableError(LLMError):
    """No server answers at the configured address."""

    code = "CB701"
    fatal = True
    retriable = True
    breaks_circuit = True


class LLMAuthError(LLMError):
    """The server refused the API key (HTTP 401/403)."""

    code = "CB702"
    fatal = True


class ModelNotFoundError(LLMError):
    """The server (or the local model list) does not know the model name."""

    code = "CB703"
    fatal = True


class BadResponseError(LLMError):
    """The server answered with something that is not a chat completion."""

    code = "CB704"
    retriable = True
    breaks_circuit = True


class LLMTimeoutError(LLMError):
    """The server did not answer within the configured time."""

    code = "CB705"
    retriable = True
    breaks_circuit = True


class RateLimitedError(LLMError):
    """The server kept answering HTTP 429 (too many requests) after every retry."""

    code = "CB706"
    retriable = True


class ServerError(LLMError):
    """The server kept failing (HTTP 5xx) after every retry."""

    code = "CB707"
    retriable = True
    breaks_circuit = True


class RequestRejectedError(LLMError):
    """The server rejected the request itself (HTTP 400/422): a parameter it does not support."""

    code = "CB708"


class BackendNotFoundError(LLMError):
    """No LLM backend is registered under the configured name."""

    code = "CB709"


class LLMConfigError(LLMError):
    """An LLM setting is invalid (unknown parameter, bad value)."""

    code = "CB710"


class MissingAPIKeyError(LLMError):
    """The configured API-key environment variable is unset and the keyring holds no key."""

    code = "CB711"


class ModelFileError(LLMError):
    """A bundled model file is missing, incomplete or fails its checksum."""

    code = "CB712"


class RuntimeMissingError(LLMError):
    """An optional package the backend needs (``openai``, ``xllamacpp``) is not installed."""

    code = "CB713"


class AnswerTooLargeError(LLMError):
    """An answer was longer than its ``max_tokens`` allow (:func:`engine.llm.guard.answer_byte_cap`); refused."""

    code = "CB714"
    breaks_circuit = True


class EndpointFailingError(LLMError):
    """Calls failed in a row as a broken endpoint fails (:class:`engine.llm.guard.CircuitBreaker`): the run stops."""

    code = "CB715"
    fatal = True
    retriable = True


class PromptTooLongError(LLMError):
    """A prompt was longer than :data:`engine.llm.guard.MAX_PROMPT_CHARS`: not sent, the item fails."""

    code = "CB716"
