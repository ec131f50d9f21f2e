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
    """Token counts of one call or a sum of calls, and where the server's time went when it says so.

    Parameters
    ----------
    prompt_tokens, completion_tokens
        Tokens read and written, as the server counts them (``prompt_tokens`` includes the cached ones).
    cached_tokens
        Prompt tokens the server took from its prompt cache instead of reading them again (llama.cpp's
        ``timings.cache_n``; OpenAI's and vLLM's ``usage.prompt_tokens_details.cached_tokens``); 0 when it
        does not say.
    prompt_ms, decode_ms
        Milliseconds the server spent reading the uncached prompt and writing the answer (llama.cpp's
        ``timings.prompt_ms`` and ``predicted_ms``, in-process or over HTTP); 0 when it does not say.

    Examples
    --------
    >>> u = Usage(500, 20, cached_tokens=400, prompt_ms=1500.0, decode_ms=1300.0) + Usage(100, 2)
    >>> u.to_dict()["cached_tokens"], round(u.cached_share, 3)
    (400, 0.667)
    >>> Usage(3, 1).to_dict()  # nothing said of the cache or the time: the plain counts only
    {'prompt_tokens': 3, 'completion_tokens': 1}
    >>> Usage.from_dict(u.to_dict()) == u
    True
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    prompt_ms: float = 0.0
    decode_ms: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cached_share(self) -> float:
        """Share of the prompt tokens that came from the server's prompt cache (0 without prompt tokens)."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def time_split(self) -> str:
        """Where the server's time went, in words; empty when the server did not say.

        The seconds are the server's own, summed over requests: requests decoded together in parallel slots
        overlap, so their sum may exceed the wall time.

        >>> Usage(1000, 100, cached_tokens=880, prompt_ms=1800.0, decode_ms=6200.0).time_split()
        '8.0 s of LLM time: 22% reading prompts (88% of the prompt tokens from the cache), 78% writing answers (16.1 tokens/s)'
        """
        spent = self.prompt_ms + self.decode_ms
        if spent <= 0:
            return ""
        cached = f" ({self.cached_share:.0%} of the prompt tokens from the cache)" if self.cached_tokens else ""
        rate = f" ({self.completion_tokens / (self.decode_ms / 1000):.1f} tokens/s)" if self.decode_ms > 0 else ""
        return (f"{spent / 1000:.1f} s of LLM time: {self.prompt_ms / spent:.0%} reading prompts{cached}, "
                f"{self.decode_ms / spent:.0%} writing answers{rate}")

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens,
                     self.cached_tokens + other.cached_tokens, self.prompt_ms + other.prompt_ms,
                     self.decode_ms + other.decode_ms)

    def to_dict(self) -> dict[str, Any]:
        """The counts as a JSON-ready dict; the cache and time fields only when the server gave them."""
        out: dict[str, Any] = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}
        if self.cached_tokens:
            out["cached_tokens"] = self.cached_tokens
        if self.prompt_ms or self.decode_ms:
            out["prompt_ms"] = round(self.prompt_ms, 1)
            out["decode_ms"] = round(self.decode_ms, 1)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Usage:
        data = data or {}
        return cls(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0),
                   int(data.get("cached_tokens") or 0), float(data.get("prompt_ms") or 0.0),
                   float(data.get("decode_ms") or 0.0))


def timing_fields(timings: Any, cached_tokens: Any = None) -> dict[str, Any]:
    """The :class:`Usage` cache and time fields from a llama.cpp ``timings`` object (``cache_n``,
    ``prompt_ms``, ``predicted_ms``) and an OpenAI-style ``cached_tokens`` count; whatever is missing, malformed
    or negative is left out (a server's answer is untrusted data).

    >>> timing_fields({"cache_n": 420, "prompt_ms": 310.5, "predicted_ms": 900.25, "prompt_n": 12})
    {'cached_tokens': 420, 'prompt_ms': 310.5, 'decode_ms': 900.25}
    >>> timing_fields(None, cached_tokens=64), timing_fields({"prompt_ms": "soon", "cache_n": -1})
    ({'cached_tokens': 64}, {})
    """
    t = timings if isinstance(timings, Mapping) else {}
    out: dict[str, Any] = {}
    for name, value, kind in (("cached_tokens", cached_tokens if cached_tokens is not None else t.get("cache_n"), int),
                              ("prompt_ms", t.get("prompt_ms"), float), ("decode_ms", t.get("predicted_ms"), float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            continue
        out[name] = kind(value)
    return out


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

    def load(self, *, progress: ProgressFn = ...) -> None:
        """Make the backend ready before the first request (the local model: assembled the first time, then loaded),
        reporting with ``progress``; a server backend has nothing to do."""
        ...

    def close(self) -> None:
        """Release connections, threads or a loaded model."""
        ...
