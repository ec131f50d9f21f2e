"""Backend ``local``: the bundled GGUF model, run in-process by ``xllamacpp``.

This is the default backend: it needs no server, no key and no network. Models
(:data:`engine.llm.gguf.MODELS`): ``"qwen2.5-coder-1.5b"`` (default),
``"qwen2.5-coder-0.5b"`` and ``"smollm2-135m"`` (tiny; good only for exercising the
plumbing in tests).

Provenance: the two Qwen2.5-Coder part-package sets come from an **unknown publisher
with no licence field** (upstream Qwen2.5-Coder is Apache-2.0); they are pinned by
version and by the sha256 of the assembled file, see :mod:`engine.llm.gguf`.

The runtime is ``xllamacpp`` (llama.cpp's server as a library), imported lazily. The
model is loaded on the first call and freed by :meth:`LocalBackend.close`. Calls run one
at a time, each using every configured CPU thread, so ``concurrency`` is ignored here.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.llm.base import ChatRequest, ChatResult, Failure, Outcome, ResultCallback, Usage
from engine.llm.config import LLMConfig
from engine.llm.errors import (
    BadResponseError,
    LLMError,
    ModelFileError,
    RequestRejectedError,
    RuntimeMissingError,
)
from engine.llm.gguf import get_spec, model_path
from engine.llm.registry import register_backend
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress

DEFAULT_N_CTX = 4096


def default_threads() -> int:
    """CPU threads for inference: every core but one (for the GUI and the rest), 1 to 8.

    llama.cpp's speed collapses (10-30x slower, measured on 2 cores) when its threads
    outnumber the free cores, so leaving one core free is the safe default.
    """
    return max(1, min((os.cpu_count() or 2) - 1, 8))


def import_xllamacpp() -> Any:
    """The ``xllamacpp`` module, or a :class:`RuntimeMissingError` saying how to install it."""
    try:
        import xllamacpp
    except ImportError as exc:
        raise RuntimeMissingError(
            "The local LLM runtime 'xllamacpp' is not installed.",
            "Install it with: pip install xllamacpp==2026.10.11549",
        ) from exc
    return xllamacpp


def load_server(
    gguf: Path,
    *,
    n_ctx: int = DEFAULT_N_CTX,
    n_threads: int | None = None,
    alias: str | None = None,
    port: int | None = None,
    host: str = "127.0.0.1",
    api_key: str | None = None,
) -> Any:
    """Load ``gguf`` into an ``xllamacpp.Server`` (listening on ``host:port`` if ``port`` is given).

    Raises
    ------
    RuntimeMissingError, ModelFileError
    """
    xllamacpp = import_xllamacpp()
    p = xllamacpp.CommonParams()
    p.model.path = str(gguf)
    p.n_ctx = int(n_ctx)
    p.cpuparams.n_threads = int(n_threads or default_threads())
    p.cpuparams_batch.n_threads = int(n_threads or default_threads())
    p.cpuparams.poll = 0  # no busy-waiting: spinning threads collapse throughput when a core is busy
    p.cpuparams_batch.poll = 0
    p.verbosity = -1  # llama.cpp logs nothing but errors
    if alias:
        p.model_alias = {alias}
    if port is not None:
        p.port = int(port)
        p.hostnames = [host]
        if api_key:
            p.api_keys = [api_key]
    try:
        return xllamacpp.Server(p)
    except Exception as exc:
        raise ModelFileError(
            f"The model file {gguf.name} could not be loaded ({type(exc).__name__}: {exc}).",
            "Check free memory, and reinstall the model packages if the file is damaged.",
        ) from exc


@register_backend("local")
class LocalBackend:
    """Chat completions from a bundled model, in this process.

    Parameters
    ----------
    config
        ``model`` (a bundled model name) and ``params``; ``options`` may set ``n_ctx``
        (default 4096) and ``n_threads`` (default: :func:`default_threads`).

    Raises
    ------
    ModelNotFoundError
        ``config.model`` is not a bundled model.
    """

    name = "local"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.params = config.params
        self.spec = get_spec(config.model)
        self.model = self.spec.name
        self.n_ctx = int(config.options.get("n_ctx", DEFAULT_N_CTX))
        self.n_threads = int(config.options.get("n_threads", default_threads()))
        self._server: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        state = "loaded" if self._server is not None else "not loaded"
        return f"LocalBackend(model={self.model!r}, {state})"

    def load(self, *, progress: ProgressFn = no_progress) -> None:
        """Assemble (first time only), verify and load the model now rather than on the first call."""
        with self._lock:
            if self._server is None:
                path = model_path(self.model, progress=progress)
                self._server = load_server(path, n_ctx=self.n_ctx, n_threads=self.n_threads, alias=self.model)

    def chat(self, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any] | None = None) -> ChatResult:
        """One completion.

        Raises
        ------
        LLMError
        """
        self.load()
        return self._complete(ChatRequest(messages, params).with_defaults(self.params))

    def chat_many(
        self,
        requests: Sequence[ChatRequest],
        *,
        progress: ProgressFn = no_progress,
        cancel: CancelToken | None = None,
        on_result: ResultCallback | None = None,
        lead_s: float = 0.0,
    ) -> list[Outcome]:
        """Run ``requests`` one after another; a failed item becomes a :class:`Failure`.

        ``lead_s`` is accepted for the protocol; requests run one at a time anyway.

        Raises
        ------
        Cancelled
            Checked before each call (finished items were reported through ``on_result``).
        LLMError
            Only if the model itself cannot be loaded (that fails every item alike).
        """
        token = ensure_token(cancel)
        if not requests:
            return []
        self.load()
        out: list[Outcome] = []
        total = len(requests)
        for index, request in enumerate(requests):
            token.raise_if_cancelled()
            try:
                outcome: Outcome = self._complete(request.with_defaults(self.params))
            except LLMError as exc:
                outcome = Failure.from_error(exc)
            out.append(outcome)
            if on_result is not None:
                on_result(index, outcome)
            progress((index + 1) / total, f"{index + 1}/{total} LLM calls")
        return out

    def close(self) -> None:
        """Free the loaded model."""
        with self._lock:
            self._server = None

    # ------------------------------------------------------------------ internals
    def _complete(self, request: ChatRequest) -> ChatResult:
        body = {"messages": list(request.messages), **request.params}
        with self._lock:
            server = self._server
            if server is None:
                raise ModelFileError(f"The model {self.model} was closed.", "Create the backend again.")
            try:
                answer = server.handle_chat_completions(body)
            except (ValueError, RuntimeError) as exc:
                raise self._rejected(str(exc)) from None
        if isinstance(answer, dict) and "error" in answer:
            err = answer["error"]
            raise self._rejected(str(err.get("message", err) if isinstance(err, dict) else err))
        try:
            choice = answer["choices"][0]
            text = choice["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("no text")
            usage = answer.get("usage") or {}
            return ChatResult(
                text=text,
                usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
                model=self.model,
                finish_reason=str(choice.get("finish_reason") or "stop"),
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise BadResponseError(
                f"The local model returned an unusable answer ({type(exc).__name__}).",
                "Run the step again; if it recurs, report it.",
            ) from None

    def _rejected(self, detail: str) -> RequestRejectedError:
        hint = "Shorten the input or lower max_tokens."
        if "context" in detail.lower():
            hint = f"The text does not fit the model's context ({self.n_ctx} tokens): raise the n_ctx option or shorten the text."
        return RequestRejectedError(f"The local model rejected the request: {detail[:300]}", hint)
