"""The chat-backend protocol and the plain values that cross it.

A backend turns chat requests (a list of ``{"role", "content"}`` messages plus sampling
parameters) into :class:`ChatResult` values. :meth:`ChatBackend.chat_many` runs a batch
and never raises for one item's failure: a failed item comes back as a :class:`Failure`
in its slot. Backends are created from an :class:`~engine.llm.config.LLMConfig` through
the string-keyed registry in :mod:`engine.llm.registry`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from engine.llm.errors import LLMConfigError, LLMError
from engine.progress import CancelToken, ProgressFn

#: The sampling parameters every backend understands.
PARAM_KEYS = ("temperature", "max_tokens", "seed", "top_p", "stop")
#: ``max_tokens`` sent when neither the request nor the backend's configuration sets one.
FALLBACK_MAX_TOKENS = 1024

Message = dict[str, str]
Params = dict[str, Any]


@dataclass(frozen=True)
class Usage:
    """Token counts of one call or a sum of calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)

    def to_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Usage:
        data = data or {}
        return cls(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0))


@dataclass(frozen=True)
class ChatResult:
    """One completion.

    Parameters
    ----------
    text
        The assistant message's content (untrusted data: never executed).
    usage
        Tokens the call consumed.
    model
        The model name the server reported.
    finish_reason
        ``"stop"``, ``"length"`` (cut at ``max_tokens``), ...
    cached
        True when the result came from the response cache (nothing was sent).
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str = "stop"
    cached: bool = False

    @property
    def ok(self) -> bool:
        return True

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "usage": self.usage.to_dict(),
            "model": self.model,
            "finish_reason": self.finish_reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, cached: bool = False) -> ChatResult:
        return cls(
            text=str(data.get("text", "")),
            usage=Usage.from_dict(data.get("usage")),
            model=str(data.get("model", "")),
            finish_reason=str(data.get("finish_reason") or "stop"),
            cached=cached,
        )


@dataclass(frozen=True)
class Failure:
    """A batch item that did not produce a completion.

    Parameters
    ----------
    error
        Name of the :class:`~engine.llm.errors.LLMError` subclass (e.g. ``"ServerError"``).
    code
        Its ``CB7xx`` code.
    message, hint
        What went wrong and what to do (API keys redacted).
    retriable
        Whether running the item again later may succeed.
    attempts
        How many times the request was sent.
    """

    error: str
    code: str
    message: str
    hint: str = ""
    retriable: bool = False
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return False

    @classmethod
    def from_error(cls, exc: LLMError, attempts: int = 1) -> Failure:
        return cls(type(exc).__name__, exc.code, exc.message, exc.hint, exc.retriable, attempts)

    def to_error(self) -> LLMError:
        """The named :class:`~engine.llm.errors.LLMError` this failure stands for."""
        from engine.llm import errors

        cls = getattr(errors, self.error, None)
        if not (isinstance(cls, type) and issubclass(cls, LLMError)):
            cls = LLMError
        return cls(self.message, self.hint)

    def to_dict(self) -> dict[str, Any]:
        return {
            "error": self.error,
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
            "retriable": self.retriable,
            "attempts": self.attempts,
        }


Outcome = ChatResult | Failure
#: Called as ``on_result(index, outcome)`` in the thread that called ``chat_many``, as each item finishes.
ResultCallback = Callable[[int, Outcome], None]


@dataclass(frozen=True)
class ChatRequest:
    """Messages plus sampling parameters (see :func:`normalize_params`)."""

    messages: tuple[Message, ...]
    params: Params = field(default_factory=dict)

    def __init__(self, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "messages", normalize_messages(messages))
        object.__setattr__(self, "params", normalize_params(params or {}))

    def sent_params(self) -> dict[str, Any]:
        """The parameters a backend sends: these, with ``max_tokens`` :data:`FALLBACK_MAX_TOKENS` when unset.

        A request without a token limit would run on to the end of the context when the model
        repeats itself (minutes of a laptop's CPU for nothing); the cache key is taken from the
        request as given, so adding the cap keeps every stored answer found.
        """
        return dict(self.params) if "max_tokens" in self.params else {**self.params, "max_tokens": FALLBACK_MAX_TOKENS}

    def with_defaults(self, defaults: Mapping[str, Any]) -> ChatRequest:
        """This request with ``defaults`` filled in where it sets nothing."""
        return ChatRequest(self.messages, {**normalize_params(defaults), **self.params})


def normalize_messages(messages: Sequence[Mapping[str, str]]) -> tuple[Message, ...]:
    """Validate chat messages and return them as plain ``{"role", "content"}`` dicts.

    Raises
    ------
    LLMConfigError
        A message lacks a role or content, or has an unknown role.
    """
    out = []
    for i, msg in enumerate(messages):
        role, content = msg.get("role"), msg.get("content")
        if role not in ("system", "user", "assistant") or not isinstance(content, str):
            raise LLMConfigError(
                f"Chat message {i} is malformed (role {role!r}).",
                "Each message needs a role of system/user/assistant and a text content.",
            )
        out.append({"role": role, "content": content})
    if not out:
        raise LLMConfigError("A chat request holds no messages.", "Give at least one user message.")
    return tuple(out)


def normalize_params(params: Mapping[str, Any]) -> Params:
    """Check sampling parameters and drop unset ones, so equal requests compare equal.

    Parameters
    ----------
    params
        Any of ``temperature`` (0-2), ``max_tokens`` (>= 1), ``seed`` (int), ``top_p`` (0-1],
        ``stop`` (a string or up to 4 strings). ``None`` values are dropped.

    Raises
    ------
    LLMConfigError
        An unknown key or an out-of-range value.

    Examples
    --------
    >>> normalize_params({"temperature": 0, "stop": "\\n\\n", "top_p": None})
    {'temperature': 0.0, 'stop': ['\\n\\n']}
    """
    unknown = set(params) - set(PARAM_KEYS)
    if unknown:
        raise LLMConfigError(
            f"Unknown LLM parameter(s): {', '.join(sorted(unknown))}.",
            f"Use only {', '.join(PARAM_KEYS)}.",
        )
    out: Params = {}
    for key in PARAM_KEYS:
        value = params.get(key)
        if value is None:
            continue
        try:
            if key == "temperature":
                value = float(value)
                ok = 0.0 <= value <= 2.0
            elif key == "top_p":
                value = float(value)
                ok = 0.0 < value <= 1.0
            elif key == "max_tokens":
                ok = not isinstance(value, bool) and float(value) == int(value) and int(value) >= 1
                value = int(value)
            elif key == "seed":
                ok = not isinstance(value, bool) and float(value) == int(value)
                value = int(value)
            else:  # stop
                value = [value] if isinstance(value, str) else [str(s) for s in value]
                ok = 0 < len(value) <= 4 and all(value)
            if isinstance(value, float) and not math.isfinite(value):
                ok = False
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise LLMConfigError(
                f"LLM parameter {key} has an invalid value {params.get(key)!r}.",
                "temperature 0-2, top_p in (0, 1], max_tokens >= 1, seed an integer, stop up to 4 strings.",
            )
        out[key] = value
    return out


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@runtime_checkable
class ChatBackend(Protocol):
    """What every LLM backend provides.

    Attributes
    ----------
    name
        The registry name (``"openai"``, ``"local"``), part of every cache key.
    model
        The model identifier sent to (or loaded by) the backend, part of every cache key.
    params
        Default sampling parameters, filled into each request that does not set them.
    """

    name: str
    model: str
    params: Params

    def chat(self, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any] | None = None) -> ChatResult:
        """One completion; raises an :class:`~engine.llm.errors.LLMError` on failure."""
        ...

    def chat_many(
        self,
        requests: Sequence[ChatRequest],
        *,
        progress: ProgressFn = ...,
        cancel: CancelToken | None = None,
        on_result: ResultCallback | None = None,
        lead_s: float = 0.0,
    ) -> list[Outcome]:
        """Run a batch; one :class:`ChatResult` or :class:`Failure` per request, in order.

        With ``lead_s > 0`` the first request goes out alone and the others wait until it is
        answered (or ``lead_s`` seconds pass), so a wrong key or address costs one request.

        Raises only :class:`~engine.errors.Cancelled` (after reporting every finished item
        through ``on_result``).
        """
        ...

    def close(self) -> None:
        """Release connections, threads or a loaded model."""
        ...
