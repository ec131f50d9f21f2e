"""LLM settings as plain data: a backend *name* plus parameters, never objects or keys."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any
from urllib.parse import urlsplit

from engine.llm.base import Params, normalize_params
from engine.llm.errors import LLMConfigError

CONFIG_VERSION = 1

#: Sampling defaults: deterministic, short answers.
DEFAULT_PARAMS: Params = {"temperature": 0.0, "max_tokens": 256, "seed": 0}


@dataclass(frozen=True)
class LLMConfig:
    """Which LLM to use and how to talk to it; serializable to JSON.

    Parameters
    ----------
    backend
        Registry name: ``"local"`` (the bundled model, in-process) or ``"openai"`` (any
        OpenAI-compatible server: OpenAI, vLLM, Ollama, llama.cpp server, LM Studio).
    model
        Model name: for ``local`` one of :data:`engine.llm.gguf.MODELS`; for ``openai`` the
        name the server knows.
    base_url
        Server address for ``openai`` (e.g. ``http://127.0.0.1:8080/v1``); ``None`` means
        OpenAI's own service. Must not contain credentials.
    api_key_env
        Name of the environment variable holding the API key (the key itself is never
        stored); ``None`` when the server needs no key.
    concurrency
        Requests in flight at once (``openai``; the ``local`` backend runs as many as it has
        slots, option ``n_parallel``).
    timeout_s
        Seconds to wait for one answer.
    max_retries
        Retries after a 408/409/429, a 5xx, a timeout, a dropped connection or a garbled
        answer (the ``openai`` client's own retries; see :mod:`engine.llm.openai_backend`).
    params
        Default sampling parameters (see :func:`engine.llm.base.normalize_params`).
    options
        Backend-specific settings (``local``: ``n_ctx`` per slot, ``n_threads``, ``n_parallel`` slots,
        ``n_gpu_layers``; see :class:`engine.llm.local_backend.LocalBackend`).
    """

    backend: str = "local"
    model: str = "qwen2.5-coder-1.5b"
    base_url: str | None = None
    api_key_env: str | None = None
    concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 4
    params: Params = field(default_factory=lambda: dict(DEFAULT_PARAMS))
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", normalize_params(self.params))
        object.__setattr__(self, "options", dict(self.options))
        if not self.backend or not isinstance(self.backend, str):
            raise LLMConfigError("No LLM backend is named.", "Choose 'local' or 'openai'.")
        if not self.model:
            raise LLMConfigError("No model is named.", "Give the model name the backend knows.")
        if not 1 <= int(self.concurrency) <= 512:
            raise LLMConfigError(f"Concurrency {self.concurrency} is out of range.", "Use 1 to 512.")
        if not float(self.timeout_s) > 0:
            raise LLMConfigError(f"Timeout {self.timeout_s} s is not positive.", "Use a number of seconds > 0.")
        if not 0 <= int(self.max_retries) <= 20:
            raise LLMConfigError(f"max_retries {self.max_retries} is out of range.", "Use 0 to 20.")
        if self.base_url is not None:
            parts = urlsplit(self.base_url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise LLMConfigError(
                    "The LLM server address is not an http(s) URL.",
                    "Give an address like http://127.0.0.1:8080/v1.",
                )
            if parts.username or parts.password:
                raise LLMConfigError(
                    "The LLM server address contains a user name or password.",
                    "Remove the credentials from the address and put the key in an environment "
                    "variable named in the API-key setting; addresses are saved with the project.",
                )
        check_local_options(self.options)
        if self.api_key_env is not None and not str(self.api_key_env).replace("_", "").isalnum():
            raise LLMConfigError(
                "The API-key setting must be the NAME of an environment variable, not the key.",
                "Enter a variable name such as OPENAI_API_KEY and set the key in that variable.",
            )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with a ``version`` (holds no secret)."""
        return {"version": CONFIG_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LLMConfig:
        """Rebuild a config written by :meth:`to_dict`.

        Raises
        ------
        LLMConfigError
            Unknown keys or a newer version.
        """
        data = dict(data)
        version = int(data.pop("version", CONFIG_VERSION))
        if version > CONFIG_VERSION:
            raise LLMConfigError(
                f"These LLM settings were saved by a newer version (format {version}).",
                "Update Counterbias Studio, or choose the LLM settings again.",
            )
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise LLMConfigError(
                f"Unknown LLM setting(s): {', '.join(sorted(unknown))}.", f"Use only {', '.join(sorted(known))}."
            )
        return cls(**data)

    def with_params(self, **params: Any) -> LLMConfig:
        """A copy whose default sampling parameters are updated with ``params``."""
        return replace(self, params={**self.params, **params})


#: Options of the local backend that must be whole numbers of at least 1, and what each means.
POSITIVE_OPTIONS = {"n_parallel": ("slots", "--slots"), "n_threads": ("CPU threads", "--threads"),
                    "n_ctx": ("context tokens per slot", "--ctx")}


def check_local_options(options: Mapping[str, Any]) -> None:
    """Check the local backend's ``n_parallel``, ``n_threads`` and ``n_ctx`` options (unset or ``None`` is fine).

    Raises
    ------
    LLMConfigError
        One is not a whole number of at least 1 (``--slots 0``, ``--threads -1``).

    Examples
    --------
    >>> check_local_options({"n_parallel": 2, "n_threads": None})
    >>> try:
    ...     check_local_options({"n_parallel": 0})
    ... except LLMConfigError as exc:
    ...     print(exc.code, exc.message)
    CB710 0 slots (n_parallel) cannot run anything.
    """
    for key, (what, flag) in POSITIVE_OPTIONS.items():
        value = options.get(key)
        if value is None:
            continue
        whole = _is_number(value) and float(value) == int(value)
        if whole and int(value) >= 1:
            continue
        raise LLMConfigError(
            f"{value!r} {what} ({key}) cannot run anything." if whole
            else f"The {what} setting ({key}) is {value!r}, not a whole number.",
            f"Give {flag} a whole number of at least 1, or leave it out for the automatic choice.",
        )


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
